// GET /bbox/{id}/{minx},{miny},{maxx},{maxy}[/{width}x{height}].{format},
// POST /feature/{id}[/{width}x{height}].{format} (a GeoJSON Feature or FeatureCollection) and
// GET /preview/{id}[/{width}x{height}].{format}: titiler's crops and previews of a georeferenced
// COG or a mosaic, as png, jpg, webp or a GeoTIFF. Parsed (400) before the source is looked up
// (a feature's body read within BODY_READ_TIMEOUT and 1 MiB, validated and canonicalised, its
// SHA-256 naming the answer), then as a tile: the source may be seen (401), is a map (404), and
// its canonical area goes through the cache, admission and the decoder, costed first by the
// edge's coarse estimate (area-cost.ts).
import type { IRequest } from "itty-router";
import { coarseAreaCost } from "../../shared/maps/area-cost";
import { boundsOfAll, MAX_FEATURE_BODY_BYTES, parseFeatureBody, type FeatureBody } from "../../shared/maps/feature";
import { BODY_DIGEST_PARAM } from "../../shared/protocol";
import { readBodyWithin } from "../request-body";
import { AREA_WORK_HELP } from "../../shared/maps/tile-cost";
import { canonicalArea, parseAreaRequest, publicArea, splitFormat, type AreaPathParams, type AreaRequest } from "../../shared/maps/area-request";
import { parseExpressions } from "../../shared/maps/expression";
import { ASSUMED_CHANNELS } from "../../shared/cost";
import { segment } from "../../shared/path-segment";
import { coarseCost } from "../admission-client";
import { cacheControlFor } from "../access/gate";
import { edgeConfig, type Env } from "../env";
import { bytesCacheControl } from "../http-cache";
import { cachedDecode } from "./cached-decode";
import { followVersion } from "./follow-version";
import { georeferencedSource } from "./map-source";
import { pathId, publicBase, type SourceRef } from "./params";

/** /bbox/{id}/{box}.{format} or /bbox/{id}/{box}/{w}x{h}.{format}. */
export const bboxHandler = followVersion((source, req, env, ctx) => {
  const { box, file } = req.params;
  const [bbox, rest] = file === undefined ? splitFormat(segment(box, "box")) : [segment(box, "box"), segment(file, "size")];
  return areaDecode(source, parseAreaRequest("bbox", { bbox, file: rest }, new URL(req.url).searchParams), req, env, ctx);
});

/** /preview/{id}/{w}x{h}.{format}. */
export const sizedPreviewHandler = followVersion((source, req, env, ctx) => {
  const path: AreaPathParams = { file: segment(req.params.file, "size") };
  return areaDecode(source, parseAreaRequest("preview", path, new URL(req.url).searchParams), req, env, ctx);
});

/** /preview/{id}.{format}: the id and the format share the segment, split at its last dot. */
export function previewHandler(req: IRequest, env: Env, ctx: ExecutionContext): Promise<Response> {
  const [id, file] = splitFormat(segment(req.params.file, "preview"));
  const area = parseAreaRequest("preview", { file }, new URL(req.url).searchParams);
  return followNamed(id, req, env, ctx, (source, named) => areaDecode(source, area, named, env, ctx));
}

/**
 * Runs `decode` on source `id` taken from a segment it shares with the format, given to it as
 * the other routes' :id segment, so it is read (and its version followed) as theirs is.
 */
function followNamed(id: string, req: IRequest, env: Env, ctx: ExecutionContext, decode: (source: SourceRef, named: IRequest) => Promise<Response>): Promise<Response> {
  const named = Object.assign(req, { params: { ...req.params, id: encodeURIComponent(id) } });
  return followVersion((source) => decode(source, named))(named, env, ctx);
}

/** POST /feature/{id}.{format}, and /feature/{id}/{w}x{h}.{format}: the body is read once, before the source is followed. */
export async function featureHandler(req: IRequest, env: Env, ctx: ExecutionContext): Promise<Response> {
  const sized = req.params.id !== undefined;
  const [id, file] = sized ? [segment(req.params.id, "identifier"), segment(req.params.file, "size")] : splitFormat(segment(req.params.file, "feature"));
  const area = parseAreaRequest("feature", { file }, new URL(req.url).searchParams);
  const body = await parseFeatureBody(await readBodyWithin(req, edgeConfig(env).admission.bodyReadTimeoutMs, MAX_FEATURE_BODY_BYTES));
  const bbox = boundsOfAll(body.features.map((f) => f.geometry));
  return followNamed(id, req, env, ctx, (source, named) => areaDecode(source, { ...area, bbox }, named, env, ctx, body));
}

async function areaDecode(source: SourceRef, area: AreaRequest, req: IRequest, env: Env, ctx: ExecutionContext, feature?: FeatureBody): Promise<Response> {
  const config = edgeConfig(env);
  const { info, restriction } = await georeferencedSource(source, req, env, config, ctx);
  // A feature's answer is named by its body's digest: the polygons are no part of the path.
  const path = canonicalArea(area);
  const canonical = feature ? `${path}${path.includes("?") ? "&" : "?"}${BODY_DIGEST_PARAM}=${feature.digest}` : path;
  const bands = area.expression ? parseExpressions(area.expression, "any").bands.length : (area.bidx?.length ?? info.channels ?? ASSUMED_CHANNELS);
  return cachedDecode(
    {
      route: "area",
      id: source.id,
      canonical,
      version: info.version,
      headers: {
        "cache-control": cacheControlFor(bytesCacheControl(config, source), restriction),
        ...(!feature && { link: `<${publicBase(req, config)}/${publicArea(pathId(source), area)}>;rel="canonical"` }),
      },
      // Costed as the feature's box: the mask's own cost is small beside its read.
      cost: () => coarseCost(coarseAreaCost(info, feature ? { ...area, kind: "bbox" } : area, bands), config),
      restriction,
      tooLargeHelp: AREA_WORK_HELP,
      body: feature?.canonical,
    },
    req,
    env,
    config,
    ctx,
  );
}
