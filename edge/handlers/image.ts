// GET /iiif/{2,3}/{id}/{region}/{size}/{rotation}/{quality}.{format}
// Parse → resolve against cached metadata → cache key naming the pixels (+ pinned version) →
// Cache API hit, or admission → decoder, then store.
import type { IRequest } from "itty-router";
import { badRequest, HttpError, notFound } from "../../shared/errors";
import { parseImageRequest, type ApiVersion, type ImageRequest } from "../../shared/iiif/image-request";
import { PROFILE_URI, servedLimits } from "../../shared/iiif/info";
import { canonicalParts, pixelParts, resolveImageRequest, type ImageLimits } from "../../shared/iiif/resolve";
import type { SourceInfo } from "../../shared/protocol";
import { degradedInfo, onSource } from "../access/degraded";
import { assertMaySee, cacheControlFor, degradedRestriction, type Lookup } from "../access/gate";
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
    const client = forClient(req);
    const info = await imageSourceInfo(source, env, config, ctx, client);
    const limits = { width: info.width, height: info.height, ...servedLimits(config.limits, info, config.admission.requestTimeoutMs) };
    // Who may see it is settled before any cache is looked in (access/gate.ts).
    const { resolved, canonical, restriction } = source.degraded
      ? await degradedRequest(parsed, source, info, req, { env, config, ctx, client }, version)
      : await wholeRequest(parsed, source, info, limits, req, { env, config, ctx, client }, version);
    // The 3.0 form with the size spelled out names the pixels whatever the API version and the
    // size limits: 2.1 and 3.0 requests for the same image share one cache entry, one ETag and
    // one decoder path, and the decoder (which does not know the operator's limits) renders that size.
    const pixels = pixelParts(resolved, limits);
    const headers = {
      "cache-control": cacheControlFor(bytesCacheControl(config, source), restriction),
      link: `<${serviceId(req, config, version, source)}/${canonical}>;rel="canonical", <${PROFILE_URI[version]}>;rel="profile"`,
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
    return cachedDecode({ route: "image", id, canonical: pixels, version: info.version, headers, cost, restriction }, req, env, config, ctx);
  };

/** A request for the source's own image: resolved against its limits, once the request may see it. */
async function wholeRequest(parsed: ImageRequest, source: SourceRef, info: SourceInfo, limits: ImageLimits, req: Request, lookup: Lookup, version: ApiVersion) {
  const restriction = await assertMaySee(source, info, req, lookup);
  const resolved = resolveImageRequest(parsed, limits);
  return { resolved, canonical: canonicalParts(resolved, limits, version), restriction };
}

/** A request for the degraded image (access/degraded.ts): open to anyone, at no finer detail than it has. */
async function degradedRequest(parsed: ImageRequest, source: SourceRef, info: SourceInfo, req: Request, lookup: Lookup, version: ApiVersion) {
  const { degradedWidth } = await degradedRestriction(source, info, lookup);
  const small = degradedInfo(info, degradedWidth);
  const limits = { width: small.width, height: small.height, ...servedLimits(lookup.config.limits, small, lookup.config.admission.requestTimeoutMs) };
  const asked = resolveImageRequest(parsed, limits);
  const whole = { ...source, degraded: undefined };
  const finer = () =>
    new HttpError("unauthorized", `the degraded image of "${source.id}" is ${small.width} pixels wide and has no finer detail: see its probe service ${serviceId(req, lookup.config, 3, whole)}/probe`);
  return { resolved: onSource(asked, limits, info, finer), canonical: canonicalParts(asked, limits, version), restriction: undefined };
}

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
 * Any other path under /iiif/{2,3}/{id}/. More segments than the grammar, or an info.json (or a
 * manifest.json) after more than one, name an identifier with an unescaped "/": no image has such an identifier, so
 * it is unknown (404), as the IIIF validator expects, once the image parameters it ends with are
 * well formed. A malformed one is 400 first, as under any identifier: a "\\" in a parameter,
 * which URL parsing reads as "/", splits it in two, as in some of the validator's random ones.
 * Segments missing make a malformed request (400).
 */
export const misshapenImageHandler =
  (version: ApiVersion) =>
  (req: IRequest): never => {
    const segments = new URL(req.url).pathname.split("/").slice(3);
    const info = segments.at(-1) === "info.json" || segments.at(-1) === "manifest.json";
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
