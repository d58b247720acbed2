// POST /admin/sources/{id}/invalidate: a publisher's "serve the current version now". Every
// decoder forgets its opened snapshots of the source and this edge location forgets its
// metadata, so the next request learns the current version (other locations within
// INFO_MAX_AGE). With `?member={asset}` (invalidate_source(mosaic, member)), the decoders forget
// that asset of the mosaic instead, so its next lookup opens a fresh snapshot; tiles already
// cached keep the mosaic document's version and expire as tiles do. Needs `Authorization: Bearer <ADMIN_TOKEN>`; without ADMIN_TOKEN set the route
// refuses everyone. A body, if any, is read under BODY_READ_TIMEOUT and ignored.
import type { IRequest } from "itty-router";
import { callAdmission } from "../admission-client";
import { INVALIDATE_DO_PATH } from "../admission/admission-do";
import { readBodyWithin } from "../request-body";
import { bearerMatches, unauthorized } from "../auth";
import { edgeConfig, type Env } from "../env";
import { forgetSourceInfo } from "../source-info";
import { badRequest, errorFromResponse } from "../../shared/errors";
import { X_REQUEST_ID } from "../../shared/request-id";
import { sourceRef } from "./params";

export async function invalidateHandler(req: IRequest, env: Env): Promise<Response> {
  const config = edgeConfig(env);
  if (!config.adminToken || !(await bearerMatches(req, config.adminToken))) {
    return unauthorized("POST /admin/… needs Authorization: Bearer <ADMIN_TOKEN>", "admin");
  }
  await readBodyWithin(req, config.admission.bodyReadTimeoutMs);
  const { id, version } = sourceRef(req.params.id);
  // A snapshot never changes, so there is nothing to invalidate under one.
  if (version !== undefined) throw badRequest("invalidate a source by its plain id, not a snapshot {id}@{version}");
  const member = new URL(req.url).searchParams.get("member");
  if (member === "") throw badRequest("member must name an asset of the mosaic");
  await forgetSourceInfo({ id });
  const query = member === null ? "" : `?member=${encodeURIComponent(member)}`;
  const res = await callAdmission(
    env,
    new Request(`https://admission${INVALIDATE_DO_PATH}${encodeURIComponent(id)}${query}`, { method: "POST", signal: req.signal, headers: { [X_REQUEST_ID]: req.requestId } }),
  );
  if (!res.ok) throw await errorFromResponse(res);
  return new Response(res.body, { headers: { "content-type": "application/json", "cache-control": "no-store" } });
}
