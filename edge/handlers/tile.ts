// GET /tiles/{id}/{tileMatrixSetId}/{z}/{x}/{y}[@2x].{png|jpg|webp}
// Parse (400 before the source is looked up) → its stored style, if it names one → the source on
// the set → a tile outside its
// bounds is the transparent PNG, without a decode; any other is its canonical form through the
// cache, admission and the decoder, as an image is.
import type { IRequest } from "itty-router";
import { ASSUMED_CHANNELS, type Cost as Estimate } from "../../shared/cost";
import { algorithmBuffer } from "../../shared/maps/algorithms";
import { expressionNodes, parseExpressions } from "../../shared/maps/expression";
import { badRequest } from "../../shared/errors";
import { EMPTY_TILES } from "../../shared/maps/empty-tile";
import { coarseTileRead, composeWork, mosaicAssetBound, mosaicReadWork, mosaicTileCost, readWork, squareOf, tileCost, type TileRead } from "../../shared/maps/tile-cost";
import type { SourceInfo } from "../../shared/protocol";
import { tileBounds, tileMatrix, tileMatrixSet, webMercatorZoom } from "../../shared/maps/tile-matrix-sets";
import { ontoBounds, setWidth } from "../../shared/maps/antimeridian";
import { canonicalTile, parseTileRequest, tileSide, type TileRequest } from "../../shared/maps/tile-request";
import { segment } from "../../shared/path-segment";
import { VERSION_HEADER } from "../../shared/protocol";
import { coarseCost } from "../admission-client";
import { edgeConfig, type Env } from "../env";
import { withStoredStyle } from "../style-document";
import { bytesCacheControl, matchesIfNoneMatch, notModified } from "../http-cache";
import { cachedDecode, decodedEtag, type DecodeRequest } from "./cached-decode";
import type { SourceHandler } from "./follow-version";
import { mapSource } from "./map-source";
import { pathId, publicBase, type SourceRef } from "./params";
import { forClient } from "../request-id";
import { cacheControlFor } from "../access/gate";

export const tileHandler: SourceHandler = async (source: SourceRef, req: IRequest, env: Env, ctx: ExecutionContext) => {
  const config = edgeConfig(env);
  const { tileMatrixSetId, z, x, y } = req.params;
  const parsed = parseTileRequest(
    { tileMatrixSet: segment(tileMatrixSetId, "tile matrix set"), z: segment(z, "zoom"), x: segment(x, "column"), y: segment(y, "tile") },
    new URL(req.url).searchParams,
  );
  const tile = await withStoredStyle(parsed, env, config, ctx, forClient(req));
  const { info, tiling, restriction } = await mapSource(source, tile.tileMatrixSet, req, env, config, ctx);
  const tms = tileMatrixSet(tile.tileMatrixSet);
  // On the set's far west (from 180°W), a tile of a source across ±180° meets its bounds past the east edge.
  const bounds = ontoBounds(tileBounds(tms, tile.z, tile.x, tile.y), tiling.bounds, setWidth(tms));
  const read = coarseTileRead(info, tiling, bounds, tileMatrix(tms, tile.z)!.cellSize / tile.scale);
  const canonical = canonicalTile(tile);
  const decode: DecodeRequest = {
    route: "tile",
    id: source.id,
    canonical,
    version: info.version,
    headers: {
      "cache-control": cacheControlFor(bytesCacheControl(config, source), restriction),
      link: `<${publicBase(req, config)}/tiles/${pathId(source)}/${canonical}>;rel="canonical"`,
    },
    cost: () => coarseCost(coarseTileCost(tile, info, read), config),
    restriction,
  };
  if (!read) return emptyTile(decode, req, tile.scale);
  return cachedDecode(decode, req, env, config, ctx);
};

/**
 * The edge's estimate before any decode, by the decoder's formula: the bands the request reads
 * (its expression's, its bidx, else the source's channels) as 8-bit samples, the read mapped
 * linearly (tile-cost.ts), a mosaic's every possible asset; the decoder tells the DO its precise one.
 */
function coarseTileCost(tile: TileRequest, info: SourceInfo, read: TileRead | undefined): Estimate {
  const program = tile.expression ? parseExpressions(tile.expression, "any") : undefined;
  const bands = program?.bands.length ?? tile.bidx?.length ?? info.channels ?? ASSUMED_CHANNELS;
  // An algorithm's kernel reads beyond the tile's edges: the warps paint the grown square.
  const side = tileSide(tile) + 2 * algorithmBuffer(tile.algorithm);
  const compose = (assets: number) =>
    composeWork({
      assets,
      size: squareOf(side),
      components: program?.channels.length ?? bands,
      nodes: program ? expressionNodes(program) : 0,
      pixelSelection: tile.pixelSelection ?? "first",
      format: tile.format,
      algorithm: tile.algorithm,
    });
  if (info.mosaic) {
    const { mosaic } = info;
    // The index's zooms are WebMercatorQuad's: another set's tile counts at the zoom of its scale.
    const z = webMercatorZoom(tileMatrixSet(tile.tileMatrixSet), tile.z);
    const work = mosaicReadWork(mosaic, z, side, bands, tile.resampling) + compose(mosaicAssetBound(mosaic, z));
    return { bytes: mosaicTileCost(mosaic, z, side, bands), work };
  }
  const shape = { tileWidth: info.tileWidth, tileHeight: info.tileHeight, bands, bytesPerSample: 1 };
  return { bytes: tileCost(shape, read, squareOf(side)), work: readWork({ ...shape, codec: info.codec }, read, squareOf(side), tile.resampling) + compose(1) };
}

/** Outside the data: the transparent PNG (for any format), with the tile's ETag and headers. */
async function emptyTile(tile: DecodeRequest, req: IRequest, scale: TileRequest["scale"]): Promise<Response> {
  const etag = await decodedEtag(tile);
  if (matchesIfNoneMatch(req, etag)) return notModified(etag, tile.headers);
  return new Response(EMPTY_TILES[scale], {
    headers: { ...tile.headers, "content-type": "image/png", etag, [VERSION_HEADER]: tile.version },
  });
}

/**
 * Any other path under /tiles/{id}/: segments missing or extra (a "\\" that URL parsing read as
 * "/" makes one more) make a malformed request, not an unknown resource.
 */
export function misshapenTileHandler(req: IRequest): never {
  const rest = new URL(req.url).pathname.split("/").slice(3).join("/");
  throw badRequest(
    `map request "${rest}" must be {tileMatrixSetId}/{z}/{x}/{y}[@2x].{png|jpg|webp}, {tileMatrixSetId}/tilejson.json or {tileMatrixSetId}/WMTSCapabilities.xml`,
  );
}
