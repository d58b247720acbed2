// Regional decoder entry point. `npm run build:decoder` bundles it into dist/decoder/main.js,
// which `npm run decoder`, the image and the service units run on the pinned Node;
// `npm run decoder:source` runs this file under tsx. Configuration is the environment:
//
//   TESSERA_DECODER_HOST      listen address                        (127.0.0.1)
//   TESSERA_DECODER_PORT      listen port, 0 = ephemeral            (9100)
//   TESSERA_DECODER_SECRET    HMAC secret shared with the edge      (required)
//   TESSERA_DECODER_CAPACITY  decodes run well at once              (os.availableParallelism())
//   TESSERA_SOURCE            local | s3                            (local)
//   TESSERA_DATA_DIR          local: directory of <id>.tif (or <id>.mosaic.json, <id>.stac.json) (<repo>/samples)
//   TESSERA_S3_ENDPOINT       s3: endpoint URL (RGW, MinIO; unset = AWS)
//   TESSERA_S3_BUCKET         s3: bucket                            (required for s3)
//   TESSERA_S3_PREFIX         s3: key prefix                        ("")
//   TESSERA_S3_REGION         s3: region                            (us-east-1)
//   TESSERA_S3_FIRST_READ_KB  s3: KiB of the GET that opens an object (64)
//   AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY   s3 credentials (the SDK's default chain)
//   TESSERA_MAX_IN_FLIGHT_REQUESTS  request limiter: public requests at once   (64)
//   TESSERA_MAX_FILE_TRANSFERS      /file transfers at once, beside those       (16)
//   TESSERA_REQUEST_TIMEOUT_MS      request deadline, opening and I/O included  (30000)
//   TESSERA_SHARED_WORK_TIMEOUT_MS  bound on a shared open or header read, and on each S3 call (10000)
//   TESSERA_PREFETCH_RING           header blocks per snapshot; 0 = no prefetch (8)
//   TESSERA_WORK_BUDGET_MB          work budget (active work, not RSS)         (512)
//   TESSERA_BLOCK_CACHE_MB          decoded-block cache cap                    (256)
//   TESSERA_MOSAIC_MAX_ASSETS       most assets a mosaic tile may paint; more is 413 (32)
//   TESSERA_RENDER_THREADS          large renders at once, on worker threads off the event loop (capacity)
//   TESSERA_DRAIN_TIMEOUT_MS        on SIGTERM, how long held requests may finish before cancelled (30000)
//   TESSERA_METRICS_TOKEN           GET /metrics answers only `Authorization: Bearer <it>`; unset: open to anyone
//   TESSERA_TILE_MATRIX_SETS        the operator's own OGC TMS 2.0 JSON files, comma-separated (none; maps/operator-sets.ts)
//   UV_THREADPOOL_SIZE              libuv pool: decodes/encodes at once; = the decoder's cores
//   TESSERA_ASSET_PREFIXES          mosaics: store key prefixes assets may name, each ending "/"
//                                   (s3: TESSERA_S3_PREFIX; local: the whole data directory)
//   TESSERA_ASSET_HOSTS             mosaics: web hosts assets may name: host, host:port, *.suffix (none)
//   TESSERA_ASSET_ALLOW_ADDRESSES   mosaics: CIDRs reachable although not public, e.g. 10.0.0.0/8 (none)
//   TESSERA_ASSET_CONNECTIONS       mosaics: HTTP connections at once, all hosts (16; 8 a host)
//   TESSERA_ASSET_TIMEOUT_MS        mosaics: wait for an HTTP asset's headers, and within its body (10000)
//   TESSERA_EDGE_URL and the other registration variables: see runtime/heartbeat.ts
//
// On listen it prints one JSON line with "listening":"http://host:port" (the start script
// parses it). SIGTERM/SIGINT drain (runtime/drain.ts), then exit 0. A bad setting exits 1 naming it.

import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { ConfigError } from "../shared/config";
import { addTileMatrixSets } from "../shared/maps/tile-matrix-sets";
import { metricsOpenToOthers, readConfig, type DecoderConfig } from "./config";
import { DecodedBlockCache } from "./cog/block-cache";
import { Drain, LINGER_MS } from "./runtime/drain";
import { detectMemoryLimit, readHeartbeatConfig, startHeartbeat, type HeartbeatConfig, type Heartbeats } from "./runtime/heartbeat";
import { configureRenderPool } from "./render/render-pool";
import { missingAllocatorSettings, missingNodeFlags } from "./runtime/allocator";
import { RequestLimiter } from "./runtime/request-limiter";
import type { DecoderOptions } from "./decoder";
import { createDecoderServer } from "./http/server";
import { jsonLog } from "./runtime/log";
import { decoderLabel } from "../shared/protocol";
import { AssetSources } from "./source/assets";
import { WorkBudget } from "./runtime/work-budget";

/** A decoder started without the allocator settings runs, but keeps what large renders grew. */
function warnOfAllocator(): void {
  const missing = missingAllocatorSettings(process.env);
  if (missing.length > 0) {
    jsonLog({ level: "error", msg: "allocator settings missing: memory that large renders free stays resident; start the decoder with them", settings: missing.join(" ") });
  }
  const flags = missingNodeFlags(process.execArgv, process.env.NODE_OPTIONS);
  if (flags.length > 0) {
    jsonLog({ level: "error", msg: "node flags missing: the heap keeps what map tiles grew; start the decoder's node with them", flags: flags.join(" ") });
  }
}

/** An open /metrics where other machines reach the decoder: named at start, not found out later. */
function warnOfOpenMetrics(config: DecoderConfig): void {
  if (metricsOpenToOthers(config)) {
    jsonLog({ level: "error", msg: "GET /metrics is open to anyone who reaches the decoder's port; set TESSERA_METRICS_TOKEN", host: config.host });
  }
}

/** How long past its deadline and linger a drain may run before the process exits regardless. */
const FORCED_EXIT_GRACE_MS = 5000;

async function main(): Promise<void> {
  const { config, heartbeat } = configOrExit();
  addTileMatrixSets(config.tileMatrixSets);
  warnOfAllocator();
  warnOfOpenMetrics(config);
  configureRenderPool(config.renderThreads);
  const drain = new Drain();
  const server = createDecoderServer(decoderOptions(config, drain));
  server.on("error", (err) => {
    jsonLog({ level: "error", msg: "server error", error: err.message });
    process.exit(1);
  });
  let beats: Heartbeats | undefined;
  server.listen(config.port, config.host, async () => {
    const listening = listeningUrl(server.address() as AddressInfo);
    if (heartbeat.edgeUrl) beats = await startBeating(config, heartbeat, heartbeat.edgeUrl, listening);
    // The edge's /metrics names a decoder by this label, never by its address.
    const metricsLabel = await decoderLabel(config.secret, heartbeat.publicUrl ?? listening);
    jsonLog({ level: "info", msg: "decoder listening", listening, metricsLabel, capacity: config.capacity, source: config.catalog.description });
  });
  const shutdown = (signal: string) => void drainAndExit(server, drain, config.drainTimeoutMs, signal, () => beats?.leave());
  process.once("SIGTERM", () => shutdown("SIGTERM"));
  process.once("SIGINT", () => shutdown("SIGINT"));
  // Started by the local stack: its stdin is a pipe from the parent, which closes when the
  // parent dies by any means (even SIGKILL), so a decoder is never left behind.
  if (process.env.TESSERA_DECODER_EXIT_WITH_PARENT === "1") {
    process.stdin.on("close", () => shutdown("parent exited")).resume();
  }
}

/** Every variable checked before anything starts: a bad one exits 1, naming it. */
function configOrExit(): { config: DecoderConfig; heartbeat: HeartbeatConfig } {
  try {
    return { config: readConfig(), heartbeat: readHeartbeatConfig() };
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    process.stderr.write(`tessera decoder: ${e.message}\n`);
    process.exit(1);
  }
}

function decoderOptions(config: DecoderConfig, drain: Drain): DecoderOptions {
  return {
    drain,
    catalog: config.catalog,
    secret: config.secret,
    capacity: config.capacity,
    limiter: new RequestLimiter(config.maxInFlight),
    maxFileTransfers: config.maxFileTransfers,
    requestTimeoutMs: config.requestTimeoutMs,
    sharedWorkTimeoutMs: config.sharedWorkTimeoutMs,
    prefetchRing: config.prefetchRing,
    budget: new WorkBudget(config.workBudgetBytes),
    blockCache: new DecodedBlockCache(config.blockCacheBytes),
    mosaicMaxAssets: config.mosaicMaxAssets,
    assets: new AssetSources(config.assets, (key, signal) => config.catalog.openKey(key, signal)),
    metricsToken: config.metricsToken,
  };
}

function listeningUrl(addr: AddressInfo): string {
  const host = addr.family === "IPv6" ? `[${addr.address}]` : addr.address;
  return `http://${host}:${addr.port}`;
}

/** Registers with the edge: heartbeats from now on, naming this decoder's URL, capacity, memory and region. */
async function startBeating(config: DecoderConfig, heartbeat: HeartbeatConfig, edgeUrl: string, listening: string): Promise<Heartbeats> {
  return startHeartbeat({
    edgeUrl,
    secret: config.secret,
    report: {
      url: heartbeat.publicUrl ?? listening,
      capacity: config.capacity,
      memoryBytes: heartbeat.memoryLimit || (await detectMemoryLimit()),
      region: heartbeat.region,
    },
    intervalMs: heartbeat.intervalMs,
    log: jsonLog,
  });
}

/** The drain (runtime/drain.ts), then exit 0; once only, whatever asks for it again. */
async function drainAndExit(server: Server, drain: Drain, timeoutMs: number, signal: string, leave: () => Promise<void> | undefined): Promise<void> {
  if (drain.draining) return;
  jsonLog({ level: "info", msg: "draining", signal, timeoutMs });
  // Work that will not stop when cancelled (a render inside libvips) cannot keep the process.
  setTimeout(() => {
    jsonLog({ level: "error", msg: "drain overran; exiting", signal });
    process.exit(0);
  }, timeoutMs + LINGER_MS + FORCED_EXIT_GRACE_MS).unref();
  const drained = await drain.drain(timeoutMs, leave() ?? Promise.resolve());
  jsonLog({ level: "info", msg: "drained; exiting", ...drained });
  // Nothing is held any more: a connection still open carries nothing or a refusal.
  server.close(() => process.exit(0));
  server.closeAllConnections();
}

await main();
