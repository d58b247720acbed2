// POST /__decoders/heartbeat: a decoder reports itself (shared/registration.ts). The signature
// is checked before the body is read; the body is read within BODY_READ_TIMEOUT (a trickling
// client is cut off with 408 before it reaches the DO) and must match the signed digest.
// Every shard of the decoder's region hears it: each routes to all of the region's decoders
// and sizes its share from their sums.
import type { IRequest } from "itty-router";
import { badRequest, HttpError } from "../../shared/errors";
import { SIGNATURE_HEADER, verifyRequest } from "../../shared/protocol";
import { decoderRegion } from "../../shared/regions";
import { heartbeatTarget, parseHeartbeat, type Heartbeat } from "../../shared/registration";
import { callShard } from "../admission-client";
import { edgeConfig, type Env } from "../env";
import { readBodyWithin } from "../request-body";
import { HEARTBEAT_DO_PATH } from "./admission-do";
import { shardsOf } from "./placement";

export async function heartbeatHandler(req: IRequest, env: Env): Promise<Response> {
  const config = edgeConfig(env);
  const url = new URL(req.url);
  const target = url.pathname + url.search;
  await verifyRequest(config.decoderSecret, "POST", target, req.headers.get(SIGNATURE_HEADER));
  const body = await readBodyWithin(req, config.admission.bodyReadTimeoutMs);
  if (target !== (await heartbeatTarget(body))) throw new HttpError("unauthorized", "body does not match the signed digest");
  await deliverHeartbeat(env, parseHeartbeat(body)); // 400 here, before the DO
  return new Response(null, { status: 204 });
}

/**
 * Hands a decoder's heartbeat to every admission shard of its region: the route's, and that of
 * a container's DO for the decoder it runs. A region the edge does not know is a 400; a shard
 * that did not take it a 503 (the decoder beats again within its interval).
 */
export async function deliverHeartbeat(env: Env, report: Heartbeat): Promise<void> {
  const { placement } = edgeConfig(env);
  const region = decoderRegion(placement, report.region);
  if (region === undefined) {
    const known = placement.configured ? placement.regions.map((r) => r.name).join(", ") : "none: REGIONS is unset";
    throw badRequest(`heartbeat region "${report.region}" is not one of the edge's REGIONS (${known})`);
  }
  const body = JSON.stringify(report);
  const answers = await Promise.allSettled(
    shardsOf(placement, region).map((shard) =>
      callShard(env, shard, new Request(`https://admission${HEARTBEAT_DO_PATH}`, { method: "POST", body })),
    ),
  );
  const failed = answers.filter((a) => a.status === "rejected" || !a.value.ok).length;
  for (const a of answers) if (a.status === "fulfilled") await a.value.body?.cancel();
  // The shards that took it route to this decoder now; the decoder retries the rest next beat.
  if (failed > 0) throw new HttpError("overloaded", `${failed} of ${answers.length} admission shards of region "${region}" did not take the heartbeat`, 1);
}
