// The one entry point from a mosaic's asset strings to Sources: each asset is checked against
// the operator's access policy, then opened as a store key (by the catalog's own opener) or as
// an HTTP(S) URL (by the reader with its own connection pool), pinned to its current snapshot.

import { AccessPolicy, assetLabel, isHttpAsset, type AssetConfig } from "./access-policy";
import { HttpReader } from "./http";
import type { Source } from "./source";

export { assetLabel } from "./access-policy";

/** Longest wait for a TCP connection to an asset's host. */
const CONNECT_TIMEOUT_MS = 3000;

export class AssetSources {
  private readonly policy: AccessPolicy;
  private readonly http: HttpReader;

  constructor(
    config: AssetConfig,
    private readonly openStoreKey: (key: string, signal?: AbortSignal) => Promise<Source>,
  ) {
    this.policy = new AccessPolicy(config);
    this.http = new HttpReader({
      connections: config.connections,
      connectTimeoutMs: Math.min(CONNECT_TIMEOUT_MS, config.timeoutMs),
      headersTimeoutMs: config.timeoutMs,
      bodyTimeoutMs: config.timeoutMs,
      lookup: this.policy.lookup,
    });
  }

  /** The asset as a Source pinned to its current snapshot, or a 502 refusal; `signal` aborts it. */
  async open(asset: string, signal?: AbortSignal): Promise<Source> {
    signal?.throwIfAborted();
    if (!isHttpAsset(asset)) {
      this.policy.checkKey(asset);
      return this.openStoreKey(asset, signal);
    }
    const url = this.policy.checkUrl(asset);
    return this.http.open(url, assetLabel(asset), { signal });
  }

  /** Closes the HTTP connections. */
  async close(): Promise<void> {
    await this.http.close();
  }
}
