// The edge's only way to a decoder: through the admission Durable Object.
import { PARTITION_HEADER, ESTIMATE_HEADER, type Partition } from "../shared/cost";
import { errorFromResponse } from "../shared/errors";
import type { Env } from "./env";

export const admissionStub = (env: Env) => env.ADMISSION.get(env.ADMISSION.idFromName("default"));

/** The edge's coarse verdict on a request; metadata and small decodes are tiles. */
export interface Cost {
  partition: Partition;
  estimateBytes: number;
}

const METADATA: Cost = { partition: "tile", estimateBytes: 0 };

/** Sends a decoder request through admission; non-OK answers are thrown as HttpError. */
export async function viaAdmission(
  env: Env,
  decoderPath: string,
  signal: AbortSignal,
  cost: Cost = METADATA,
): Promise<Response> {
  const res = await admissionStub(env).fetch(
    new Request(`https://admission${decoderPath}`, {
      signal,
      headers: { [PARTITION_HEADER]: cost.partition, [ESTIMATE_HEADER]: String(cost.estimateBytes) },
    }),
  );
  if (!res.ok) throw await errorFromResponse(res);
  return res;
}
