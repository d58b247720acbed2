// The cost of a decode: its estimated peak memory, and the admission partition (tile or full) that follows
// from it. One formula for both tiers: the edge feeds it what it knows before any decode (the
// cached SourceInfo, an assumed channel count), the decoder feeds it the opened source's real
// channels, and the DO counts the requests whose two verdicts differ.

import { HttpError } from "./errors";
import type { Format } from "./iiif/image-request";
import { resolveSize, rotatedCanvas, type Rect, type ResolvedImageRequest } from "./iiif/resolve";
import { chooseLevel, windowAtLevel, type LevelSize } from "./levels";

export type Partition = "tile" | "full";

/** DO → decoder → DO: the decoder's precise estimate, in bytes, on every image answer. */
export const ESTIMATE_HEADER = "x-tessera-estimate";
/** Decoder → DO, on a 503: the precise estimate exceeded the DO's grant; re-admit with this many bytes. */
export const NEEDED_HEADER = "x-tessera-needed-bytes";
/** Edge → DO: the edge's coarse verdict and estimate. */
export const PARTITION_HEADER = "x-tessera-partition";

/** What the edge assumes before it has opened the pixels: RGB, the common COG. */
export const ASSUMED_CHANNELS = 3;

export interface DecodeShape {
  /** Full size first, then overviews in decreasing size (as SourceInfo.levels). */
  levels: LevelSize[];
  tileWidth: number;
  tileHeight: number;
  /** Samples per pixel as decoded (1..4). */
  channels: number;
  region: Rect;
  width: number;
  height: number;
  degrees: number;
  /** The output format (absent: one whose encoder holds at most the raw image, as jpg). */
  format?: Format;
}

/**
 * Multiples of the raw output a jp2 encode holds: the raw pixels (1); OpenJPEG codes them a
 * 1024² tile at a time (regional/encode/tiled-codestream.ts), so its WebAssembly memory is a
 * tile's, about 50 MiB a thread whatever the output, not counted here; the codestream's pieces
 * and the JP2 file written from them, at most 1.5 each (lossless noise; lossy is a fifteenth).
 */
export const JP2_ENCODE_MULTIPLE = 4;

/** What the estimate needs of a source: its pyramid and its full level's tiling. */
export type SourceShape = Pick<DecodeShape, "levels" | "tileWidth" | "tileHeight">;

/** Windows of more pixels than this (at the level read) are rendered in bands of block rows. */
export const STRIP_MIN_PIXELS = 4096 * 4096;
/** A band is the fewest whole block rows that cover at least this many rows of the level. */
const BAND_MIN_ROWS = 512;

/** Rows of the level one band of a strip render reads: whole block rows of `tileHeight`. */
export const bandRows = (tileHeight: number) => Math.ceil(BAND_MIN_ROWS / tileHeight) * tileHeight;

/** Whether the window [x0, y0, x1, y1) of the level read is rendered in bands (else whole). */
export const rendersInStrips = ([x0, y0, x1, y1]: readonly number[]) => (x1 - x0) * (y1 - y0) > STRIP_MIN_PIXELS;

/** Rows of context a band reads beyond its own on each side: more than lanczos3 reaches below 2×. */
const HALO_MIN_ROWS = 16;
/** Longest period (window rows whose output is whole rows) that exact bands step by. */
const MAX_PERIOD_ROWS = 64;

/**
 * How a window reduced to `outWidth`×`outHeight` steps in exact bands, or undefined when it
 * cannot, or when reducing rows across first (bands of `band` rows) holds less. Every `period`
 * window rows make exactly `outPeriod` output rows (the height ratio in lowest terms), so a band
 * that starts on a period boundary, with `halo` rows of context on each side, resizes to exactly
 * the rows the whole window would give there. Only for a vertical reduction below 2× (a stored
 * level is always chosen within it when the pyramid halves), where libvips reduces without an
 * integer pre-shrink that would need aligning too.
 */
export function exactBands(windowWidth: number, windowHeight: number, outWidth: number, outHeight: number, band: number): BandStep | undefined {
  if (outHeight >= windowHeight || 2 * outHeight <= windowHeight) return undefined;
  const g = gcd(windowHeight, outHeight);
  const period = windowHeight / g;
  if (period > MAX_PERIOD_ROWS) return undefined;
  const periods = Math.ceil(BAND_MIN_ROWS / period);
  const step = {
    rows: periods * period,
    outRows: (periods * outHeight) / g,
    halo: Math.ceil(HALO_MIN_ROWS / period) * period,
    outPeriod: outHeight / g,
    period,
  };
  const cheaper = bandPixels(windowWidth, outWidth, windowHeight, band, step) <= bandPixels(windowWidth, outWidth, windowHeight, band);
  return cheaper ? step : undefined;
}

export interface BandStep {
  /** Window rows a band covers, and the output rows they make. */
  rows: number;
  outRows: number;
  /** Window rows read beyond the band on each side (whole periods), cropped from its output. */
  halo: number;
  period: number;
  outPeriod: number;
}

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));

/**
 * Peak bytes of decode → scale → rotate → encode, each stage's buffer counted as if all were
 * alive at once (the decoder holds each input until the next stage is done):
 * - decode, a window read whole: the window at the level the decoder will read, widened to
 *   whole stored tiles, twice: the decoded blocks and the window copied out of them;
 * - decode, a large window read in bands (rendersInStrips): see bandPixels;
 * - scale: the output size;
 * - rotate: the rotated output's bounding box (nothing when there is no rotation);
 * - encode: at most the raw size of what it encodes; JP2_ENCODE_MULTIPLE times it for jp2.
 */
export function estimatePeakBytes(s: DecodeShape, bands: BandChoice = "cheaper"): number {
  const level = s.levels[chooseLevel(s.levels, s.region, s.width, s.height)];
  const window = windowAtLevel(s.levels[0], level, s.region);
  const [x0, y0, x1, y1] = window;
  const decodeW = alignedSpan(x0, x1, s.tileWidth, level.width);
  const canvas = rotatedCanvas(s.width, s.height, s.degrees);
  const band = bandRows(s.tileHeight);
  const step = bands === "cheaper" ? exactBands(x1 - x0, y1 - y0, s.width, s.height, band) : undefined;
  const decode = rendersInStrips(window)
    ? bandPixels(decodeW, s.width, y1 - y0, band, step)
    : 2 * decodeW * alignedSpan(y0, y1, s.tileHeight, level.height);
  const scale = s.width * s.height;
  const rotate = s.degrees === 0 ? 0 : canvas.width * canvas.height;
  const encode = (s.degrees === 0 ? scale : rotate) * (s.format === "jp2" ? JP2_ENCODE_MULTIPLE : 1);
  return (decode + scale + rotate + encode) * s.channels;
}

/** Which banded method an estimate counts: the one the decoder takes, or always rows reduced across first. */
export type BandChoice = "cheaper" | "rows";

/**
 * Pixels a banded read holds at its peak besides the output: in exact bands, one band with its
 * halo (decoded, copied) and its resized rows, which the output takes; else one band (decoded,
 * copied, reduced to the output width) and every band's reduced rows.
 */
function bandPixels(readWidth: number, outWidth: number, windowHeight: number, band: number, exact?: BandStep): number {
  if (!exact) return 2 * readWidth * band + outWidth * band + outWidth * windowHeight;
  const read = exact.rows + 2 * exact.halo;
  return 2 * readWidth * read + outWidth * ((read * exact.outPeriod) / exact.period);
}

/** The estimate for a resolved IIIF request on a source of this pyramid. */
export function estimateRequest(
  source: SourceShape,
  req: ResolvedImageRequest,
  channels: number,
): number {
  const { levels, tileWidth, tileHeight } = source;
  const { region, width, height, degrees, format } = req;
  return estimatePeakBytes({ levels, tileWidth, tileHeight, channels, region, width, height, degrees, format });
}

/**
 * The largest output area (a maxArea) at which the whole image, unrotated, is estimated to
 * render within `ceilingBytes`; undefined when it renders at full size. `max` resolves within it,
 * so the largest size a server delivers never needs more memory than one decoder grants.
 */
export function maxRenderArea(source: SourceShape, channels: number, ceilingBytes: number): number | undefined {
  const [{ width, height }] = source.levels;
  const region = { x: 0, y: 0, w: width, h: height };
  // Counted as rows reduced across first, whichever banded method a size allows: that cost
  // grows with the area, so the limit does not hang on the divisors of a size; the cheaper
  // method is counted too, since it may cost a little more with the window widened to blocks.
  const fits = (maxArea: number) => {
    const size = resolveSize({ kind: "max", upscale: false }, region, { width, height, maxArea });
    const shape = { ...source, channels, region, ...size, degrees: 0 };
    return Math.max(estimatePeakBytes(shape, "rows"), estimatePeakBytes(shape)) <= ceilingBytes;
  };
  if (fits(width * height)) return undefined;
  // Among the areas read from one level the estimate grows with the area, and a smaller area
  // may read a smaller level, which costs less: so each level's span of areas is searched on
  // its own, the largest level first.
  const areas = [...source.levels.map((l) => l.width * l.height), 0];
  for (let i = 0; i < source.levels.length; i++) {
    let lo = Math.max(1, areas[i + 1]);
    let hi = areas[i];
    if (!fits(lo)) continue;
    while (hi - lo > 1) {
      const mid = Math.floor((lo + hi) / 2);
      if (fits(mid)) lo = mid;
      else hi = mid;
    }
    return lo;
  }
  return 1;
}

/** Width of [lo, hi) once widened to whole tiles of `tile` px, clamped to the level. */
function alignedSpan(lo: number, hi: number, tile: number, size: number): number {
  if (tile <= 0) return hi - lo;
  return Math.min(size, Math.ceil(hi / tile) * tile) - Math.floor(lo / tile) * tile;
}

export function classify(estimateBytes: number, largeDecodeThresholdBytes: number): Partition {
  return estimateBytes >= largeDecodeThresholdBytes ? "full" : "tile";
}

/**
 * The decoder's answer, before it reads any pixel, when its precise estimate exceeds what the
 * admission DO granted (503 + NEEDED_HEADER): the DO re-admits once with `neededBytes`.
 */
export class GrantExceeded extends HttpError {
  constructor(readonly neededBytes: number) {
    super("overloaded", `this decode needs ${neededBytes} bytes, more than admission granted`, 1);
    this.name = "GrantExceeded";
  }
}
