// The cost of a web-map tile: its estimated peak memory, by the same rule as an IIIF request's
// (every stage's buffers counted as if alive at once), so tiles are classified, admitted and
// refused exactly like images. The edge feeds it a coarse read (the level and window a tile's
// bounds cover, mapped linearly from the source's bounds in the set's CRS); the decoder feeds it
// the window its transformer really reads and the source's real bands and sample size.
import type { SourceInfo, SourceTiling } from "../protocol";
import { chooseLevel, windowAtLevel } from "../levels";

/** One level's pixel window [x0, y0, x1, y1) a tile reads; absent when the tile misses the data. */
export interface TileRead {
  level: number;
  window: [number, number, number, number];
}

export interface TileCostShape {
  /** Stored tile size of the level read (COG levels share it). */
  tileWidth: number;
  tileHeight: number;
  /** Bands read (the request's, plus a mask when there is one). */
  bands: number;
  /** Bytes per stored sample (1 for 8-bit, 2 for 16-bit, 4 for float32). */
  bytesPerSample: number;
}

/** Bytes per sample of the float planes a warp works in. */
const WORK_SAMPLE = 4;

/**
 * Peak bytes: the stored blocks the window covers, decoded (`bytesPerSample`) and as float
 * planes (the window's bands, and its validity); the warped planes and mask at the tile's side;
 * the 8-bit RGBA tile; and its encoding (at most its raw size).
 */
export function tileCost(shape: TileCostShape, read: TileRead | undefined, side: number): number {
  const out = side * side;
  const warped = out * (shape.bands + 1) * WORK_SAMPLE + out * 4 * 2;
  if (!read) return warped;
  const [x0, y0, x1, y1] = read.window;
  const blocks =
    (Math.ceil(x1 / shape.tileWidth) - Math.floor(x0 / shape.tileWidth)) * (Math.ceil(y1 / shape.tileHeight) - Math.floor(y0 / shape.tileHeight));
  const decoded = blocks * shape.tileWidth * shape.tileHeight * shape.bands * shape.bytesPerSample;
  const planes = (x1 - x0) * (y1 - y0) * (shape.bands + 1) * WORK_SAMPLE;
  return decoded + planes + warped;
}

/**
 * What the edge can say before any decode of the read behind a tile of `bounds` (in the set's
 * CRS) at `cellSize` per output pixel: the stored level gdalwarp would read for that resolution,
 * and the window the tile's part of the source's bounds covers there, mapped linearly (exact for
 * a source in the set's CRS, close for one that is reprojected). Undefined: the tile misses the data.
 */
export function coarseTileRead(
  info: Pick<SourceInfo, "levels">,
  tiling: SourceTiling,
  bounds: readonly [number, number, number, number],
  cellSize: number,
): TileRead | undefined {
  const [sx0, sy0, sx1, sy1] = tiling.bounds;
  const ix0 = Math.max(bounds[0], sx0);
  const iy0 = Math.max(bounds[1], sy0);
  const ix1 = Math.min(bounds[2], sx1);
  const iy1 = Math.min(bounds[3], sy1);
  if (!(ix0 < ix1 && iy0 < iy1)) return undefined;
  const full = info.levels[0];
  // The full level's pixels the intersection covers, and the output pixels it becomes.
  const fx = full.width / (sx1 - sx0);
  const fy = full.height / (sy1 - sy0);
  const region = { x: (ix0 - sx0) * fx, y: (sy1 - iy1) * fy, w: (ix1 - ix0) * fx, h: (iy1 - iy0) * fy };
  const outW = Math.max(1, Math.round((ix1 - ix0) / cellSize));
  const outH = Math.max(1, Math.round((iy1 - iy0) / cellSize));
  const level = chooseLevel(info.levels, region, outW, outH);
  return { level, window: windowAtLevel(full, info.levels[level], region) };
}
