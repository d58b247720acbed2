// Where each pixel of a tile comes from in the source: tile pixel centre → the set's CRS → the
// source's CRS → the source level's pixels. A projection call per pixel would cost most of a
// warp, so the transform is approximated as GDAL's warper does: along each row, exact transforms
// at the ends and the middle, linear interpolation in between when the middle's error is at most
// `maxError` source pixels, else the row span is split in two and each half tried again.
// A source in the set's own CRS maps affinely, so the approximation is exact at once.

import type { Slices } from "../runtime/slices";

/** GDAL's geotransform order: x = t0 + column·t1 + row·t2, y = t3 + column·t4 + row·t5. */
export type Affine = [number, number, number, number, number, number];

export const applyAffine = (t: Affine, column: number, row: number): [number, number] => [
  t[0] + column * t[1] + row * t[2],
  t[3] + column * t[4] + row * t[5],
];

export function invertAffine(t: Affine): Affine {
  const det = t[1] * t[5] - t[2] * t[4];
  const [a, b, d, e] = [t[5] / det, -t[2] / det, -t[4] / det, t[1] / det];
  return [-(a * t[0] + b * t[3]), a, b, -(d * t[0] + e * t[3]), d, e];
}

/** GDAL's default error threshold for gdalwarp, in source pixels. */
export const DEFAULT_MAX_ERROR = 0.125;
/** A span this short is transformed point by point. */
const MIN_SPAN = 4;

/** An exact transform of one point; NaN where the point has no image. */
export type PointTransform = (x: number, y: number) => [number, number];

/** Source coordinates of every output pixel's centre, row-major; NaN where the transform fails. */
export interface SourceCoordinates {
  xs: Float64Array;
  ys: Float64Array;
  /** Exact transforms made: what the approximation saved is width × height minus this. */
  exactCalls: number;
}

/** Work units (runtime/slices.ts) an output pixel takes: its share of a row's exact transforms, and its interpolation. */
const UNITS_A_PIXEL = 8;

/**
 * The source position of the centre of every pixel of a `width`×`height` output, through
 * `exact` (output pixel coordinates → source pixel coordinates), approximated within `maxError`,
 * some rows a slice of the request's computation.
 */
export async function sourceCoordinates(exact: PointTransform, width: number, height: number, slices: Slices, maxError = DEFAULT_MAX_ERROR): Promise<SourceCoordinates> {
  // Every entry is written below: memory a finished warp gave back serves as well as new.
  const out: SourceCoordinates = { xs: positions(width * height), ys: positions(width * height), exactCalls: 0 };
  await slices.each(height, width * UNITS_A_PIXEL, (first, end) => {
    for (let row = first; row < end; row++) fillRow(exact, width, row, maxError, out);
  });
  return out;
}

/**
 * Position arrays finished warps gave back, by length. A tile's two are 1 MiB of memory outside
 * V8's heap, and new ones for every tile made V8 collect its old generation every few tiles
 * (69 full collections of 6–9 ms over 726 tiles of bench:maps).
 */
const spare = new Map<number, Float64Array[]>();
/** Arrays kept of each length: a few tiles' worth, as many as are warped at once. */
const MAX_SPARE = 8;

function positions(length: number): Float64Array {
  return spare.get(length)?.pop() ?? new Float64Array(length);
}

/** Gives back positions from sourceCoordinates that nothing reads any more. */
export function recyclePositions(...arrays: Float64Array[]): void {
  for (const a of arrays) {
    const list = spare.get(a.length) ?? [];
    if (list.length >= MAX_SPARE || a.length === 0) continue;
    list.push(a);
    spare.set(a.length, list);
  }
}

/** Row `row`'s positions, from exact transforms at its ends and middles, interpolated where that is within `maxError`. */
function fillRow(exact: PointTransform, width: number, row: number, maxError: number, out: SourceCoordinates): void {
  const y = row + 0.5;
  out.exactCalls += 2;
  fillSpan(exact, out, row * width, y, maxError, 0, width - 1, exact(0.5, y), exact(width - 0.5, y));
}

/**
 * Fills columns [i0, i1] of the row starting at `base` (centres at height `y`), whose end
 * transforms are known. A function of its own, not a closure made for each row: closures made
 * per row cost as much as the transforms they save.
 */
function fillSpan(exact: PointTransform, out: SourceCoordinates, base: number, y: number, maxError: number, i0: number, i1: number, p0: [number, number], p1: [number, number]): void {
  const { xs, ys } = out;
  xs[base + i0] = p0[0];
  ys[base + i0] = p0[1];
  xs[base + i1] = p1[0];
  ys[base + i1] = p1[1];
  if (i1 - i0 < 2) return;
  if (i1 - i0 <= MIN_SPAN) {
    for (let i = i0 + 1; i < i1; i++) [xs[base + i], ys[base + i]] = exact(i + 0.5, y);
    out.exactCalls += i1 - i0 - 1;
    return;
  }
  const mid = (i0 + i1) >> 1;
  const pm = exact(mid + 0.5, y);
  out.exactCalls++;
  const f = (mid - i0) / (i1 - i0);
  const error = Math.abs(p0[0] + f * (p1[0] - p0[0]) - pm[0]) + Math.abs(p0[1] + f * (p1[1] - p0[1]) - pm[1]);
  // NaN (an end or the middle without image) fails the test too: split until exact.
  if (error <= maxError) {
    const dx = (p1[0] - p0[0]) / (i1 - i0);
    const dy = (p1[1] - p0[1]) / (i1 - i0);
    for (let i = i0 + 1; i < i1; i++) {
      xs[base + i] = p0[0] + (i - i0) * dx;
      ys[base + i] = p0[1] + (i - i0) * dy;
    }
    return;
  }
  fillSpan(exact, out, base, y, maxError, i0, mid, p0, pm);
  fillSpan(exact, out, base, y, maxError, mid, i1, pm, p1);
}
