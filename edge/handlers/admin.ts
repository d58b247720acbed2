// POST /admin/sources/{id}/invalidate: a publisher's "serve the current version now". Every
// decoder forgets its opened snapshots of the source and this edge location forgets its
// metadata, so the next request learns the current version (other locations within
// INFO_MAX_AGE). With `?member={asset}` (invalidate_source(mosaic, member)), the decoders forget
// that asset of the mosaic instead, so its next lookup opens a fresh snapshot; tiles already
// cached keep the mosaic document's version and expire as tiles do. Needs `Authorization: Bearer <ADMIN_TOKEN>`; without ADMIN_TOKEN set the route
// refuses everyone. A body, if any, is read under BODY_READ_TIMEOUT and ignored.
// Every region hears it (any of them may have opened the source), through the shard that admits
// the source there; each shard reaches every decoder of its region.
import type { IRequest } from "itty-router";
import { callShard } from "../admission-client";
import { INVALIDATE_DO_PATH } from "../admission/admission-do";
import { NO_DECODERS_HEADER, shard, type Shard } from "../admission/placement";
import { shardOf } from "../../shared/regions";
import { readBodyWithin } from "../request-body";
import { unauthorized } from "../auth";
import { bearerMatches } from "../../shared/bearer";
import { edgeConfig, type Env } from "../env";
import { forgetSourceInfo } from "../source-info";
import { purgeSource } from "../cache-purge";
import { badRequest, errorFromResponse, HttpError } from "../../shared/errors";
import { X_REQUEST_ID } from "../../shared/request-id";
import { sourceRef } from "./params";

export async function invalidateHandler(req: IRequest, env: Env): Promise<Response> {
  const config = edgeConfig(env);
  if (!config.adminToken || !(await bearerMatches(req.headers.get("authorization"), config.adminToken))) {
    return unauthorized("POST /admin/… needs Authorization: Bearer <ADMIN_TOKEN>", "admin");
  }
  await readBodyWithin(req, config.admission.bodyReadTimeoutMs);
  const { id, version, degraded } = sourceRef(req.params.id);
  // A snapshot never changes, so there is nothing to invalidate under one.
  if (version !== undefined || degraded) throw badRequest("invalidate a source by its plain id, not a snapshot {id}@{version} or a degraded image");
  const member = new URL(req.url).searchParams.get("member");
  if (member === "") throw badRequest("member must name an asset of the mosaic");
  await forgetSourceInfo({ id });
  const query = member === null ? "" : `?member=${encodeURIComponent(member)}`;
  const p = config.placement;
  const path = `${INVALIDATE_DO_PATH}${encodeURIComponent(id)}${query}`;
  const answers = await Promise.all(
    p.regions.map(({ name }) =>
      invalidateIn(env, shard(p, name, shardOf(p, id)), path, req.signal, req.requestId).catch((err) => {
        // The publisher retries: invalidating again is harmless.
        throw p.configured && err instanceof HttpError ? new HttpError(err.kind, `region "${name}": ${err.message}`, err.retryAfterSeconds) : err;
      }),
    ),
  );
  const counted = answers.filter((a): a is Counts => !(a instanceof HttpError));
  if (counted.length === 0) throw answers[0]; // no region has a decoder: the usual 503
  const sum = (key: keyof Counts) => counted.reduce((n, a) => n + a[key], 0);
  // Every location's copies of the plain id's answers, when the operator gave a zone and token.
  const purged = member === null ? await purgeSource(config, id) : false;
  const body = { id, ...(member !== null && { member }), decoders: sum("decoders"), invalidated: sum("invalidated"), dropped: sum("dropped"), purged };
  return Response.json(body, { headers: { "cache-control": "no-store" } });
}

/** One region's counts; its error when it has no live decoder (nothing is open there). */
async function invalidateIn(env: Env, target: Shard, path: string, signal: AbortSignal, requestId: string): Promise<Counts | HttpError> {
  const res = await callShard(env, target, new Request(`https://admission${path}`, { method: "POST", signal, headers: { [X_REQUEST_ID]: requestId } }));
  if (res.ok) return (await res.json()) as Counts;
  const err = await errorFromResponse(res);
  if (res.headers.has(NO_DECODERS_HEADER)) return err;
  throw err;
}

/** What each region's admission DO answers: its live decoders, those that confirmed, snapshots dropped. */
interface Counts {
  decoders: number;
  invalidated: number;
  dropped: number;
}
