// GET /iiif/{2,3}/{id}/{region}/{size}/{rotation}/{quality}.{format}
// Parse → resolve against cached metadata → cache key naming the pixels (+ pinned version) →
// Cache API hit, or admission → decoder, then store.
import type { IRequest } from "itty-router";
import { badRequest, errorResponse, HttpError } from "../../shared/errors";
import { parseImageRequest, type ApiVersion } from "../../shared/iiif/image-request";
import { PROFILE_URI, servedLimits } from "../../shared/iiif/info";
import { canonicalParts, pixelParts, resolveImageRequest } from "../../shared/iiif/resolve";
import { ASSUMED_CHANNELS, classify, estimateRequest } from "../../shared/cost";
import { DECODER, VERSION_HEADER } from "../../shared/protocol";
import { viaAdmission, type Cost } from "../admission-client";
import { edgeConfig, type EdgeConfig, type Env } from "../env";
import {
  bytesCacheControl,
  errorCacheControl,
  imageCacheControl,
  isPermanentError,
  matchesIfNoneMatch,
  notModified,
  strongEtag,
} from "../http-cache";
import { sourceInfo } from "../source-info";
import { segment } from "../../shared/path-segment";
import type { SourceHandler } from "./follow-version";
import { serviceId, type SourceRef } from "./params";

export const CACHE_STATUS_HEADER = "x-tessera-cache";

/** The Cache API key of an image: not a routable URL, so only this handler can fill it. */
export const imageCacheKey = (origin: string, id: string, canonical: string, version: string) =>
  `${origin}/__tessera/image/${encodeURIComponent(id)}/${canonical}?version=${encodeURIComponent(version)}`;

export const imageHandler =
  (version: ApiVersion): SourceHandler =>
  async (source: SourceRef, req: IRequest, env: Env, ctx: ExecutionContext): Promise<Response> => {
    const config = edgeConfig(env);
    const { id } = source;
    const { region, size, rotation, qf } = req.params;
    const parsed = parseImageRequest(
      {
        region: segment(region, "region"),
        size: segment(size, "size"),
        rotation: segment(rotation, "rotation"),
        qualityFormat: segment(qf, "quality.format"),
      },
      version,
    );
    const info = await sourceInfo(source, env, config, ctx, req.signal);
    const limits = { width: info.width, height: info.height, ...servedLimits(config.limits, info) };
    const resolved = resolveImageRequest(parsed, limits);
    // The 3.0 form with the size spelled out names the pixels whatever the API version and the
    // size limits: 2.1 and 3.0 requests for the same image share one cache entry, one ETag and
    // one decoder path, and the decoder (which does not know the operator's limits) renders that size.
    const pixels = pixelParts(resolved, limits);
    const headers = {
      "cache-control": bytesCacheControl(config, source),
      link: `<${serviceId(req, config, version, source)}/${canonicalParts(resolved, limits, version)}>;rel="canonical", <${PROFILE_URI[version]}>;rel="profile"`,
    };
    const etag = await strongEtag(id, info.version, pixels);
    if (matchesIfNoneMatch(req, etag)) return notModified(etag, headers);

    const key = imageCacheKey(new URL(req.url).origin, id, pixels, info.version);
    const cache = caches.default;
    const hit = await cache.match(key);
    if (hit) return answer(hit, headers, "hit");

    // Coarse tile/full classification; the decoder tells the DO its precise estimate.
    const estimateBytes = estimateRequest(info, resolved, ASSUMED_CHANNELS);
    const cost = { partition: classify(estimateBytes, config.admission.largeDecodeThresholdBytes), estimateBytes };
    const stored = await decode(env, config, DECODER.image(id, pixels, info.version), req.signal, etag, cost);
    ctx.waitUntil(cache.put(key, stored.clone()));
    return answer(stored, headers, "miss");
  };

/**
 * Any other path under /iiif/{2,3}/{id}/: an image request with segments missing or extra (a "\\"
 * that URL parsing read as "/" makes one more) is malformed, not an unknown resource.
 */
export function misshapenImageHandler(req: IRequest): never {
  const rest = new URL(req.url).pathname.split("/").slice(4).join("/");
  throw badRequest(`image request "${rest}" must be {region}/{size}/{rotation}/{quality}.{format}`);
}

/** The decoder's answer as it is stored: bytes, type, ETag; or a client error, kept briefly. */
async function decode(env: Env, config: EdgeConfig, path: string, signal: AbortSignal, etag: string, cost: Cost) {
  try {
    const decoded = await viaAdmission(env, path, signal, cost);
    return new Response(decoded.body, {
      headers: {
        "content-type": decoded.headers.get("content-type") ?? "application/octet-stream",
        "cache-control": imageCacheControl(config),
        [VERSION_HEADER]: decoded.headers.get(VERSION_HEADER) ?? "",
        etag,
      },
    });
  } catch (err) {
    // A 4xx or 501 from the decoder is about this exact request: the same request gets it
    // again, so it is stored (briefly). Timeouts and overloads are not, nor a version that is
    // gone (the request is answered again from the current version).
    if (err instanceof HttpError && isPermanentError(err.status) && err.kind !== "version_gone") {
      return errorResponse(err, { "cache-control": errorCacheControl(config) });
    }
    throw err;
  }
}

function answer(stored: Response, headers: Record<string, string>, status: "hit" | "miss"): Response {
  const out = new Response(stored.body, stored);
  if (stored.ok) for (const [k, v] of Object.entries(headers)) out.headers.set(k, v);
  out.headers.set(CACHE_STATUS_HEADER, status);
  return out;
}
