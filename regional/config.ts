// The decoder's configuration, read from the environment (variables documented in main.ts).
// Every bad value is a ConfigError naming its variable.

import { statSync } from "node:fs";
import { isIP } from "node:net";
import { availableParallelism } from "node:os";
import { badConfig, intVar } from "../shared/config";
import { MAX_DEADLINE_MS } from "../shared/protocol";
import { DEFAULT_SHARED_WORK_TIMEOUT_MS } from "./runtime/deadlines";
import { SAMPLES_DIR } from "./decoder-files";
import { readAssetConfig, type AssetConfig } from "./source/access-policy";
import { DEFAULT_BLOCK_CACHE_BYTES } from "./cog/block-cache";
import { DEFAULT_DRAIN_TIMEOUT_MS } from "./runtime/drain";
import { DEFAULT_MOSAIC_MAX_ASSETS } from "./mosaic/mosaic-tile";
import { DEFAULT_MAX_FILE_TRANSFERS, DEFAULT_MAX_IN_FLIGHT } from "./runtime/request-limiter";
import { DEFAULT_REQUEST_TIMEOUT_MS } from "./decoder";
import { LocalCatalog } from "./source/local";
import { DEFAULT_WORK_BUDGET_BYTES } from "./runtime/work-budget";
import { DEFAULT_FIRST_READ_BYTES, S3SourceCatalog } from "./source/s3";
import { readS3Location, s3ClientFor } from "./source/s3-location";
import type { SourceCatalog } from "./source/source";
import type { PlacedDocument } from "../shared/maps/tile-matrix-sets";
import { readOperatorSets } from "./maps/operator-sets";

export interface DecoderConfig {
  host: string;
  port: number;
  secret: string;
  capacity: number;
  catalog: SourceCatalog;
  /** What mosaics may read: store prefixes, web hosts, allowed address ranges, the HTTP pool. */
  assets: AssetConfig;
  maxInFlight: number;
  maxFileTransfers: number;
  requestTimeoutMs: number;
  sharedWorkTimeoutMs: number;
  prefetchRing: number;
  workBudgetBytes: number;
  blockCacheBytes: number;
  mosaicMaxAssets: number;
  /** Large renders run at once on the render pool's threads (render/render-pool.ts). */
  renderThreads: number;
  /** On SIGTERM, how long held requests may run on before they are cancelled (runtime/drain.ts). */
  drainTimeoutMs: number;
  /** The bearer token GET /metrics requires; undefined: /metrics is open. */
  metricsToken: string | undefined;
  /** The operator's tile matrix set documents (maps/operator-sets.ts), checked; main.ts adds them. */
  tileMatrixSets: PlacedDocument[];
}

const KIB = 1024;
const MIB = 1024 * KIB;
/** Most threads of any kind: libuv's own cap on its pool, and far beyond any machine's cores. */
const MAX_THREADS = 1024;

/** Reads and validates the decoder's environment; throws ConfigError naming the bad variable. */
export function readConfig(env: NodeJS.ProcessEnv = process.env): DecoderConfig {
  const secret = env.TESSERA_DECODER_SECRET;
  if (!secret) throw badConfig("TESSERA_DECODER_SECRET", "is required (the HMAC secret shared with the edge)");
  checkThreadpoolSize(env);
  const sharedWorkTimeoutMs = intVar(env, "TESSERA_SHARED_WORK_TIMEOUT_MS", { fallback: DEFAULT_SHARED_WORK_TIMEOUT_MS, min: 1, max: MAX_DEADLINE_MS });
  const capacity = intVar(env, "TESSERA_DECODER_CAPACITY", { fallback: availableParallelism(), min: 1, max: MAX_THREADS });
  return {
    host: listenHost(env),
    port: intVar(env, "TESSERA_DECODER_PORT", { fallback: 9100, max: 65535 }),
    secret,
    capacity,
    catalog: catalogFrom(env, sharedWorkTimeoutMs),
    assets: readAssetConfig(env),
    maxInFlight: intVar(env, "TESSERA_MAX_IN_FLIGHT_REQUESTS", { fallback: DEFAULT_MAX_IN_FLIGHT, min: 1 }),
    maxFileTransfers: intVar(env, "TESSERA_MAX_FILE_TRANSFERS", { fallback: DEFAULT_MAX_FILE_TRANSFERS, min: 1 }),
    requestTimeoutMs: intVar(env, "TESSERA_REQUEST_TIMEOUT_MS", { fallback: DEFAULT_REQUEST_TIMEOUT_MS, min: 1, max: MAX_DEADLINE_MS }),
    sharedWorkTimeoutMs,
    prefetchRing: intVar(env, "TESSERA_PREFETCH_RING", { fallback: 8, max: 1024 }),
    workBudgetBytes: MIB * intVar(env, "TESSERA_WORK_BUDGET_MB", { fallback: DEFAULT_WORK_BUDGET_BYTES / MIB, min: 1, max: 1 << 20 }),
    blockCacheBytes: MIB * intVar(env, "TESSERA_BLOCK_CACHE_MB", { fallback: DEFAULT_BLOCK_CACHE_BYTES / MIB, max: 1 << 20 }),
    mosaicMaxAssets: intVar(env, "TESSERA_MOSAIC_MAX_ASSETS", { fallback: DEFAULT_MOSAIC_MAX_ASSETS, min: 1, max: 10_000 }),
    renderThreads: intVar(env, "TESSERA_RENDER_THREADS", { fallback: capacity, min: 1, max: MAX_THREADS }),
    // No request outlives the longest deadline, so neither need a drain.
    drainTimeoutMs: intVar(env, "TESSERA_DRAIN_TIMEOUT_MS", { fallback: DEFAULT_DRAIN_TIMEOUT_MS, min: 0, max: MAX_DEADLINE_MS }),
    metricsToken: metricsToken(env),
    tileMatrixSets: readOperatorSets(env),
  };
}

/** An IP address or a host name; anything else would fail only at listen, naming no variable. */
function listenHost(env: NodeJS.ProcessEnv): string {
  const host = env.TESSERA_DECODER_HOST || "127.0.0.1";
  if (isIP(host) || /^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$/.test(host)) return host;
  throw badConfig("TESSERA_DECODER_HOST", `must be an IP address or a host name, got ${JSON.stringify(host)}`);
}

/** Fewer characters would be guessed in time: nothing limits how often a client may try. */
const MIN_TOKEN_LENGTH = 16;

/**
 * The bearer token of GET /metrics, unset or empty for none. A value no client can send after
 * "Bearer " (a space, a file's trailing newline) would refuse every scraper with no hint why.
 * The message never shows the value: it is a secret.
 */
function metricsToken(env: NodeJS.ProcessEnv): string | undefined {
  const token = env.TESSERA_METRICS_TOKEN;
  if (!token) return undefined;
  if (!/^[A-Za-z0-9._~+/-]+=*$/.test(token)) {
    throw badConfig("TESSERA_METRICS_TOKEN", "must be a bearer token: letters, digits and -._~+/ (then any =), no spaces or line breaks");
  }
  if (token.length < MIN_TOKEN_LENGTH) throw badConfig("TESSERA_METRICS_TOKEN", `must be at least ${MIN_TOKEN_LENGTH} characters (openssl rand -hex 32 makes one)`);
  return token;
}

/** Whether GET /metrics is open to other machines: no token, and an address beyond loopback. */
export function metricsOpenToOthers(config: Pick<DecoderConfig, "host" | "metricsToken">): boolean {
  const loopback = config.host === "localhost" || config.host === "::1" || (isIP(config.host) === 4 && config.host.startsWith("127."));
  return !config.metricsToken && !loopback;
}

/** libuv reads UV_THREADPOOL_SIZE itself and takes what is not a number for one thread. */
function checkThreadpoolSize(env: NodeJS.ProcessEnv): void {
  intVar(env, "UV_THREADPOOL_SIZE", { fallback: 4 /* libuv's own */, min: 1, max: MAX_THREADS });
}

/** Longest wait for a TCP connection to the store. */
const S3_CONNECTION_TIMEOUT_MS = 3000;

function catalogFrom(env: NodeJS.ProcessEnv, storeTimeoutMs: number): SourceCatalog {
  const kind = env.TESSERA_SOURCE || "local";
  if (kind === "local") return new LocalCatalog(dataDir(env));
  if (kind === "s3") {
    const location = readS3Location(env, "when TESSERA_SOURCE=s3");
    checkCredentialPair(env);
    // The SDK waits forever by default. A store that does not answer within the shared-work
    // bound, or whose socket idles that long mid-body, is stalled (504), whether or not a
    // request's own deadline is watching the call.
    const client = s3ClientFor(location, {
      connectionTimeout: Math.min(S3_CONNECTION_TIMEOUT_MS, storeTimeoutMs),
      requestTimeout: storeTimeoutMs,
      throwOnRequestTimeout: true,
      socketTimeout: storeTimeoutMs,
    });
    const firstReadBytes = KIB * intVar(env, "TESSERA_S3_FIRST_READ_KB", { fallback: DEFAULT_FIRST_READ_BYTES / KIB, min: 1, max: 16 * 1024 });
    return new S3SourceCatalog({ client, bucket: location.bucket, prefix: location.prefix, firstReadBytes });
  }
  throw badConfig("TESSERA_SOURCE", `"${kind}" must be local or s3`);
}

/** The local catalog's directory: missing, every id would be a 404 and nothing would say why. */
function dataDir(env: NodeJS.ProcessEnv): string {
  const dir = env.TESSERA_DATA_DIR || SAMPLES_DIR;
  if (!statSync(dir, { throwIfNoEntry: false })?.isDirectory()) {
    throw badConfig("TESSERA_DATA_DIR", `must be a directory, got ${JSON.stringify(dir)}`);
  }
  return dir;
}

/** One key without the other makes the SDK skip both silently and look for credentials elsewhere. */
function checkCredentialPair(env: NodeJS.ProcessEnv): void {
  const [id, key] = [env.AWS_ACCESS_KEY_ID, env.AWS_SECRET_ACCESS_KEY];
  if (id && !key) throw badConfig("AWS_SECRET_ACCESS_KEY", "is required with AWS_ACCESS_KEY_ID");
  if (key && !id) throw badConfig("AWS_ACCESS_KEY_ID", "is required with AWS_SECRET_ACCESS_KEY");
}
