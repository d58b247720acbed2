// The cost of a web-map tile: its estimated peak memory, by the same rule as an IIIF request's
// (every stage's buffers counted as if alive at once), so tiles are classified, admitted and
// refused exactly like images. The edge feeds it a coarse read (the level and window a tile's
// bounds cover, mapped linearly from the source's bounds in the set's CRS); the decoder feeds it
// the window its transformer really reads and the source's real bands and sample size.
import { decodedSide } from "../cost";
import type { MosaicSummary, SourceInfo, SourceTiling } from "../protocol";
import { chooseLevel, windowAtLevel } from "../levels";
import { megasamples, WORK_PER_MEGASAMPLE, WORK_PER_REQUEST, type Codec } from "../work";
import type { AlgorithmName } from "./algorithms";
import type { PixelSelection, Resampling } from "./style";
import type { TileFormat } from "./tile-request";

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
  /** Samples a decoded block holds a pixel, where more than `bands`: a chunky block decodes every sample it stores. */
  blockSamples?: number;
  /** The blocks' codec (absent: not known): a JPEG block decodes in whole MCUs (decodedSide). */
  codec?: Codec;
}

/** An output's size in pixels: a tile's side by its side, or an area's width by height. */
export interface OutputSize {
  width: number;
  height: number;
}

/** A square tile's size. */
export const squareOf = (side: number): OutputSize => ({ width: side, height: side });

/** Output formats a map render encodes: the tiles', and GeoTIFF for an area's values. */
export type OutputFormat = TileFormat | "tif";

/** Bytes per sample of the float planes a warp works in. */
const WORK_SAMPLE = 4;

/**
 * Peak bytes: the stored blocks the window covers, decoded (`bytesPerSample`) and as float
 * planes (the window's bands, and its validity); the warped planes and mask at the output's
 * size; the 8-bit RGBA output; and its encoding (at most its raw size).
 */
export function tileCost(shape: TileCostShape, read: TileRead | undefined, size: OutputSize): number {
  const out = size.width * size.height;
  const warped = out * (shape.bands + 1) * WORK_SAMPLE + out * 4 * 2;
  if (!read) return warped;
  const [x0, y0, x1, y1] = read.window;
  const block = decodedSide(shape.tileWidth, shape.codec) * decodedSide(shape.tileHeight, shape.codec);
  const decoded = blocksCovered(shape, read.window) * block * (shape.blockSamples ?? shape.bands) * shape.bytesPerSample;
  const planes = (x1 - x0) * (y1 - y0) * (shape.bands + 1) * WORK_SAMPLE;
  return decoded + planes + warped;
}

/** Stored blocks [x0, x1) × [y0, y1) covers, whole. */
function blocksCovered(shape: Pick<TileCostShape, "tileWidth" | "tileHeight">, [x0, y0, x1, y1]: TileRead["window"]): number {
  return (Math.ceil(x1 / shape.tileWidth) - Math.floor(x0 / shape.tileWidth)) * (Math.ceil(y1 / shape.tileHeight) - Math.floor(y0 / shape.tileHeight));
}

/**
 * The work of one asset's part of a tile or area: the stored blocks its read covers, decoded,
 * and each of its bands warped to the output's size.
 */
export function readWork(shape: TileCostShape & { codec?: Codec }, read: TileRead | undefined, size: OutputSize, resampling: Resampling): number {
  if (!read) return 0;
  const decoded = blocksCovered(shape, read.window) * shape.tileWidth * shape.tileHeight * shape.bands;
  const warped = megasamples(size.width * size.height * shape.bands, WORK_PER_MEGASAMPLE.warp[resampling]) * kernelSpread(read.window, size, resampling);
  return megasamples(decoded, WORK_PER_MEGASAMPLE.decode[shape.codec ?? "other"]) + warped;
}

/**
 * How many times its taps at scale 1 a kernel takes when the window read is larger than the
 * tile: a convolution widens to cover every source pixel under an output pixel (maps/kernels.ts),
 * so a tile over 2× the source pixels each way takes 4× the taps; nearest takes one whatever.
 */
function kernelSpread([x0, y0, x1, y1]: TileRead["window"], size: OutputSize, resampling: Resampling): number {
  return resampling === "nearest" ? 1 : Math.max(1, (x1 - x0) / size.width) * Math.max(1, (y1 - y0) / size.height);
}

/** What helps an area (a crop, a preview, statistics) that buys too much work. */
export const AREA_WORK_HELP = "use max_size or a smaller {width}x{height}, fewer expression terms or assets, or a source with overviews";

/** What helps a map tile that buys too much work. */
export const TILE_WORK_HELP = "use fewer expression terms or assets, a simpler pixel_selection, a lower zoom, or a source with overviews";

/** What a tile or area does once its assets' bands are warped. */
export interface ComposeShape {
  assets: number;
  size: OutputSize;
  /** Components each asset's tuple has when it is reduced. */
  components: number;
  /** Nodes of the band expression (0 without one), evaluated for every asset. */
  nodes: number;
  pixelSelection: PixelSelection;
  /** Absent: the values are answered without colouring or an image encode (statistics). */
  format?: OutputFormat;
  /** Applied to the channels before colouring (hillshade, terrarium…). */
  algorithm?: AlgorithmName;
}

/** The work of a tile after its warps: the expression over every asset, the reduction, the colouring and the encode. */
export function composeWork(c: ComposeShape): number {
  const pixels = c.size.width * c.size.height;
  const reduces = c.assets > 1 || c.pixelSelection !== "first";
  return (
    WORK_PER_REQUEST +
    (c.algorithm ? megasamples(pixels, WORK_PER_MEGASAMPLE.algorithm[c.algorithm]) : 0) +
    (c.nodes > 0 ? megasamples(pixels * c.assets, WORK_PER_MEGASAMPLE.expression.evaluation + c.nodes * WORK_PER_MEGASAMPLE.expression.node) : 0) +
    (reduces ? megasamples(pixels * c.components * c.assets, WORK_PER_MEGASAMPLE.pixelSelection[c.pixelSelection]) : 0) +
    (c.format === undefined ? 0 : megasamples(pixels, WORK_PER_MEGASAMPLE.colorize) + megasamples(pixels * 4, WORK_PER_MEGASAMPLE.encode[c.format]))
  );
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

/**
 * The most assets a mosaic's tile at zoom `z` can paint, from the document's shape alone (the
 * edge has no index): at or below the index's zoom, one quadkey's list; above it, the lists of
 * every quadkey under the tile.
 */
export function mosaicAssetBound(mosaic: MosaicSummary, z: number): number {
  const keys = z >= mosaic.quadkeyZoom ? 1 : 4 ** (mosaic.quadkeyZoom - z);
  return Math.min(mosaic.assets, mosaic.maxAssetsPerKey * keys);
}

/** A stored block's side the edge assumes of a mosaic's members, whose headers it has not read. */
const MEMBER_BLOCK = 512;

/**
 * What the edge can say of a mosaic tile before any decode: every asset it may paint read as a
 * window twice the tile's side (a reprojected read at the level closest to the tile's
 * resolution) in 16-bit samples, plus the reducer's planes. Costly many-asset tiles thus go to
 * the full partition, as other dynamic work of unknown cost does; the decoder's precise estimate
 * (every asset's real window) replaces it once the members are open.
 */
export function mosaicTileCost(mosaic: MosaicSummary, z: number, side: number, bands: number): number {
  const { shape, read } = memberRead(squareOf(side), bands);
  return mosaicAssetBound(mosaic, z) * tileCost(shape, read, squareOf(side)) + side * side * bands * 5 * 2;
}

/** The same assumed reads' work: every asset's blocks decoded (of an unknown codec) and its bands warped. */
export function mosaicReadWork(mosaic: MosaicSummary, z: number, side: number, bands: number, resampling: Resampling): number {
  const { shape, read } = memberRead(squareOf(side), bands);
  return mosaicAssetBound(mosaic, z) * readWork(shape, read, squareOf(side), resampling);
}

/** What the edge assumes one member's read for an output of `size` is: a window twice its size, in 16-bit samples of unknown codec. */
export function memberRead(size: OutputSize, bands: number): { shape: TileCostShape; read: TileRead } {
  return { shape: { tileWidth: MEMBER_BLOCK, tileHeight: MEMBER_BLOCK, bands, bytesPerSample: 2 }, read: { level: 0, window: [0, 0, 2 * size.width, 2 * size.height] } };
}

/**
 * A point reads, of every asset, the one full-level block holding its pixel (a 1 × 1 window):
 * the block decoded and the pixel's planes, by the tile rule at a side of one pixel. The
 * answer is a few hundred bytes of JSON; the request's own overhead is counted once.
 */
export function pointCost(assets: TileCostShape[]): { bytes: number; work: number } {
  const read: TileRead = { level: 0, window: [0, 0, 1, 1] };
  return {
    bytes: assets.reduce((sum, shape) => sum + tileCost(shape, read, squareOf(1)), 0),
    work: WORK_PER_REQUEST + assets.reduce((sum, shape) => sum + readWork(shape, read, squareOf(1), "nearest"), 0),
  };
}

/** What the edge assumes of a mosaic's point: the most assets one quadkey lists, each a member block of unknown codec. */
export function mosaicPointCost(mosaic: MosaicSummary, bands: number): { bytes: number; work: number } {
  const shape = { tileWidth: MEMBER_BLOCK, tileHeight: MEMBER_BLOCK, bands, bytesPerSample: 2 };
  return pointCost(Array.from({ length: Math.max(1, mosaic.maxAssetsPerKey) }, () => shape));
}
