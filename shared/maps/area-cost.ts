// What the edge can say of an area (a crop, a preview) before any decode, by the tiles' formula:
// the output's size (asked, or the source's pixels the area covers, shrunk to max_size), the
// level chooseLevel reads for it, and the window the area covers there, mapped linearly from the
// source's bounds in lon/lat or Web Mercator (the two CRSs the edge knows bounds in); a box in
// another CRS is costed as the whole source, a mosaic's as one asset's. The decoder's precise cost
// (every asset's real window) replaces it on admission.
import type { Cost } from "../cost";
import type { Rect } from "../iiif/resolve";
import { chooseLevel, windowAtLevel } from "../levels";
import type { SourceInfo, SourceTiling } from "../protocol";
import { LON_LAT_NAME, type AreaRequest } from "./area-request";
import { ontoBounds, setWidth } from "./antimeridian";
import { tileMatrixSet } from "./tile-matrix-sets";
import { composeWork, memberRead, readWork, tileCost, type OutputSize, type TileCostShape, type TileRead } from "./tile-cost";

/** The bounds the edge knows a box's CRS by: lon/lat, or Web Mercator's. */
const KNOWN_BOUNDS: Record<string, string> = { [LON_LAT_NAME]: "WorldCRS84Quad", "EPSG:3857": "WebMercatorQuad" };

export function coarseAreaCost(info: SourceInfo, req: AreaRequest, bands: number): Cost {
  const full = info.levels[0];
  const covered = coveredFraction(info, req);
  if (!covered) return { bytes: 0, work: 0 };
  const region = { x: covered[0] * full.width, y: covered[1] * full.height, w: (covered[2] - covered[0]) * full.width, h: (covered[3] - covered[1]) * full.height };
  const size: OutputSize =
    req.width !== undefined ? { width: req.width, height: req.height! } : fit(Math.max(1, Math.round(region.w)), Math.max(1, Math.round(region.h)), req.maxSize);
  const compose = composeWork({ assets: 1, size, components: bands, nodes: 0, pixelSelection: "first", format: req.format, algorithm: req.algorithm });
  // A mosaic's members' headers are unread here: one member's assumed read, a lower bound.
  const { shape, read } = info.mosaic ? memberRead(size, bands) : coarseRead(info, region, size, bands);
  return { bytes: tileCost(shape, read, size), work: readWork(shape, read, size, req.resampling) + compose };
}

/** The level chooseLevel reads `region` at for `size`, and the window it covers there. */
function coarseRead(info: SourceInfo, region: Rect, size: OutputSize, bands: number): { shape: TileCostShape; read: TileRead } {
  const level = chooseLevel(info.levels, region, size.width, size.height);
  return {
    shape: { tileWidth: info.tileWidth, tileHeight: info.tileHeight, bands, bytesPerSample: 1, codec: info.codec },
    read: { level, window: windowAtLevel(info.levels[0], info.levels[level], region) },
  };
}

/** `width` × `height` within `maxSize` on its longest side (rounded up), as the decoder lays it out. */
export function fit(width: number, height: number, maxSize: number | undefined): OutputSize {
  if (maxSize === undefined || Math.max(width, height) <= maxSize) return { width, height };
  return width >= height
    ? { width: maxSize, height: Math.max(1, Math.ceil((maxSize * height) / width)) }
    : { width: Math.max(1, Math.ceil((maxSize * width) / height)), height: maxSize };
}

/**
 * The part of the source the area covers, as fractions [x0, y0, x1, y1] of its width and height
 * from the top-left; undefined when a box misses it.
 */
function coveredFraction(info: SourceInfo, req: AreaRequest): [number, number, number, number] | undefined {
  const setId = KNOWN_BOUNDS[req.coordCrs];
  const tiling: SourceTiling | undefined = setId ? info.georeference?.tiling[setId] : undefined;
  if (req.kind === "preview" || !req.bbox || !tiling) return [0, 0, 1, 1];
  const [sx0, sy0, sx1, sy1] = tiling.bounds;
  // On the set's far west (from 180°W), a box over a source across ±180° meets its bounds past the east edge.
  const [bx0, by0, bx1, by1] = ontoBounds(req.bbox, tiling.bounds, setWidth(tileMatrixSet(setId!)));
  const x0 = Math.max(bx0, sx0);
  const x1 = Math.min(bx1, sx1);
  const y0 = Math.max(by0, sy0);
  const y1 = Math.min(by1, sy1);
  if (!(x0 < x1 && y0 < y1)) return undefined;
  return [(x0 - sx0) / (sx1 - sx0), (sy1 - y1) / (sy1 - sy0), (x1 - sx0) / (sx1 - sx0), (sy1 - y0) / (sy1 - sy0)];
}
