// GET /iiif/{2,3}/{id}/{region}/{size}/{rotation}/{quality}.{format}
// Parse → resolve against cached metadata → cache key naming the pixels (+ pinned version) →
// Cache API hit, or admission → decoder, then store.
import type { IRequest } from "itty-router";
import { badRequest, notFound } from "../../shared/errors";
import { parseImageRequest, type ApiVersion, type ImageRequest } from "../../shared/iiif/image-request";
import { PROFILE_URI, servedLimits } from "../../shared/iiif/info";
import { canonicalParts, pixelParts, resolveImageRequest } from "../../shared/iiif/resolve";
import { ASSUMED_CHANNELS, estimateRequest, IMAGE_WORK_HELP, tooMuchWork } from "../../shared/cost";
import { imageWork } from "../../shared/work";
import { coarseCost } from "../admission-client";
import { edgeConfig, type Env } from "../env";
import { bytesCacheControl } from "../http-cache";
import { imageSourceInfo } from "../source-info";
import { segment } from "../../shared/path-segment";
import { cachedDecode } from "./cached-decode";
import type { SourceHandler } from "./follow-version";
import { serviceId, type SourceRef } from "./params";
import { forClient } from "../request-id";

export const imageHandler =
  (version: ApiVersion): SourceHandler =>
  async (source: SourceRef, req: IRequest, env: Env, ctx: ExecutionContext): Promise<Response> => {
    const config = edgeConfig(env);
    const { id } = source;
    const parsed = parseSegments(req.params, version);
    const info = await imageSourceInfo(source, env, config, ctx, forClient(req));
    const limits = { width: info.width, height: info.height, ...servedLimits(config.limits, info, config.admission.requestTimeoutMs) };
    const resolved = resolveImageRequest(parsed, limits);
    // The 3.0 form with the size spelled out names the pixels whatever the API version and the
    // size limits: 2.1 and 3.0 requests for the same image share one cache entry, one ETag and
    // one decoder path, and the decoder (which does not know the operator's limits) renders that size.
    const pixels = pixelParts(resolved, limits);
    const headers = {
      "cache-control": bytesCacheControl(config, source),
      link: `<${serviceId(req, config, version, source)}/${canonicalParts(resolved, limits, version)}>;rel="canonical", <${PROFILE_URI[version]}>;rel="profile"`,
    };
    // Coarse tile/full classification from the cached metadata (its channels and codec once a
    // decoder has said them); the decoder tells the DO its precise estimate.
    const channels = info.channels ?? ASSUMED_CHANNELS;
    const work = imageWork({ ...info, ...resolved, channels });
    // With the decoder's channels and codec this work is the decoder's own estimate, and what no
    // grant can cover is refused here: a flood of such URLs never reaches the DO, through which
    // every admission of its shard passes, nor a decoder.
    const limitMs = config.admission.requestTimeoutMs;
    if (info.channels !== undefined && work > limitMs) throw tooMuchWork(work, limitMs, IMAGE_WORK_HELP);
    const cost = () => coarseCost({ bytes: estimateRequest(info, resolved, channels), work }, config);
    return cachedDecode({ route: "image", id, canonical: pixels, version: info.version, headers, cost }, req, env, config, ctx);
  };

/** An image request's parameters from its path segments, URL-decoded; 400 when one is malformed. */
function parseSegments(segments: Record<string, string | undefined>, version: ApiVersion): ImageRequest {
  const { region, size, rotation, qf } = segments;
  return parseImageRequest(
    {
      region: segment(region, "region"),
      size: segment(size, "size"),
      rotation: segment(rotation, "rotation"),
      qualityFormat: segment(qf, "quality.format"),
    },
    version,
  );
}

/** The segments of an image request after its identifier: {region}/{size}/{rotation}/{quality}.{format}. */
const IMAGE_SEGMENTS = 4;

/**
 * Any other path under /iiif/{2,3}/{id}/. More segments than the grammar, or an info.json after
 * more than one, name an identifier with an unescaped "/": no image has such an identifier, so
 * it is unknown (404), as the IIIF validator expects, once the image parameters it ends with are
 * well formed. A malformed one is 400 first, as under any identifier: a "\\" in a parameter,
 * which URL parsing reads as "/", splits it in two, as in some of the validator's random ones.
 * Segments missing make a malformed request (400).
 */
export const misshapenImageHandler =
  (version: ApiVersion) =>
  (req: IRequest): never => {
    const segments = new URL(req.url).pathname.split("/").slice(3);
    const info = segments.at(-1) === "info.json";
    const identifier = info ? segments.slice(0, -1) : segments.slice(0, -IMAGE_SEGMENTS);
    if (identifier.length > 1) {
      if (!info) {
        const [region, size, rotation, qf] = segments.slice(-IMAGE_SEGMENTS);
        parseSegments({ region, size, rotation, qf }, version);
      }
      throw notFound(`no image "${identifier.map(decodeSegment).join("/")}": source ids are file names, never with a "/"`);
    }
    throw badRequest(`image request "${segments.slice(1).join("/")}" must be {region}/{size}/{rotation}/{quality}.{format}`);
  };

/** A path segment as text, or as it came when it does not decode. */
function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
