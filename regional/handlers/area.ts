// GET /v1/areas/{id}/bbox/{box}[/{w}x{h}].{ext} and /v1/areas/{id}/preview[/{w}x{h}].{ext}, and
// POST /v1/areas/{id}/feature[/{w}x{h}].{ext} with its GeoJSON body, with the area's canonical
// query and &version=V: a crop or a preview of a georeferenced COG or a mosaic, parsed (400)
// before the source is opened, its grid laid out (areas.ts) and its warp planned and costed
// before any pixel I/O, then admitted like a tile: within the DO's grant and the work budget, 413
// with what helps when it is too large. A feature's area is its polygons' bounds, masked outside
// them (GDAL's rasterization: pixel centres, even-odd).
import { badRequest, notFound } from "../../shared/errors";
import { canonicalArea, parseAreaRequest, splitFormat, type AreaRequest } from "../../shared/maps/area-request";
import type { Cog } from "../cog/cog";
import type { DecoderContext } from "../decoder";
import type { Answer } from "../http/answer";
import type { Handler, RouteRequest } from "../http/router";
import { boundsOfAll, featuresOf, type Geometry } from "../../shared/maps/feature";
import { areaGrid } from "../maps/areas";
import { ringsInGrid } from "../maps/feature-mask";
import type { OutputGrid } from "../maps/warp";
import { withMosaicArea } from "../mosaic/mosaic-area";
import { cogAsset, composeTile } from "../maps/compose-tile";
import { Mosaic } from "../mosaic/mosaic";
import type { PreparedDecode } from "../render/prepared-decode";
import { runDecode } from "./decode";
import { withSnapshot } from "./snapshot";

/** A box, `{box}.{ext}` in one segment or `{box}` then `{w}x{h}.{ext}`. */
export const bbox: Handler<{ id: string; file: string; box?: string }> = (request, decoder) => {
  const { params, query } = request;
  const [box, file] = params.box === undefined ? splitFormat(params.file) : [params.box, params.file];
  return areaDecode(params.id, parseAreaRequest("bbox", { bbox: box, file }, query), request, decoder);
};

/** The whole source, `preview.{ext}`. */
export const preview: Handler<{ id: string; file: string }> = (request, decoder) => {
  const { params, query } = request;
  if (!params.file.startsWith("preview.")) throw badRequest(`"${params.file.slice(0, 80)}" must be bbox/…, preview.{format} or preview/{width}x{height}.{format}`);
  return areaDecode(params.id, parseAreaRequest("preview", { file: params.file.slice("preview".length) }, query), request, decoder);
};

/** The whole source at a size, `preview` then `{w}x{h}.{ext}`. */
export const sizedPreview: Handler<{ id: string; file: string }> = (request, decoder) => {
  const { params, query } = request;
  return areaDecode(params.id, parseAreaRequest("preview", { file: params.file }, query), request, decoder);
};

/** A feature's area, `feature.{ext}`: its body (whose digest the signed path names) is its polygons. */
export const feature: Handler<{ id: string; file: string }> = (request, decoder) => {
  const { params, query, body } = request;
  if (!params.file.startsWith("feature.")) throw badRequest(`"${params.file.slice(0, 80)}" must be feature.{format} or feature/{width}x{height}.{format}`);
  return featureDecode(parseAreaRequest("feature", { file: params.file.slice("feature".length) }, query), body, request, decoder);
};

/** A feature's area at a size, `feature` then `{w}x{h}.{ext}`. */
export const sizedFeature: Handler<{ id: string; file: string }> = (request, decoder) =>
  featureDecode(parseAreaRequest("feature", { file: request.params.file }, request.query), request.body, request, decoder);

function featureDecode(req: AreaRequest, body: string | undefined, request: RouteRequest<{ id: string }>, decoder: DecoderContext): Promise<Answer> {
  if (body === undefined) throw badRequest("a feature's area needs its GeoJSON body");
  const geometries = featuresOf(JSON.parse(body) as unknown).features.map((f) => f.geometry);
  return areaDecode(request.params.id, { ...req, bbox: boundsOfAll(geometries) }, request, decoder, geometries);
}

function areaDecode(id: string, req: AreaRequest, { version, signal, grant }: RouteRequest<unknown>, decoder: DecoderContext, geometries?: Geometry[]): Promise<Answer> {
  return withSnapshot(decoder, id, version, signal, async (opened) => {
    if (!(opened instanceof Mosaic)) return runDecode(decoder, opened, await prepareArea(opened, id, req, signal, geometries), signal, grant);
    const what = `${id} ${canonicalArea(req)}`;
    return withMosaicArea(opened, id, req, decoder.mosaicTiles, signal, async (assets, grid) =>
      runDecode(decoder, opened, await composeTile(assets, painted(req, grid, geometries), what, signal), signal, grant),
    );
  });
}

/** An area of a COG, costed and ready to run; a feature's `geometries` mask it. */
export function prepareArea(cog: Cog, id: string, req: AreaRequest, signal: AbortSignal, geometries?: Geometry[]): Promise<PreparedDecode> {
  if (!cog.geo) throw notFound(`source "${id}" is not georeferenced: it is served as an IIIF image`);
  const grid = areaGrid(cog.levels[0], cog.geo, req);
  return composeTile([cogAsset(cog, req, id)], painted(req, grid, geometries), `${id} ${canonicalArea(req)}`, signal);
}

/** What the composition paints: the area on its grid, with a feature's polygons in the grid's pixels. */
const painted = (req: AreaRequest, grid: OutputGrid, geometries: Geometry[] | undefined) => ({
  ...req,
  grid,
  ...(geometries && { polygons: geometries.flatMap((g) => ringsInGrid(g, grid.crs, grid.affine)) }),
});
