// The cost of a decode: its estimated peak memory, and the admission partition (tile or full) that follows
// from it. One formula for both tiers: the edge feeds it what it knows before any decode (the
// cached SourceInfo, an assumed channel count), the decoder feeds it the opened source's real
// channels, and the DO counts the requests whose two verdicts differ.

import { HttpError } from "./errors";
import { rotatedCanvas, type Rect, type ResolvedImageRequest } from "./iiif/resolve";
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
}

/**
 * Peak bytes of decode → scale → rotate → encode, each stage's buffer counted as if all were
 * alive at once (the decoder holds each input until the next stage is done):
 * - decode: the window at the level the decoder will read, widened to whole stored tiles,
 *   twice: geotiff.js holds the decoded samples and the interleaved copy it returns at once
 *   (measured: a 6000 px JPEG COG read whole peaks near this total, not half of it);
 * - scale: the output size;
 * - rotate: the rotated output's bounding box (nothing when there is no rotation);
 * - encode: at most the raw size of what it encodes.
 */
export function estimatePeakBytes(s: DecodeShape): number {
  const level = s.levels[chooseLevel(s.levels, s.region, s.width, s.height)];
  const [x0, y0, x1, y1] = windowAtLevel(s.levels[0], level, s.region);
  const decodeW = alignedSpan(x0, x1, s.tileWidth, level.width);
  const decodeH = alignedSpan(y0, y1, s.tileHeight, level.height);
  const canvas = rotatedCanvas(s.width, s.height, s.degrees);
  const decode = 2 * decodeW * decodeH;
  const scale = s.width * s.height;
  const rotate = s.degrees === 0 ? 0 : canvas.width * canvas.height;
  const encode = s.degrees === 0 ? scale : rotate;
  return (decode + scale + rotate + encode) * s.channels;
}

/** The estimate for a resolved IIIF request on a source of this pyramid. */
export function estimateRequest(
  source: Pick<DecodeShape, "levels" | "tileWidth" | "tileHeight">,
  req: ResolvedImageRequest,
  channels: number,
): number {
  const { levels, tileWidth, tileHeight } = source;
  const { region, width, height, degrees } = req;
  return estimatePeakBytes({ levels, tileWidth, tileHeight, channels, region, width, height, degrees });
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
