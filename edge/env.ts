// The Worker's bindings (wrangler.toml) and their parsed, validated form.
import { admissionConfig, type AdmissionConfig, type AdmissionVars } from "../shared/admission-config";
import { badConfig, intVar } from "../shared/config";
import type { AdmissionDO } from "./admission/admission-do";
import type { SizeLimits } from "../shared/iiif/info";

export interface Env extends AdmissionVars {
  ADMISSION: DurableObjectNamespace<AdmissionDO>;
  DECODER_SECRET: string;
  IMAGE_MAX_AGE: string;
  INFO_MAX_AGE: string;
  STALE_WHILE_REVALIDATE: string;
  ERROR_MAX_AGE: string;
  MAX_WIDTH: string;
  MAX_HEIGHT: string;
  MAX_AREA: string;
}

export interface EdgeConfig {
  decoderSecret: string;
  imageMaxAge: number;
  infoMaxAge: number;
  admission: AdmissionConfig;
  staleWhileRevalidate: number;
  errorMaxAge: number;
  /** Output limits declared in info.json and enforced (undefined: unlimited). */
  limits: SizeLimits;
}

export function edgeConfig(env: Env): EdgeConfig {
  if (!env.DECODER_SECRET) throw badConfig("DECODER_SECRET", "is not set (wrangler secret put DECODER_SECRET)");
  return {
    decoderSecret: env.DECODER_SECRET,
    imageMaxAge: intVar(env, "IMAGE_MAX_AGE", { min: 0 }),
    infoMaxAge: intVar(env, "INFO_MAX_AGE", { min: 0 }),
    admission: admissionConfig(env),
    staleWhileRevalidate: intVar(env, "STALE_WHILE_REVALIDATE", { min: 0 }),
    errorMaxAge: intVar(env, "ERROR_MAX_AGE", { min: 0 }),
    limits: {
      maxWidth: intVar(env, "MAX_WIDTH", { min: 0 }) || undefined,
      maxHeight: intVar(env, "MAX_HEIGHT", { min: 0 }) || undefined,
      maxArea: intVar(env, "MAX_AREA", { min: 0 }) || undefined,
    },
  };
}
