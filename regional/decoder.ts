// The decoder's state, built once when it starts: the caches of opened snapshots (sources and
// mosaics, and mosaics' members), the work budget, the limiters, the drain, the signed requests'
// ids taken, the cancellable requests, the metrics and the log. Every handler gets it as its
// context; no request builds any of it.

import { Registry } from "prom-client";
import { CogCache } from "./cog/cog-cache";
import { DecodedBlockCache } from "./cog/block-cache";
import { Cog, type CogOptions } from "./cog/cog";
import { Mosaic, type MosaicAssets } from "./mosaic/mosaic";
import { DEFAULT_MOSAIC_MAX_ASSETS, type MosaicTileOptions } from "./mosaic/mosaic-tile";
import { configureSharp } from "./render/render";
import { AcceptedIds } from "./http/accepted-ids";
import { Cancellations } from "./runtime/cancellations";
import { Drain } from "./runtime/drain";
import { jsonLog, type Log } from "./runtime/log";
import { registry } from "./runtime/metrics";
import { DEFAULT_MAX_FILE_TRANSFERS, DEFAULT_MAX_IN_FLIGHT, RequestLimiter } from "./runtime/request-limiter";
import { serverMetrics, type ServerMetrics } from "./runtime/server-metrics";
import { collectGarbage, Settle } from "./runtime/settle";
import { recycleRenderPool } from "./render/render-pool";
import { WorkBudget } from "./runtime/work-budget";
import { readAssetConfig } from "./source/access-policy";
import { assetCatalog } from "./source/asset-catalog";
import { AssetSources } from "./source/assets";
import type { Source, SourceCatalog } from "./source/source";

export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

export interface DecoderOptions {
  catalog: SourceCatalog;
  /** Shared HMAC secret of the edge and its decoders. */
  secret: string;
  /** How many decodes this process runs well at once; reported to the admission DO. */
  capacity: number;
  /** How many opened snapshots to keep (default 64). */
  cogCacheSize?: number;
  /** Work allowance shared by this server's requests (default: WorkBudget.global(), 512 MiB). */
  budget?: WorkBudget;
  /** Public requests admitted at once (default 64); inject one to share it between servers. */
  limiter?: RequestLimiter;
  /** /file transfers streaming at once, beside the limiter's requests (default 16). */
  maxFileTransfers?: number;
  /** Default request deadline in ms (30 s), overridable per request with TIMEOUT_HEADER. */
  requestTimeoutMs?: number;
  /** Decoded-block cache (default: 256 MiB of its own). */
  blockCache?: DecodedBlockCache;
  /** Header blocks kept per snapshot and tile-table prefetch (0 = none; default 8). */
  prefetchRing?: number;
  /** Bound on work shared by many requests: a source open, header and tile-table reads (default 10 s). */
  sharedWorkTimeoutMs?: number;
  /** Where mosaics' assets come from, under the access policy (default: any store key of `catalog`, no web hosts). */
  assets?: AssetSources;
  /** Most assets a mosaic tile may paint (default 32); more is 413. */
  mosaicMaxAssets?: number;
  /** The graceful drain, started on SIGTERM (default: one that never starts). */
  drain?: Drain;
  /** Receives one structured record per line (default: JSON on stdout, errors on stderr). */
  log?: Log;
  /** The bearer token GET /metrics requires (default: none, /metrics is open). */
  metricsToken?: string;
}

/** The limiters a route may run under: public requests, and /file transfers beside them. */
export type Limiter = "requests" | "transfers";

export interface DecoderContext {
  readonly secret: string;
  /** The signed requests' ids taken while their signatures are current: each is answered once. */
  readonly acceptedIds: AcceptedIds;
  readonly capacity: number;
  readonly catalog: SourceCatalog;
  /** Opened snapshots of sources and mosaics, by id and version: each header is parsed once. */
  readonly snapshots: CogCache<Cog | Mosaic>;
  /** What a mosaic tile reads its members through, and how many it may paint. */
  readonly mosaicTiles: MosaicTileOptions;
  readonly budget: WorkBudget;
  readonly limiters: Readonly<Record<Limiter, RequestLimiter>>;
  /** The deadline of a request that brings none from the admission DO. */
  readonly requestTimeoutMs: number;
  readonly cancellations: Cancellations;
  readonly drain: Drain;
  readonly metrics: ServerMetrics;
  /** Returns what large work left once the decoder is idle (runtime/settle.ts). */
  readonly settle: Settle;
  /** Everything GET /metrics reports: the process's metrics, this server's and the drain's. */
  readonly metricsPage: Registry;
  /** What GET /metrics requires as `Authorization: Bearer …`; undefined: anyone may read it. */
  readonly metricsToken: string | undefined;
  readonly log: Log;
  /** Closes every opened snapshot and the mosaics' asset connections (the server's close). */
  close(): void;
}

export function createDecoderContext(options: DecoderOptions): DecoderContext {
  configureSharp();
  const budget = options.budget ?? WorkBudget.global();
  const limiters = {
    requests: options.limiter ?? new RequestLimiter(DEFAULT_MAX_IN_FLIGHT),
    transfers: new RequestLimiter(options.maxFileTransfers ?? DEFAULT_MAX_FILE_TRANSFERS, "file transfers"),
  };
  const blockCache = options.blockCache ?? new DecodedBlockCache();
  const drain = options.drain ?? new Drain();
  const requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  const log = options.log ?? jsonLog;
  const opening: CogOptions = {
    cache: blockCache,
    budget,
    prefetchRing: options.prefetchRing,
    sharedWorkTimeoutMs: options.sharedWorkTimeoutMs,
    log,
  };
  const { assets, mosaicTiles, mosaicAssets } = mosaicMembers(options, opening);
  const snapshots = new CogCache<Cog | Mosaic>(
    options.catalog,
    (source) => {
      warnOfUnreadableDescription(source, log);
      return source.document ? Mosaic.open(source, mosaicAssets) : Cog.open(source, opening);
    },
    options.cogCacheSize,
    opening,
  );
  const metrics = serverMetrics(budget, limiters.requests, limiters.transfers, blockCache, () => snapshots.size);
  return {
    secret: options.secret,
    acceptedIds: new AcceptedIds(),
    capacity: options.capacity,
    catalog: options.catalog,
    snapshots,
    mosaicTiles,
    budget,
    limiters,
    requestTimeoutMs,
    cancellations: new Cancellations(),
    drain,
    metrics,
    settle: new Settle([recycleRenderPool, collectGarbage]),
    metricsPage: Registry.merge([registry, metrics.registry, drain.registry]),
    metricsToken: options.metricsToken,
    log,
    close() {
      snapshots.closeAll();
      mosaicTiles.members.closeAll();
      void assets.close();
    },
  };
}

/**
 * A description the decoder cannot read is served without, not withheld: the publisher learns why
 * here, once per snapshot opened (a changed entry opens it again), not on every request.
 */
function warnOfUnreadableDescription({ unreadableDescription, label, version }: Source, log: Log): void {
  if (unreadableDescription === undefined) return;
  log({ level: "warn", msg: "description unreadable", source: label, version, reason: unreadableDescription });
}

/**
 * A mosaic's members: opened through the access policy, with zero prefetch (a tile reads a small
 * window of each of many files), each kept at one snapshot while cached. The documents a STAC
 * catalog links to are opened as members are: one missing is the mosaic's 502, not a 404.
 */
function mosaicMembers(options: DecoderOptions, opening: CogOptions) {
  const assets = options.assets ?? new AssetSources(readAssetConfig({}), (key, signal) => options.catalog.openKey(key, signal));
  const members = assetCatalog(assets);
  const mosaicTiles: MosaicTileOptions = {
    members: new CogCache<Cog>(members, (source) => Cog.open(source, { ...opening, prefetchRing: 0 }), options.cogCacheSize, {
      ...opening,
      rememberVersions: true,
    }),
    maxAssets: options.mosaicMaxAssets ?? DEFAULT_MOSAIC_MAX_ASSETS,
  };
  const mosaicAssets: MosaicAssets = {
    open: (asset, signal) => members.open(asset, undefined, signal),
    describe: (asset, signal) =>
      mosaicTiles.members.use(asset, undefined, signal, async (cog) => {
        const { levels, bands, nodataType, georeference } = cog.info(asset);
        return georeference && { levels, bands, nodataType, georeference: { crs: georeference.crs, bbox: georeference.bbox, tiling: georeference.tiling } };
      }),
  };
  return { assets, mosaicTiles, mosaicAssets };
}
