// POST /__decoders/heartbeat: a decoder reports itself (shared/registration.ts). The signature
// is checked before the body is read; the body is read within BODY_READ_TIMEOUT (a trickling
// client is cut off with 408 before it reaches the DO) and must match the signed digest.
import type { IRequest } from "itty-router";
import { HttpError } from "../../shared/errors";
import { SIGNATURE_HEADER, verifyRequest } from "../../shared/protocol";
import { heartbeatTarget, parseHeartbeat } from "../../shared/registration";
import { callAdmission } from "../admission-client";
import { edgeConfig, type Env } from "../env";
import { readBodyWithin } from "../request-body";
import { HEARTBEAT_DO_PATH } from "./admission-do";

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
