// What TileJSON and WMTS capabilities both describe: where a source's tiles on one set are, as a
// URL template. Their query carries the tile options (bidx, rescale, nodata, resampling) and, as
// titiler names them, the tiles' format (tile_format, default png) and scale (tile_scale, 1 or 2):
// validated exactly as a tile's, and written into the template canonically.
import { badRequest } from "../../shared/errors";
import { tileMatrixSet, zoomRange } from "../../shared/maps/tile-matrix-sets";
import { parseTileRequest, tileQuery, type TileRequest } from "../../shared/maps/tile-request";
import { pathId, type SourceRef } from "./params";

const FORMAT_KEY = "tile_format";
const SCALE_KEY = "tile_scale";

/** The options every tile of the template has: a tile request whose position is left open. */
export function parseTileTemplate(tileMatrixSetId: string, query: URLSearchParams): TileRequest {
  const format = single(query, FORMAT_KEY) ?? "png";
  if (!/^[a-z]{1,8}$/.test(format)) throw badRequest(`${FORMAT_KEY} "${format}" is not one of png, jpg, webp`);
  const scale = single(query, SCALE_KEY) ?? "1";
  if (scale !== "1" && scale !== "2") throw badRequest(`${SCALE_KEY} "${scale}" must be 1 (256 px tiles) or 2 (512 px)`);
  const options = new URLSearchParams([...query].filter(([key]) => key !== FORMAT_KEY && key !== SCALE_KEY));
  // The set's first tile stands for every tile: parsing it validates the options as each tile's will be.
  const [first] = zoomRange(tileMatrixSet(tileMatrixSetId));
  const y = `0${scale === "2" ? "@2x" : ""}.${format}`;
  return parseTileRequest({ tileMatrixSet: tileMatrixSetId, z: String(first), x: "0", y }, options);
}

/** The template's URL, `position` standing for z/x/y in the client's placeholders. */
export function tileUrlTemplate(base: string, source: SourceRef, tile: TileRequest, position: string): string {
  const query = tileQuery(tile);
  return `${base}/tiles/${pathId(source)}/${tile.tileMatrixSet}/${position}${tile.scale === 2 ? "@2x" : ""}.${tile.format}${query ? `?${query}` : ""}`;
}

/** The query that asks a document for this template again: its options, then format and scale when not the defaults. */
export function templateQuery(tile: TileRequest): string {
  const parts = [tileQuery(tile)];
  if (tile.format !== "png") parts.push(`${FORMAT_KEY}=${tile.format}`);
  if (tile.scale !== 1) parts.push(`${SCALE_KEY}=${tile.scale}`);
  const query = parts.filter(Boolean).join("&");
  return query ? `?${query}` : "";
}

function single(query: URLSearchParams, key: string): string | undefined {
  const values = query.getAll(key);
  if (values.length > 1) throw badRequest(`query parameter "${key}" is given ${values.length} times; give it once`);
  return values[0];
}
