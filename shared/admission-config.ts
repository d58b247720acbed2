// The admission model's settings (its table of defaults plus our waiting and registration knobs),
// parsed from the Worker's wrangler vars. Every bad value fails loudly with the variable's name,
// except ADMISSION_MODE: an unrecognized mode falls back to basic (the caller logs it and the
// mode gauge shows it), because a stale value must never take the service down.

import { badConfig, intVar, numberVar } from "./config";
import { MAX_DEADLINE_MS } from "./protocol";

export type AdmissionMode = "advanced" | "basic";

export interface AdmissionVars {
  NTHREADS?: string;
  TILES_THREAD_RATIO?: string;
  MEMORY_LIMIT?: string;
  TILES_MEMORY_RATIO?: string;
  ADMISSION_MODE?: string;
  LARGE_DECODE_THRESHOLD_BYTES?: string;
  LARGE_DECODE_THRESHOLD_WORK?: string;
  REQUEST_TIMEOUT?: string;
  BODY_READ_TIMEOUT?: string;
  QUEUE_TIMEOUT?: string;
  FULL_MAX_WAITING?: string;
  DECODER_TTL?: string;
  LEASE_GRACE?: string;
}

export interface AdmissionConfig {
  /** Global decode permits; 0 = auto: the sum of the capacities live decoders report. */
  nthreads: number;
  tilesThreadRatio: number;
  /** The RAM envelope in bytes; 0 = auto: the sum of the limits live decoders report. */
  memoryLimit: number;
  tilesMemoryRatio: number;
  mode: AdmissionMode;
  /** The mode as configured, when it was not a recognized one (it then runs as basic). */
  unrecognizedMode?: string;
  largeDecodeThresholdBytes: number;
  /** Work units (≈ ms of one decoder core) at which a decode is one of the full partition. */
  largeDecodeThresholdWork: number;
  requestTimeoutMs: number;
  bodyReadTimeoutMs: number;
  queueTimeoutMs: number;
  fullMaxWaiting: number;
  decoderTtlMs: number;
  /** How long after REQUEST_TIMEOUT a decoder may take to answer that its work has stopped. */
  leaseGraceMs: number;
}

/** The model's defaults (and ours for the knobs it does not have). */
export const ADMISSION_DEFAULTS = {
  NTHREADS: 0,
  TILES_THREAD_RATIO: 0.5,
  MEMORY_LIMIT: 0,
  TILES_MEMORY_RATIO: 0.25,
  ADMISSION_MODE: "advanced",
  LARGE_DECODE_THRESHOLD_BYTES: 32 * 1024 * 1024,
  // An eighth of a second of one core, above every tile a viewer asks: a 256² IIIF tile takes
  // 6–15 units, a @2x map tile 72 (bilinear) to 113 (cubic); an expression at the node cap on
  // one takes 185, a whole-image render or a 32-asset mosaic hundreds (`npm run bench:work`).
  LARGE_DECODE_THRESHOLD_WORK: 125,
  REQUEST_TIMEOUT: 60,
  BODY_READ_TIMEOUT: 10,
  QUEUE_TIMEOUT: 10,
  FULL_MAX_WAITING: 16,
  DECODER_TTL: 15,
  LEASE_GRACE: 10,
} as const;

export function admissionConfig(vars: AdmissionVars): AdmissionConfig {
  const d = ADMISSION_DEFAULTS;
  const int = (name: keyof AdmissionVars, min: number, max?: number) => intVar(vars, name, { min, max, fallback: d[name] as number });
  const ratio = (name: keyof AdmissionVars) => numberVar(vars, name, { fallback: d[name] as number });
  const configuredMode = (vars.ADMISSION_MODE ?? "").trim() || d.ADMISSION_MODE;
  const known = configuredMode === "advanced" || configuredMode === "basic";
  const config: AdmissionConfig = {
    nthreads: int("NTHREADS", 0),
    tilesThreadRatio: ratio("TILES_THREAD_RATIO"),
    memoryLimit: int("MEMORY_LIMIT", 0),
    tilesMemoryRatio: ratio("TILES_MEMORY_RATIO"),
    mode: known ? configuredMode : "basic",
    unrecognizedMode: known ? undefined : configuredMode,
    largeDecodeThresholdBytes: int("LARGE_DECODE_THRESHOLD_BYTES", 1),
    largeDecodeThresholdWork: int("LARGE_DECODE_THRESHOLD_WORK", 1),
    requestTimeoutMs: int("REQUEST_TIMEOUT", 1, MAX_DEADLINE_MS / 1000) * 1000,
    bodyReadTimeoutMs: int("BODY_READ_TIMEOUT", 1) * 1000,
    queueTimeoutMs: int("QUEUE_TIMEOUT", 0) * 1000,
    fullMaxWaiting: int("FULL_MAX_WAITING", 0),
    decoderTtlMs: int("DECODER_TTL", 1) * 1000,
    leaseGraceMs: int("LEASE_GRACE", 1) * 1000,
  };
  // The request deadline covers the wait for a permit too: a shorter one would turn every
  // queued request into a 408 before it could be admitted (why the two are checked together).
  if (config.requestTimeoutMs <= config.queueTimeoutMs) {
    throw badConfig("REQUEST_TIMEOUT", `must exceed QUEUE_TIMEOUT (${config.queueTimeoutMs / 1000} s)`);
  }
  return config;
}

/**
 * tile_min and full_max for n global permits: tile_min = round(n × ratio), exactly, so ratio 1
 * admits no full and ratio 0 guarantees tiles nothing; the operator chose either.
 */
export function partitions(n: number, tilesThreadRatio: number): { tileMin: number; fullMax: number } {
  const tileMin = Math.round(n * tilesThreadRatio);
  return { tileMin, fullMax: n - tileMin };
}

/** The operator's tile/full thresholds, as `classify` takes them. */
export const thresholdsOf = (config: Pick<AdmissionConfig, "largeDecodeThresholdBytes" | "largeDecodeThresholdWork">) => ({
  bytes: config.largeDecodeThresholdBytes,
  work: config.largeDecodeThresholdWork,
});

/** The thresholds with the defaults, for a decoder with no edge in front. */
export const DEFAULT_THRESHOLDS = { bytes: ADMISSION_DEFAULTS.LARGE_DECODE_THRESHOLD_BYTES, work: ADMISSION_DEFAULTS.LARGE_DECODE_THRESHOLD_WORK };

/** full_mem: the full partition's decode-memory budget. */
export const fullMemory = (memoryLimit: number, tilesMemoryRatio: number) =>
  Math.floor(memoryLimit * (1 - tilesMemoryRatio));
