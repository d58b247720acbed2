// POST /__decoders/heartbeat: a decoder reports itself (shared/registration.ts). The signature
// is checked before the body is read; the body is read within BODY_READ_TIMEOUT (a trickling
// client is cut off with 408 before it reaches the DO) and must match the signed digest.
import type { IRequest } from "itty-router";
import { HttpError } from "../../shared/errors";
import { SIGNATURE_HEADER, verifyRequest } from "../../shared/protocol";
import { heartbeatTarget, parseHeartbeat } from "../../shared/registration";
import { callAdmission } from "../admission-client";
import { edgeConfig, type Env } from "../env";
import { HEARTBEAT_DO_PATH } from "./admission-do";

/** A heartbeat is a few hundred bytes; anything far larger is not one. */
const MAX_BODY_BYTES = 16 * 1024;

export async function heartbeatHandler(req: IRequest, env: Env): Promise<Response> {
  const config = edgeConfig(env);
  const url = new URL(req.url);
  const target = url.pathname + url.search;
  await verifyRequest(config.decoderSecret, "POST", target, req.headers.get(SIGNATURE_HEADER));
  const body = await readBodyWithin(req, config.admission.bodyReadTimeoutMs);
  if (target !== (await heartbeatTarget(body))) throw new HttpError("unauthorized", "body does not match the signed digest");
  parseHeartbeat(body); // 400 here, before the DO
  return callAdmission(env, new Request(`https://admission${HEARTBEAT_DO_PATH}`, { method: "POST", body }));
}

/** The request body as text, or 408 if it has not fully arrived within `timeoutMs`. */
export async function readBodyWithin(req: Request, timeoutMs: number): Promise<string> {
  if (!req.body) return "";
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  const deadline = new HttpError("deadline", "request body not received within BODY_READ_TIMEOUT");
  let rejectLate: (e: HttpError) => void = () => {};
  const timedOut = new Promise<never>((_, reject) => (rejectLate = reject));
  const timer = setTimeout(() => rejectLate(deadline), timeoutMs);
  try {
    for (;;) {
      const { done, value } = await Promise.race([reader.read(), timedOut]);
      if (done) break;
      size += value.byteLength;
      if (size > MAX_BODY_BYTES) throw new HttpError("too_large", `request body exceeds ${MAX_BODY_BYTES} bytes`);
      chunks.push(value);
    }
  } catch (err) {
    reader.cancel().catch(() => {});
    throw err;
  } finally {
    clearTimeout(timer);
  }
  const all = new Uint8Array(size);
  let offset = 0;
  for (const c of chunks) {
    all.set(c, offset);
    offset += c.byteLength;
  }
  return new TextDecoder().decode(all);
}
