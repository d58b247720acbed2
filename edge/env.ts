// The Worker's bindings (wrangler.toml) and their parsed, validated form.
import { admissionConfig, type AdmissionConfig, type AdmissionVars } from "../shared/admission-config";
import { badConfig, intVar } from "../shared/config";
import type { AdmissionDO } from "./admission/admission-do";

export interface Env extends AdmissionVars {
  ADMISSION: DurableObjectNamespace<AdmissionDO>;
  DECODER_SECRET: string;
  IMAGE_MAX_AGE: string;
  INFO_MAX_AGE: string;
}

export interface EdgeConfig {
  decoderSecret: string;
  imageMaxAge: number;
  infoMaxAge: number;
  admission: AdmissionConfig;
}

export function edgeConfig(env: Env): EdgeConfig {
  if (!env.DECODER_SECRET) throw badConfig("DECODER_SECRET", "is not set (wrangler secret put DECODER_SECRET)");
  return {
    decoderSecret: env.DECODER_SECRET,
    imageMaxAge: intVar(env, "IMAGE_MAX_AGE", { min: 0 }),
    infoMaxAge: intVar(env, "INFO_MAX_AGE", { min: 0 }),
    admission: admissionConfig(env),
  };
}
