// GET /iiif/3/{id}/{region}/{size}/{rotation}/{quality}.{format}
// Parse → resolve against cached metadata → canonical cache key (+ pinned version) →
// Cache API hit, or admission → decoder, then store.
import type { IRequest } from "itty-router";
import { parseImageRequest } from "../../shared/iiif/image-request";
import { canonicalParts, resolveImageRequest } from "../../shared/iiif/resolve";
import { ASSUMED_CHANNELS, classify, estimateRequest } from "../../shared/cost";
import { DECODER, VERSION_HEADER } from "../../shared/protocol";
import { viaAdmission } from "../admission-client";
import { edgeConfig, type Env } from "../env";
import { sourceInfo } from "../source-info";
import { serviceId, sourceId } from "./params";

export const CACHE_STATUS_HEADER = "x-tessera-cache";

export async function imageHandler(req: IRequest, env: Env, ctx: ExecutionContext): Promise<Response> {
  const config = edgeConfig(env);
  const id = sourceId(req.params.id);
  const { region, size, rotation, qf } = req.params;
  const parsed = parseImageRequest({ region, size, rotation, qualityFormat: qf }, 3);
  const info = await sourceInfo(id, env, config, ctx, req.signal);
  const resolved = resolveImageRequest(parsed, info);
  const canonical = canonicalParts(resolved, info, 3);
  const canonicalUrl = `${serviceId(req, 3, id)}/${canonical}`;

  // Equivalent URLs share one entry; a new source version never meets an old one.
  const key = new Request(`${canonicalUrl}?version=${encodeURIComponent(info.version)}`);
  const cache = caches.default;
  const hit = await cache.match(key);
  if (hit) return withCacheStatus(hit, "hit");

  // Coarse classification (seed 000): the decoder will tell the DO its precise estimate.
  const estimateBytes = estimateRequest(info, resolved, ASSUMED_CHANNELS);
  const partition = classify(estimateBytes, config.admission.largeDecodeThresholdBytes);
  const decoded = await viaAdmission(env, DECODER.image(id, canonical, info.version), req.signal, {
    partition,
    estimateBytes,
  });
  const res = new Response(decoded.body, {
    headers: {
      "content-type": decoded.headers.get("content-type") ?? "application/octet-stream",
      "cache-control": `public, max-age=${config.imageMaxAge}`,
      link: `<${canonicalUrl}>;rel="canonical", <http://iiif.io/api/image/3/level1.json>;rel="profile"`,
      [VERSION_HEADER]: info.version,
    },
  });
  ctx.waitUntil(cache.put(key, res.clone()));
  return withCacheStatus(res, "miss");
}

function withCacheStatus(res: Response, status: "hit" | "miss"): Response {
  const out = new Response(res.body, res);
  out.headers.set(CACHE_STATUS_HEADER, status);
  return out;
}
