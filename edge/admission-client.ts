// The edge's only way to a decoder: through the admission Durable Object.
import { classify, PARTITION_HEADER, ESTIMATE_HEADER, type Partition } from "../shared/cost";
import { errorFromResponse, HttpError } from "../shared/errors";
import { X_REQUEST_ID } from "../shared/request-id";
import type { EdgeConfig, Env } from "./env";
import type { ForClient } from "./request-id";

const admissionStub = (env: Env) => env.ADMISSION.get(env.ADMISSION.idFromName("default"));

/**
 * One call to the admission DO. A DO that cannot take the call (overloaded, reset, being
 * replaced) is a transient condition: 503 + Retry-After, never a 502.
 */
export async function callAdmission(env: Env, request: Request): Promise<Response> {
  try {
    return await admissionStub(env).fetch(request);
  } catch (err) {
    if (request.signal.aborted) throw err; // the client is gone: nobody reads the answer
    console.error(JSON.stringify({ level: "error", msg: `admission DO call failed: ${String(err)}`, requestId: request.headers.get(X_REQUEST_ID) ?? undefined }));
    throw new HttpError("overloaded", "admission is unavailable; retry shortly", 1);
  }
}

/** The edge's coarse verdict on a request; metadata and small decodes are tiles. */
export interface Cost {
  partition: Partition;
  estimateBytes: number;
}

/** The edge's verdict on a decode of this estimated peak: "full" from the operator's threshold. */
export const coarseCost = (estimateBytes: number, config: EdgeConfig): Cost => ({
  partition: classify(estimateBytes, config.admission.largeDecodeThresholdBytes),
  estimateBytes,
});

const METADATA: Cost = { partition: "tile", estimateBytes: 0 };

/** Sends a decoder request through admission; non-OK answers are thrown as HttpError. */
export async function viaAdmission(
  env: Env,
  decoderPath: string,
  client: ForClient,
  cost: Cost = METADATA,
): Promise<Response> {
  const res = await callAdmission(
    env,
    new Request(`https://admission${decoderPath}`, {
      signal: client.signal,
      headers: { [PARTITION_HEADER]: cost.partition, [ESTIMATE_HEADER]: String(cost.estimateBytes), [X_REQUEST_ID]: client.requestId },
    }),
  );
  if (!res.ok) throw await errorFromResponse(res);
  return res;
}
