// The cost of a decode: its estimated peak memory, and the admission partition (tile or full) that follows
// from it. One formula for both tiers: the edge feeds it what it knows before any decode (the
// cached SourceInfo, an assumed channel count), the decoder feeds it the opened source's real
// channels, and the DO counts the requests whose two verdicts differ.

import { HttpError } from "./errors";
import type { Format } from "./iiif/image-request";
import { resolveSize, rotatedCanvas, type Rect, type ResolvedImageRequest } from "./iiif/resolve";
import { chooseLevel, windowAtLevel, type LevelSize } from "./levels";
import { imageWork, type Codec } from "./work";

export type Partition = "tile" | "full";

/** What a decode costs: the memory it holds at its peak, and the work it buys (shared/work.ts). */
export interface Cost {
  /** Peak bytes of decode → scale → rotate → encode. */
  bytes: number;
  /** Work units, each about one millisecond of one decoder core. */
  work: number;
}

/** Edge → DO, and the decoder → DO on every answer: the estimate, bytes and work (the edge's coarse one, the decoder's precise one). */
export const ESTIMATE_HEADER = "x-tessera-estimate";
export const ESTIMATE_WORK_HEADER = "x-tessera-estimate-work";
/** Decoder → DO, on a 503: the precise estimate exceeded the DO's grant; re-admit with this cost. */
export const NEEDED_HEADER = "x-tessera-needed-bytes";
export const NEEDED_WORK_HEADER = "x-tessera-needed-work";
/** Edge → DO: the edge's coarse verdict. */
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
  /** How the stored blocks are compressed (absent: not known yet, and counted as JPEG, see JPEG_MCU). */
  codec?: Codec;
  /**
   * Samples a decoded block holds a pixel, where more than `channels`: a block stored chunky
   * decodes every sample it stores, however few the render uses (absent: `channels`).
   */
  blockSamples?: number;
}

/**
 * Side (px) of the largest JPEG MCU: a JPEG block decodes into whole MCUs of 8 × its largest
 * sampling factor (1 to 4) each way, 16 for the common 4:2:0. Every JPEG block is counted in MCUs
 * of this side, so neither tier needs its subsampling (the stream's own, each block may declare
 * another): the dearest, which only blocks whose sides are not multiples of 32 px pay for.
 */
export const JPEG_MCU = 32;

/** A block's side as it decodes: in whole MCUs for JPEG, or a codec not known (see JPEG_MCU). */
export function decodedSide(side: number, codec: Codec | undefined): number {
  return codec === undefined || codec === "jpeg" ? Math.ceil(side / JPEG_MCU) * JPEG_MCU : side;
}

/**
 * Multiples of the raw output a jp2 encode holds: the raw pixels (1); OpenJPEG codes them a
 * 1024² tile at a time (regional/encode/tiled-codestream.ts), so its WebAssembly memory is a
 * tile's, about 50 MiB a thread whatever the output, not counted here; the codestream's pieces
 * and the JP2 file written from them, at most 1.5 each (lossless noise; lossy is a fifteenth).
 */
export const JP2_ENCODE_MULTIPLE = 4;

/** What the estimate needs of a source: its pyramid, its full level's tiling, and how its blocks decode. */
export type SourceShape = Pick<DecodeShape, "levels" | "tileWidth" | "tileHeight" | "codec" | "blockSamples">;

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
  // Compared as for blocks of the render's own channels (decoded, copied): the choice is the render's.
  const cheaper = bandPixels(windowWidth, outWidth, windowHeight, band, 2, step) <= bandPixels(windowWidth, outWidth, windowHeight, band, 2);
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
 *   whole stored tiles, twice: the decoded blocks and the window copied out of them; a JPEG
 *   block (or one of a codec not known) decodes in whole MCUs, and counts so (decodedSpan);
 *   the decoded blocks count every sample they hold (blockSamples), the copy the channels;
 * - decode, a large window read in bands (rendersInStrips): see bandPixels;
 * - scale: the output size;
 * - rotate: the rotated output's bounding box (nothing when there is no rotation);
 * - encode: at most the raw size of what it encodes; JP2_ENCODE_MULTIPLE times it for jp2.
 */
export function estimatePeakBytes(s: DecodeShape, bands: BandChoice = "cheaper"): number {
  const level = s.levels[chooseLevel(s.levels, s.region, s.width, s.height)];
  const window = windowAtLevel(s.levels[0], level, s.region);
  const [x0, y0, x1, y1] = window;
  // Strips span the image's width (geotiff.js, and so SourceInfo, give a strip's width as the tile's).
  const strips = s.tileWidth >= s.levels[0].width;
  const decodeW = decodedSpan(x0, x1, s.tileWidth, level.width, s.codec, strips);
  const canvas = rotatedCanvas(s.width, s.height, s.degrees);
  const band = bandRows(s.tileHeight);
  const step = bands === "cheaper" ? exactBands(x1 - x0, y1 - y0, s.width, s.height, band) : undefined;
  // The decoded blocks and the window copied out of them, in pixels of the render's channels.
  const read = 1 + (s.blockSamples ?? s.channels) / s.channels;
  const decode = rendersInStrips(window)
    ? bandPixels(decodeW, s.width, y1 - y0, band, read, step)
    : read * decodeW * decodedSpan(y0, y1, s.tileHeight, level.height, s.codec, strips);
  const scale = s.width * s.height;
  const rotate = s.degrees === 0 ? 0 : canvas.width * canvas.height;
  const encode = (s.degrees === 0 ? scale : rotate) * (s.format === "jp2" ? JP2_ENCODE_MULTIPLE : 1);
  return Math.ceil((decode + scale + rotate + encode) * s.channels);
}

/** Which banded method an estimate counts: the one the decoder takes, or always rows reduced across first. */
export type BandChoice = "cheaper" | "rows";

/**
 * Pixels a banded read holds at its peak besides the output: in exact bands, one band with its
 * halo (decoded and copied, `read` times its pixels) and its resized rows, which the output
 * takes; else one band (decoded, copied, reduced to the output width) and every band's reduced rows.
 */
function bandPixels(readWidth: number, outWidth: number, windowHeight: number, band: number, read: number, exact?: BandStep): number {
  if (!exact) return read * readWidth * band + outWidth * band + outWidth * windowHeight;
  const rows = exact.rows + 2 * exact.halo;
  return read * readWidth * rows + outWidth * ((rows * exact.outPeriod) / exact.period);
}

/** The estimate for a resolved IIIF request on a source of this pyramid. */
export function estimateRequest(
  source: SourceShape,
  req: ResolvedImageRequest,
  channels: number,
): number {
  const { levels, tileWidth, tileHeight, codec, blockSamples } = source;
  const { region, width, height, degrees, format } = req;
  return estimatePeakBytes({ levels, tileWidth, tileHeight, codec, blockSamples, channels, region, width, height, degrees, format });
}

/**
 * The largest output area (a maxArea) at which the whole image, unrotated and as a JPEG, is
 * estimated to render within `ceiling`: the work budget's bytes and the work one core does within
 * the request deadline. Upscaled (`^`) when the whole image fits at full size, so every size a
 * decoder declares is one it can deliver: `max` resolves within it, and a larger request is
 * refused (400 at the edge, 413 here) before any work.
 */
export function maxRenderArea(source: SourceShape, channels: number, codec: Codec | undefined, ceiling: Cost): number {
  const [{ width, height }] = source.levels;
  const region = { x: 0, y: 0, w: width, h: height };
  // Counted as rows reduced across first, whichever banded method a size allows: that cost
  // grows with the area, so the limit does not hang on the divisors of a size; the cheaper
  // method is counted too, since it may cost a little more with the window widened to blocks.
  const fits = (maxArea: number) => {
    const size = resolveSize({ kind: "max", upscale: true }, region, { width, height, maxArea });
    const shape = { ...source, channels, region, ...size, degrees: 0 };
    const bytes = Math.max(estimatePeakBytes(shape, "rows"), estimatePeakBytes(shape));
    return bytes <= ceiling.bytes && imageWork({ ...shape, codec }) <= ceiling.work;
  };
  const full = width * height;
  if (fits(full)) return largestFitting(full, Math.max(full, Math.floor(ceiling.bytes / channels)), fits);
  // Among the areas read from one level the estimate grows with the area, and a smaller area
  // may read a smaller level, which costs less: so each level's span of areas is searched on
  // its own, the largest level first.
  const areas = [...source.levels.map((l) => l.width * l.height), 0];
  for (let i = 0; i < source.levels.length; i++) {
    const lo = Math.max(1, areas[i + 1]);
    if (fits(lo)) return largestFitting(lo, areas[i], fits);
  }
  // No render of the whole image fits at any size (a large source without overviews): what a
  // request may still ask is a region at full resolution, whose cost follows its own area. A
  // whole-image request is then refused for its work, saying why (tooMuchWork), not its size.
  const native = (area: number) => {
    const side = Math.min(width, Math.ceil(Math.sqrt(area)));
    const part = { x: 0, y: 0, w: side, h: Math.min(height, Math.ceil(area / side)) };
    const shape = { ...source, channels, region: part, width: part.w, height: part.h, degrees: 0 };
    return estimatePeakBytes(shape) <= ceiling.bytes && imageWork({ ...shape, codec }) <= ceiling.work;
  };
  return native(1) ? largestFitting(1, full, native) : 1;
}

/** The largest area in [lo, hi] that `fits`, knowing `lo` does and that the cost grows with the area. */
function largestFitting(lo: number, hi: number, fits: (area: number) => boolean): number {
  if (fits(hi)) return hi;
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (fits(mid)) lo = mid;
    else hi = mid;
  }
  return lo;
}

/**
 * Width of [lo, hi) once widened to whole blocks of `tile` px, clamped to the level, each block's
 * frame as it decodes (decodedSide). A tile's frame is the whole tile (what
 * lies past the level's edge is left out, as for every codec); a strip's (`strips`) is the rows
 * of the image it holds, the last one's fewer, and the whole width.
 */
function decodedSpan(lo: number, hi: number, tile: number, size: number, codec: Codec | undefined, strips: boolean): number {
  const span = alignedSpan(lo, hi, tile, size);
  if (tile <= 0) return span;
  const blocks = Math.ceil(span / tile);
  const last = span - (blocks - 1) * tile;
  const padded = decodedSide(tile, codec);
  return (blocks - 1) * padded + (strips ? decodedSide(last, codec) : last + padded - tile);
}

/** Width of [lo, hi) once widened to whole tiles of `tile` px, clamped to the level. */
export function alignedSpan(lo: number, hi: number, tile: number, size: number): number {
  if (tile <= 0) return hi - lo;
  return Math.min(size, Math.ceil(hi / tile) * tile) - Math.floor(lo / tile) * tile;
}

/** The operator's thresholds: a decode that reaches either is one of the full partition. */
export interface Thresholds {
  /** LARGE_DECODE_THRESHOLD_BYTES. */
  bytes: number;
  /** LARGE_DECODE_THRESHOLD_WORK. */
  work: number;
}

export function classify(cost: Cost, thresholds: Thresholds): Partition {
  return cost.bytes >= thresholds.bytes || cost.work >= thresholds.work ? "full" : "tile";
}

/**
 * The decoder's answer, before it reads any pixel, when its precise estimate exceeds what the
 * admission DO granted (503 + NEEDED_HEADER, NEEDED_WORK_HEADER): the DO re-admits once with it.
 */
export class GrantExceeded extends HttpError {
  constructor(readonly needed: Cost) {
    super("overloaded", `this decode needs ${needed.bytes} bytes and ${Math.ceil(needed.work)} work units, more than admission granted`, 1);
    this.name = "GrantExceeded";
  }
}

/**
 * 413 for a request one decoder core could not finish within `limitMs` (REQUEST_TIMEOUT): a unit
 * of work is about a millisecond of one core. Said before any pixel is read, with what would help.
 */
export function tooMuchWork(work: number, limitMs: number, help: string): HttpError {
  const seconds = (n: number) => `${Math.round(n / 100) / 10} s`;
  return new HttpError(
    "too_large",
    `this request would take about ${seconds(work)} of one decoder core, more than the ${seconds(limitMs)} a request may take; ${help}`,
  );
}

/** What helps an IIIF request that buys too much work. */
export const IMAGE_WORK_HELP = "ask for a smaller size or region, or publish the source with overviews (tessera validate says how to add them)";
