// The Worker's bindings (wrangler.toml) and their parsed, validated form.
import { badConfig, intVar } from "../shared/config";
import type { SizeLimits } from "../shared/iiif/info";

export interface Env {
  ADMISSION: DurableObjectNamespace;
  DECODER_URL: string;
  DECODER_SECRET: string;
  NTHREADS: string;
  REQUEST_TIMEOUT: string;
  QUEUE_TIMEOUT: string;
  IMAGE_MAX_AGE: string;
  INFO_MAX_AGE: string;
  STALE_WHILE_REVALIDATE: string;
  ERROR_MAX_AGE: string;
  MAX_WIDTH: string;
  MAX_HEIGHT: string;
  MAX_AREA: string;
}

export interface EdgeConfig {
  decoderUrl: string;
  decoderSecret: string;
  permits: number;
  requestTimeoutMs: number;
  queueTimeoutMs: number;
  imageMaxAge: number;
  infoMaxAge: number;
  staleWhileRevalidate: number;
  errorMaxAge: number;
  /** Output limits declared in info.json and enforced (undefined: unlimited). */
  limits: SizeLimits;
}

export function edgeConfig(env: Env): EdgeConfig {
  if (!env.DECODER_SECRET) throw badConfig("DECODER_SECRET", "is not set (wrangler secret put DECODER_SECRET)");
  return {
    decoderUrl: env.DECODER_URL.replace(/\/$/, ""),
    decoderSecret: env.DECODER_SECRET,
    permits: intVar(env, "NTHREADS", { min: 1 }),
    requestTimeoutMs: intVar(env, "REQUEST_TIMEOUT", { min: 1 }) * 1000,
    queueTimeoutMs: intVar(env, "QUEUE_TIMEOUT", { min: 0 }) * 1000,
    imageMaxAge: intVar(env, "IMAGE_MAX_AGE", { min: 0 }),
    infoMaxAge: intVar(env, "INFO_MAX_AGE", { min: 0 }),
    staleWhileRevalidate: intVar(env, "STALE_WHILE_REVALIDATE", { min: 0 }),
    errorMaxAge: intVar(env, "ERROR_MAX_AGE", { min: 0 }),
    limits: {
      maxWidth: intVar(env, "MAX_WIDTH", { min: 0 }) || undefined,
      maxHeight: intVar(env, "MAX_HEIGHT", { min: 0 }) || undefined,
      maxArea: intVar(env, "MAX_AREA", { min: 0 }) || undefined,
    },
  };
}
