// What an image and a web-map tile share once their request names its pixels: a strong ETag,
// the Cache API entry keyed by those pixels and the source's pinned version, and on a miss
// admission → decoder, the answer stored for the next client: a small one held whole, a large
// one (STREAM_ANSWER_BYTES) stored while it streams to the client, never held whole.
import type { IRequest } from "itty-router";
import { errorResponse, HttpError } from "../../shared/errors";
import { DECODER, VERSION_HEADER } from "../../shared/protocol";
import { declaredLength, lengthPipe, relay, streamedBody } from "../admission/answers";
import { viaAdmission, type Cost } from "../admission-client";
import type { TierEntry } from "../admission/upper-tier";
import { allowAnyOrigin } from "../cors";
import { RESTRICTED_CACHE_CONTROL } from "../access/gate";
import type { Restriction } from "../../shared/access";
import type { EdgeConfig, Env } from "../env";
import { forClient, type ForClient } from "../request-id";
import { errorCacheControl, imageCacheControl, isPermanentError, matchesIfNoneMatch, notModified, strongEtag } from "../http-cache";

export const CACHE_STATUS_HEADER = "x-tessera-cache";

/** The decoder's route for each kind of decoded answer. */
const DECODER_ROUTE = { image: DECODER.image, tile: DECODER.tile, point: DECODER.point, area: DECODER.area, statistics: DECODER.statistics };

export interface DecodeRequest {
  route: keyof typeof DECODER_ROUTE;
  id: string;
  /** The canonical form that names the pixels: every spelling of the request has the same one. */
  canonical: string;
  /** The source version the pixels are read from. */
  version: string;
  /** Headers of every successful answer (200 or 304). */
  headers: Record<string, string>;
  /** The edge's coarse cost, needed only on a miss. */
  cost: () => Cost;
  /** Set when the source is restricted: every answer, refusals too, is private (access/gate.ts). */
  restriction?: Restriction;
  /** What helps when the decode is too large to be admitted (413), where the route knows better than "a smaller size". */
  tooLargeHelp?: string;
  /** A POST route's canonical body, sent on a miss; `canonical` names its digest. */
  body?: string;
}

/** The Cache API key of a decoded answer: not a routable URL, so only cachedDecode fills it. */
export const decodedCacheKey = (origin: string, route: DecodeRequest["route"], id: string, canonical: string, version: string) =>
  `${origin}/__tessera/${route}/${encodeURIComponent(id)}/${canonical}${canonical.includes("?") ? "&" : "?"}version=${encodeURIComponent(version)}`;

/** ETags made lately, by cache key: a popular tile's hits ask for the same one again and again. */
const etags = new Map<string, Promise<string>>();
const ETAG_ENTRIES = 1000;

/** One ETag per (source, pixels, version): equal for every spelling, new with every version. */
export function decodedEtag({ route, id, version, canonical }: DecodeRequest): Promise<string> {
  const key = decodedCacheKey("", route, id, canonical, version);
  let etag = etags.get(key);
  if (!etag) {
    etag = strongEtag(id, version, canonical);
    if (etags.size >= ETAG_ENTRIES) etags.delete(etags.keys().next().value!); // oldest first
    etags.set(key, etag);
  }
  return etag;
}

/** 304, a cache hit, or the decoder's answer through admission (then stored). */
export async function cachedDecode(d: DecodeRequest, req: IRequest, env: Env, config: EdgeConfig, ctx: ExecutionContext): Promise<Response> {
  const etag = await decodedEtag(d);
  if (matchesIfNoneMatch(req, etag)) return notModified(etag, d.headers);

  const key = decodedCacheKey(new URL(req.url).origin, d.route, d.id, d.canonical, d.version);
  const cache = await edgeCache(env, req);
  const hit = await cache.match(key);
  if (hit) return answer(hit, d, "hit");

  // A restricted source's answer is private: never shared through the upper tier.
  const tier = d.restriction ? undefined : { key, source: d.id };
  const { body, init, length } = await decode(env, config, d, forClient(req), etag, tier);
  if (!(body instanceof ReadableStream)) {
    ctx.waitUntil(cache.put(key, new Response(body, init))); // the same buffer makes both responses
    return answer(new Response(body, init), d, "miss");
  }
  // A stream goes to the client, under its declared length, and to the cache in step (relay):
  // the Worker holds one chunk of it, and a client that reads slowly holds its permit as long,
  // until REQUEST_TIMEOUT at most. One cut short (the decoder dying, the deadline, the client
  // leaving, whose signal ends the call to the DO) errors both: the client's answer is never a
  // short image that looks whole, and what the cache kept of it is deleted.
  const toClient = lengthPipe(length);
  const toCache = new IdentityTransformStream();
  const whole = relay(body, [toClient.writable.getWriter(), toCache.writable.getWriter()]).catch(() => false);
  ctx.waitUntil(storeWhole(cache, key, new Response(toCache.readable, init), whole));
  return answer(new Response(toClient.readable, init), d, "miss");
}

/**
 * This location's cache: caches.default. In tests and bench:pops (TEST_LOCATION_CACHES), one
 * workerd plays many locations: each request's colo (request.cf, where Cloudflare says it
 * arrived) names the cache namespace that stands for that location's.
 */
async function edgeCache(env: Env, req: IRequest): Promise<Cache> {
  const colo = (req.cf as { colo?: unknown } | undefined)?.colo;
  return env.TEST_LOCATION_CACHES === "true" && typeof colo === "string" ? await caches.open(`pop-${colo}`) : caches.default;
}

/**
 * Stores a streamed answer, and deletes what the cache kept if it did not arrive whole. It goes
 * without its length: a cache told the length may keep a body that errors midway as if whole
 * (Miniflare's keeps the bytes it had), while one that must count them keeps nothing unfinished.
 */
async function storeWhole(cache: Cache, key: string, res: Response, whole: Promise<boolean>): Promise<void> {
  // A put that fails without reading its body cancels it, so it no longer holds the client's back.
  await cache.put(key, res).catch(() => res.body?.cancel().catch(() => {}));
  if (!(await whole)) await cache.delete(key);
}

/**
 * The decoder's answer as it is stored: type, ETag, and its bytes whole below
 * STREAM_ANSWER_BYTES, else their stream; or a client error, kept briefly.
 */
async function decode(env: Env, config: EdgeConfig, d: DecodeRequest, client: ForClient, etag: string, tier?: TierEntry) {
  let decoded: Response;
  try {
    decoded = await viaAdmission(env, d.id, DECODER_ROUTE[d.route](d.id, d.canonical, d.version), client, d.cost(), d.body, tier);
  } catch (caught) {
    const err = caught instanceof HttpError && caught.kind === "too_large" && d.tooLargeHelp ? new HttpError("too_large", `${caught.message}; ${d.tooLargeHelp}`) : caught;
    // A 4xx or 501 from the decoder is about this exact request: the same request gets it
    // again, so it is stored (briefly). Timeouts and overloads are not, nor a version that is
    // gone (the request is answered again from the current version).
    if (err instanceof HttpError && isPermanentError(err.status) && err.kind !== "version_gone") {
      const refusal = errorResponse(err, { "cache-control": errorCacheControl(config) });
      return { body: await refusal.arrayBuffer(), init: { status: refusal.status, headers: refusal.headers } };
    }
    throw err;
  }
  const headers = {
    "content-type": decoded.headers.get("content-type") ?? "application/octet-stream",
    "cache-control": imageCacheControl(config),
    [VERSION_HEADER]: decoded.headers.get(VERSION_HEADER) ?? "",
    etag,
  };
  const stream = streamedBody(decoded, config.streamAnswerBytes);
  return { body: stream ?? (await decoded.arrayBuffer()), init: { headers }, length: declaredLength(decoded.headers) };
}

/**
 * The stored answer with this request's headers: one new Response, already carrying CORS. The
 * cache keeps what the decoder said for anyone who may see it; a restricted source's answer
 * leaves private, whatever was stored.
 */
function answer(stored: Response, d: DecodeRequest, status: "hit" | "miss"): Response {
  const out = new Response(stored.body, stored);
  if (stored.ok) for (const [k, v] of Object.entries(d.headers)) out.headers.set(k, v);
  if (d.restriction) out.headers.set("cache-control", RESTRICTED_CACHE_CONTROL);
  out.headers.set(CACHE_STATUS_HEADER, status);
  allowAnyOrigin(out.headers);
  return out;
}
