// Pyramid geometry: which stored level to read for a request, and where the requested
// full-resolution rectangle lies in that level. Pure arithmetic, no I/O. Shared: the decoder
// reads this level, and the edge's cost estimate (shared/cost.ts) assumes the same one.

import type { Rect } from "./iiif/resolve";

export interface LevelSize {
  width: number;
  height: number;
}

/** Slack for float rounding when a level is exactly the requested size. */
const EPSILON = 1e-9;

/**
 * The index of the level to read `region` (full-resolution pixels) from for an output of
 * `outWidth`×`outHeight`: the smallest level whose scaled region is still at least the output
 * size, so the result is only ever downsampled. When even the full image is too small (an
 * upscale), the full image. `levels` is full size first, then decreasing.
 */
export function chooseLevel(levels: LevelSize[], region: Rect, outWidth: number, outHeight: number): number {
  const full = levels[0];
  let chosen = 0;
  for (let i = 1; i < levels.length; i++) {
    const sx = levels[i].width / full.width;
    const sy = levels[i].height / full.height;
    if (region.w * sx + EPSILON >= outWidth && region.h * sy + EPSILON >= outHeight) chosen = i;
    else break;
  }
  return chosen;
}

/**
 * The pixel window [x0, y0, x1, y1) of `level` covering `region` (full-resolution pixels),
 * widened to whole pixels and clamped to the level.
 */
export function windowAtLevel(full: LevelSize, level: LevelSize, region: Rect): [number, number, number, number] {
  const sx = level.width / full.width;
  const sy = level.height / full.height;
  const x0 = clamp(Math.floor(region.x * sx + EPSILON), 0, level.width - 1);
  const y0 = clamp(Math.floor(region.y * sy + EPSILON), 0, level.height - 1);
  const x1 = clamp(Math.ceil((region.x + region.w) * sx - EPSILON), x0 + 1, level.width);
  const y1 = clamp(Math.ceil((region.y + region.h) * sy - EPSILON), y0 + 1, level.height);
  return [x0, y0, x1, y1];
}

const clamp = (v: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, v));
