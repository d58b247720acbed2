// GET /bbox/{id}/{minx},{miny},{maxx},{maxy}[/{width}x{height}].{format} and
// GET /preview/{id}[/{width}x{height}].{format}: titiler's crops and previews of a georeferenced
// COG or a mosaic, as png, jpg, webp or a GeoTIFF. Parsed (400) before the source is looked up, then as a
// tile: the source may be seen (401), is a map (404), and its canonical area goes through the
// cache, admission and the decoder, costed first by the edge's coarse estimate (area-cost.ts).
import type { IRequest } from "itty-router";
import { coarseAreaCost } from "../../shared/maps/area-cost";
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
  // The id as the other routes' :id segment has it, so it is read (and its version followed) as theirs is.
  const named = Object.assign(req, { params: { ...req.params, id: encodeURIComponent(id) } });
  return followVersion((source) => areaDecode(source, area, named, env, ctx))(named, env, ctx);
}

async function areaDecode(source: SourceRef, area: AreaRequest, req: IRequest, env: Env, ctx: ExecutionContext): Promise<Response> {
  const config = edgeConfig(env);
  const { info, restriction } = await georeferencedSource(source, req, env, config, ctx);
  const canonical = canonicalArea(area);
  const bands = area.expression ? parseExpressions(area.expression, "any").bands.length : (area.bidx?.length ?? info.channels ?? ASSUMED_CHANNELS);
  return cachedDecode(
    {
      route: "area",
      id: source.id,
      canonical,
      version: info.version,
      headers: {
        "cache-control": cacheControlFor(bytesCacheControl(config, source), restriction),
        link: `<${publicBase(req, config)}/${publicArea(pathId(source), area)}>;rel="canonical"`,
      },
      cost: () => coarseCost(coarseAreaCost(info, area, bands), config),
      restriction,
      tooLargeHelp: AREA_WORK_HELP,
    },
    req,
    env,
    config,
    ctx,
  );
}
