// Opened COGs, keyed by `${id}@${version}`, so each snapshot's headers are parsed once.
// A small LRU of leases: an evicted COG is closed only when its last in-flight request is done,
// and a failed open is forgotten, never cached.

import type { Source, SourceCatalog } from "./source/source";
import { Cog, type CogOptions } from "./cog/cog";
import { untilAborted } from "../shared/abort";
import { DEFAULT_SHARED_WORK_TIMEOUT_MS, withSharedDeadline } from "./abort";

interface Entry {
  key: string;
  cog: Promise<Cog>;
  users: number;
  evicted: boolean;
  closed: boolean;
}

export const cogKey = (id: string, version: string) => `${id}@${version}`;

export class CogCache {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly catalog: SourceCatalog,
    private readonly maxEntries = 64,
    private readonly cogOptions: CogOptions = {},
  ) {}

  get size(): number {
    return this.entries.size;
  }

  /**
   * Runs `fn` with the COG of `id` pinned to `version` (or to its current version when
   * undefined), opening and caching it if needed. The COG stays open until `fn` settles.
   */
  async use<T>(
    id: string,
    version: string | undefined,
    signal: AbortSignal | undefined,
    fn: (cog: Cog) => Promise<T>,
  ): Promise<T> {
    const entry = await this.acquire(id, version, signal);
    try {
      // The open is shared with other requests, so it runs without our signal; we only stop waiting.
      const cog = await untilAborted(entry.cog, signal);
      return await fn(cog);
    } finally {
      this.release(entry);
    }
  }

  /**
   * Drops every snapshot of `id` (a publisher's invalidation), so the next request opens the
   * source as it is now; requests already holding one finish on it. Returns how many.
   */
  invalidate(id: string): number {
    const mine = [...this.entries.values()].filter((e) => e.key.startsWith(cogKey(id, "")));
    for (const entry of mine) this.retire(entry);
    return mine.length;
  }

  /** Drops a snapshot (e.g. after a store failure) so the next request opens it afresh. */
  evict(id: string, version: string): void {
    const entry = this.entries.get(cogKey(id, version));
    if (entry) this.retire(entry);
  }

  private async acquire(id: string, version: string | undefined, signal?: AbortSignal): Promise<Entry> {
    let source: Source | undefined;
    if (version === undefined) {
      // Only the catalog knows the current version: open first, then look for a cached copy.
      source = await this.catalog.open(id, undefined, signal);
      version = source.version;
    }
    const key = cogKey(id, version);
    const cached = this.entries.get(key);
    if (cached) {
      if (source) await source.close();
      this.entries.delete(key);
      this.entries.set(key, cached);
      cached.users++;
      return cached;
    }
    const opened = source;
    const entry: Entry = {
      key,
      cog: this.open(id, version, opened),
      users: 1,
      evicted: false,
      closed: false,
    };
    this.entries.set(key, entry);
    entry.cog.catch(() => this.retire(entry));
    while (this.entries.size > this.maxEntries) {
      this.retire(this.entries.values().next().value as Entry);
    }
    return entry;
  }

  private async open(id: string, version: string, source?: Source): Promise<Cog> {
    const timeout = this.cogOptions.sharedWorkTimeoutMs ?? DEFAULT_SHARED_WORK_TIMEOUT_MS;
    const src =
      source ?? (await withSharedDeadline(timeout, `opening ${id}`, (signal) => this.catalog.open(id, version, signal)));
    try {
      return await Cog.open(src, this.cogOptions);
    } catch (e) {
      await src.close().catch(() => {});
      throw e;
    }
  }

  private release(entry: Entry): void {
    entry.users--;
    this.closeIfIdle(entry);
  }

  private retire(entry: Entry): void {
    if (this.entries.get(entry.key) === entry) this.entries.delete(entry.key);
    entry.evicted = true;
    this.closeIfIdle(entry);
  }

  private closeIfIdle(entry: Entry): void {
    if (!entry.evicted || entry.users > 0 || entry.closed) return;
    entry.closed = true;
    entry.cog.then(
      (cog) => cog.close(),
      () => {},
    ).catch(() => {});
  }

  /** Closes every cached COG (at shutdown). */
  closeAll(): void {
    for (const e of [...this.entries.values()]) this.retire(e);
  }
}
