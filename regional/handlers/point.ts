// GET /v1/point/{id}/{x},{y}?{query}&version=V: the values at a point of a georeferenced COG or a
// mosaic, parsed (400) before the source is opened, costed as one full-level block an asset and
// run as every decode runs (handlers/decode.ts). A mosaic's assets there are those its index lists
// for the tile at its maxzoom holding the point.
import { HttpError, notFound } from "../../shared/errors";
import { MOSAIC_TMS } from "../../shared/maps/mosaic-json";
import { canonicalPoint, parsePointRequest, type PointRequest } from "../../shared/maps/point-request";
import { tileAt, tileMatrix, tileMatrixSet, zoomRange } from "../../shared/maps/tile-matrix-sets";
import type { Cog } from "../cog/cog";
import type { DecoderContext } from "../decoder";
import type { Handler } from "../http/router";
import { cogAsset } from "../maps/compose-tile";
import { conversion, setCrs } from "../maps/crs";
import { coordinateDefinition, preparePoint } from "../maps/point";
import { Mosaic } from "../mosaic/mosaic";
import { withLeasedAssets } from "../mosaic/mosaic-tile";
import { runDecode } from "./decode";
import { withSnapshot } from "./snapshot";

type PointParams = { id: string; coords: string };

export const point: Handler<PointParams> = ({ params, query, version, signal, grant }, decoder) => {
  const req = parsePointRequest(params.coords, query);
  const what = `${params.id} point ${canonicalPoint(req)}`;
  return withSnapshot(decoder, params.id, version, signal, async (opened) => {
    if (opened instanceof Mosaic) return mosaicPoint(decoder, opened, params.id, req, what, signal, grant);
    checkMap(opened, params.id);
    return runDecode(decoder, opened, preparePoint([cogAsset(opened, { ...req, allBands: true }, params.id)], req, what, false), signal, grant);
  });
};

function checkMap(cog: Cog, id: string): void {
  if (!cog.geo) throw notFound(`source "${id}" is not georeferenced`);
}

function mosaicPoint(decoder: DecoderContext, mosaic: Mosaic, id: string, req: PointRequest, what: string, signal: AbortSignal, grant: Parameters<typeof runDecode>[4]) {
  const tile = holdingTile(mosaic, req);
  const refs = tile ? mosaic.index.assetsFor({ ...req, ...tile }) : [];
  if (refs.length === 0) throw notFound(`point (${req.x}, ${req.y}) is outside mosaic "${id}"`);
  const { maxAssets } = decoder.mosaicTiles;
  if (refs.length > maxAssets) throw new HttpError("too_large", `the point of mosaic "${id}" reads ${refs.length} assets, more than the ${maxAssets} a request may`);
  return withLeasedAssets(id, refs, { ...req, allBands: true }, decoder.mosaicTiles, signal, async (assets) =>
    runDecode(decoder, mosaic, preparePoint(assets, req, what, true), signal, grant),
  );
}

/** The WebMercatorQuad tile at the mosaic's maxzoom holding the point (its index's assets are listed by tile). */
function holdingTile(mosaic: Mosaic, req: PointRequest) {
  const [x, y] = conversion(coordinateDefinition(req), setCrs(MOSAIC_TMS).definition)(req.x, req.y);
  const tms = tileMatrixSet(MOSAIC_TMS);
  const z = Math.min(mosaic.index.maxzoom, zoomRange(tms)[1]);
  // Outside the matrix (a pole, NaN): no tile, so no asset.
  const tile = tileAt(tileMatrix(tms, z)!, x, y);
  return tile && { tileMatrixSet: MOSAIC_TMS, z, ...tile };
}
