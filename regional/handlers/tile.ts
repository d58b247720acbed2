// GET /v1/tiles/{id}/{tileMatrixSet}/{z}/{x}/{y}[@2x].{ext}?{query}&version=V: a web-map tile of
// a georeferenced source or a mosaic, parsed (400) before the source is opened. Everything else
// that can be refused is refused before any pixel I/O: a source that is not georeferenced (404),
// a band past its count, float data without a rescale, or rescale ranges that are not one per
// band (400). Its cost is the window the warp will really
// read, so it is admitted like an image: within the DO's grant, the work budget, 413 or
// GrantExceeded. A COG's tile is a mosaic of one asset (maps/compose-tile.ts).
import { notFound } from "../../shared/errors";
import { canonicalTile, parseTileRequest, type TileRequest } from "../../shared/maps/tile-request";
import type { Cog } from "../cog/cog";
import type { Handler } from "../http/router";
import { cogAsset, composeTile } from "../maps/compose-tile";
import { Mosaic } from "../mosaic/mosaic";
import { withMosaicTile } from "../mosaic/mosaic-tile";
import type { PreparedDecode } from "../render/prepared-decode";
import { runDecode } from "./decode";
import { withSnapshot } from "./snapshot";

type TileParams = { id: string; tileMatrixSet: string; z: string; x: string; y: string };

export const tile: Handler<TileParams> = ({ params, query, version, signal, grant }, decoder) => {
  const { id, ...path } = params;
  const req = parseTileRequest(path, query);
  return withSnapshot(decoder, id, version, signal, async (opened) =>
    opened instanceof Mosaic
      ? withMosaicTile(opened, id, req, decoder.mosaicTiles, signal, (prepared) => runDecode(decoder, opened, prepared, signal, grant))
      : runDecode(decoder, opened, await prepareTile(opened, id, req, signal), signal, grant),
  );
};

/** A COG's tile decode, costed and ready to run on the opened source. */
function prepareTile(cog: Cog, id: string, req: TileRequest, signal: AbortSignal): Promise<PreparedDecode> {
  if (!cog.geo) throw notFound(`source "${id}" is not georeferenced`);
  return composeTile([cogAsset(cog, req, id)], req, `${id} ${canonicalTile(req)}`, signal);
}
