// The edge's only way to a decoder: through the admission Durable Object.
import { errorFromResponse } from "../shared/errors";
import type { Env } from "./env";

/** Sends a decoder request through admission; non-OK answers are thrown as HttpError. */
export async function viaAdmission(env: Env, decoderPath: string, signal: AbortSignal): Promise<Response> {
  const stub = env.ADMISSION.get(env.ADMISSION.idFromName("default"));
  const res = await stub.fetch(new Request(`https://admission${decoderPath}`, { signal }));
  if (!res.ok) throw await errorFromResponse(res);
  return res;
}
