// An area of a mosaic (a crop, a preview, statistics): laid out on the mosaic as on one source in
// Web Mercator (its bounds at its maxzoom's resolution), painted from the assets whose index
// entries meet it (404 when none does, as titiler-mosaicjson answers), each leased until the
// decode settles, as a mosaic's tile is.
import { notFound } from "../../shared/errors";
import { canonicalArea, type AreaRequest } from "../../shared/maps/area-request";
import { MOSAIC_TMS } from "../../shared/maps/mosaic-json";
import { areaGrid, gridBoundsIn, mosaicPlacement } from "../maps/areas";
import type { TileAsset } from "../maps/compose-tile";
import { setCrs } from "../maps/crs";
import type { OutputGrid } from "../maps/warp";
import type { Mosaic } from "./mosaic";
import { withMosaicAssets, type MosaicTileOptions } from "./mosaic-tile";

export function withMosaicArea<R>(
  mosaic: Mosaic,
  id: string,
  req: AreaRequest,
  options: MosaicTileOptions,
  signal: AbortSignal,
  use: (assets: TileAsset[], grid: OutputGrid) => Promise<R>,
): Promise<R> {
  const { full, geo } = mosaicPlacement(mosaic.info(id));
  const grid = areaGrid(full, geo, req);
  const refs = mosaic.index.assetsIn(gridBoundsIn(grid, setCrs(MOSAIC_TMS)), req);
  if (refs.length === 0) throw notFound(`no asset of mosaic "${id}" lies within the area`);
  return withMosaicAssets(id, refs, req, `area ${canonicalArea(req)}`, options, signal, (assets) => use(assets, grid));
}
