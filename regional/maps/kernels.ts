// Resampling kernels, as GDAL's warper applies them. A source position (sx, sy) is in pixel
// coordinates of the window read (pixel i covers [i, i + 1)). Nearest takes the pixel that holds
// it; bilinear and cubic (Keys, a = −0.5, GDAL's "cubic") weigh the pixels around it, the kernel
// stretched by 1/scale when the output is coarser than the source (scale < 1), so every source
// pixel under an output pixel counts. Each band is resampled on its own: only that band's valid
// pixels take part and their weights are renormalised, so one band's nodata never bleeds into
// another band, nor into its own neighbours' values.
//
// This is most of a tile's time, so the loops are written for speed: an output pixel's weights
// are computed once for all its bands, and at a pixel whose whole neighbourhood lies in the
// window and is valid (the whole window is, or a summed-area table of its invalid pixels says
// so in four reads), a band is summed without any per-neighbour test.
import type { Resampling } from "../../shared/maps/tile-request";
import type { Plane } from "../cog/bands";
import type { Slices } from "../runtime/slices";

/** Where each output pixel samples the window read, and how. */
export interface Sampling {
  /** Each output pixel's source position, in the window's pixels (NaN: no source). */
  xs: Float64Array;
  ys: Float64Array;
  /** 1 where the output pixel's centre falls inside the level; the others stay invalid. */
  covered: Uint8Array;
  resampling: Resampling;
  /** Output pixels per source pixel along each axis (below 1: the kernel widens). */
  scaleX: number;
  scaleY: number;
}

/** Half-width in source pixels at scale 1. */
const RADIUS = { bilinear: 1, cubic: 2 };

/** The weight of a pixel `distance` (in kernel units) from the position. */
export function kernelWeight(kernel: Exclude<Resampling, "nearest">, distance: number): number {
  const x = Math.abs(distance);
  if (kernel === "bilinear") return x < 1 ? 1 - x : 0;
  // Keys' cubic convolution with a = −0.5.
  if (x < 1) return (1.5 * x - 2.5) * x * x + 1;
  if (x < 2) return ((-0.5 * x + 2.5) * x - 4) * x + 2;
  return 0;
}

/** Below this total weight no valid pixel counts enough: the output is invalid (GDAL's threshold). */
const MIN_WEIGHT = 1e-5;

/** How far beyond a position a kernel reads, in source pixels, at `scale`. */
export function kernelReach(resampling: Resampling, scale: number): number {
  return resampling === "nearest" ? 0 : Math.ceil(RADIUS[resampling] / Math.min(1, scale));
}

/**
 * Resamples every plane (one window, one band each) at the sampling's positions into the
 * band's `values` and `valid`, which start zeroed, a range of output pixels a slice.
 */
export async function resample(planes: Plane[], sampling: Sampling, values: Float32Array[], valid: Uint8Array[], slices: Slices): Promise<void> {
  if (planes.length === 0) return;
  const out: Resampled = { values, valid };
  const pixels = sampling.xs.length;
  // The loops are functions of their own, given everything as arguments: called from a closure
  // made for each tile, their optimised code is kept from one tile to the next.
  if (sampling.resampling === "nearest") return slices.each(pixels, 2 * planes.length, (start, end) => nearest(planes, sampling, out, start, end));
  const taps = tapsOf(sampling, sampling.resampling);
  // Bands valid over the whole window never need their neighbours' validity looked at; bands
  // sharing a validity share its table.
  const tables = new Map<Uint8Array, Int32Array | undefined>();
  for (const p of planes) if (!tables.has(p.valid)) tables.set(p.valid, p.valid.includes(0) ? invalidSums(p) : undefined);
  const invalid = planes.map((p) => tables.get(p.valid));
  await slices.each(pixels, taps.nx + taps.ny + taps.nx * taps.ny * planes.length, (start, end) => convolve(planes, sampling, taps, invalid, out, start, end));
}

/** A summed-area table of `plane`'s invalid pixels: entry (x, y) of a (width + 1)-wide grid counts those above and left of it. */
function invalidSums({ valid, width, height }: Plane): Int32Array {
  const stride = width + 1;
  const sums = new Int32Array(stride * (height + 1));
  for (let y = 0; y < height; y++) {
    let row = 0;
    for (let x = 0; x < width; x++) {
      row += 1 - valid[y * width + x];
      sums[(y + 1) * stride + x + 1] = sums[y * stride + x + 1] + row;
    }
  }
  return sums;
}

/** Whether the box of `nx` × `ny` pixels from (x0, y0) holds no invalid pixel, by `sums` (invalidSums) of a `width`-wide plane. */
function allValid(sums: Int32Array, width: number, x0: number, y0: number, nx: number, ny: number): boolean {
  const stride = width + 1;
  const top = y0 * stride;
  const bottom = (y0 + ny) * stride;
  return sums[bottom + x0 + nx] - sums[top + x0 + nx] - sums[bottom + x0] + sums[top + x0] === 0;
}

/** Each band's output values and validity. */
interface Resampled {
  values: Float32Array[];
  valid: Uint8Array[];
}

/** The index of the window pixel holding output pixel `o`'s position; −1 when none does or `o` is not covered. */
function holding({ xs, ys, covered }: Sampling, o: number, width: number, height: number): number {
  if (!covered[o]) return -1;
  // GDAL's slack: a position a hair below a pixel boundary belongs to the pixel above it.
  const x = Math.floor(xs[o] + 1e-10);
  const y = Math.floor(ys[o] + 1e-10);
  return x < 0 || y < 0 || x >= width || y >= height ? -1 : y * width + x;
}

function nearest(planes: Plane[], sampling: Sampling, { values, valid }: Resampled, start: number, end: number): void {
  const { width, height } = planes[0];
  for (let o = start; o < end; o++) {
    const i = holding(sampling, o, width, height);
    if (i < 0) continue;
    for (let b = 0; b < planes.length; b++) {
      if (!planes[b].valid[i]) continue;
      values[b][o] = planes[b].values[i];
      valid[b][o] = 1;
    }
  }
}

/** A convolution kernel at the sampling's scale: its reach and taps along each axis, and their weights' scratch. */
interface Taps {
  kernel: Exclude<Resampling, "nearest">;
  sx: number;
  sy: number;
  rx: number;
  ry: number;
  nx: number;
  ny: number;
  wx: Float64Array;
  wy: Float64Array;
}

function tapsOf({ scaleX, scaleY }: Sampling, kernel: Exclude<Resampling, "nearest">): Taps {
  const sx = Math.min(1, scaleX);
  const sy = Math.min(1, scaleY);
  const rx = Math.ceil(RADIUS[kernel] / sx);
  const ry = Math.ceil(RADIUS[kernel] / sy);
  return { kernel, sx, sy, rx, ry, nx: 2 * rx, ny: 2 * ry, wx: new Float64Array(2 * rx), wy: new Float64Array(2 * ry) };
}

/**
 * The weighted sum of the taps' box from window index `row` (its top-left pixel) of a plane
 * `width` wide, every pixel in it valid. The 2 × 2 of bilinear and the 4 × 4 of cubic at scale
 * 1 or more (most tiles) are written out: a loop of two or four steps costs more than its sums.
 */
function boxSum(src: Float32Array | Uint8Array, row: number, width: number, { nx, ny, wx, wy }: Taps): number {
  if (nx === 2 && ny === 2) {
    const below = row + width;
    return wy[0] * (wx[0] * src[row] + wx[1] * src[row + 1]) + wy[1] * (wx[0] * src[below] + wx[1] * src[below + 1]);
  }
  let sum = 0;
  if (nx === 4) {
    const w0 = wx[0];
    const w1 = wx[1];
    const w2 = wx[2];
    const w3 = wx[3];
    for (let j = 0; j < ny; j++, row += width) sum += wy[j] * (w0 * src[row] + w1 * src[row + 1] + w2 * src[row + 2] + w3 * src[row + 3]);
    return sum;
  }
  for (let j = 0; j < ny; j++, row += width) {
    let line = 0;
    for (let i = 0; i < nx; i++) line += wx[i] * src[row + i];
    sum += wy[j] * line;
  }
  return sum;
}

function convolve(planes: Plane[], sampling: Sampling, taps: Taps, invalid: (Int32Array | undefined)[], { values, valid }: Resampled, start: number, end: number): void {
  const { xs, ys } = sampling;
  const { width, height } = planes[0];
  const { kernel, sx, sy, rx, ry, nx, ny, wx, wy } = taps;
  for (let o = start; o < end; o++) {
    // As GDAL's warper, an output pixel whose own source pixel is invalid stays invalid: the
    // kernel smooths values, never grows the data into its nodata.
    const centre = holding(sampling, o, width, height);
    if (centre < 0) continue;
    // Pixel centres sit at i + 0.5: the kernel is centred on the position less half a pixel.
    const px = xs[o] - 0.5;
    const py = ys[o] - 0.5;
    const x0 = Math.floor(px) + 1 - rx;
    const y0 = Math.floor(py) + 1 - ry;
    const fx = px - Math.floor(px);
    const fy = py - Math.floor(py);
    let sumX = 0;
    let sumY = 0;
    for (let k = 0; k < nx; k++) sumX += wx[k] = kernelWeight(kernel, (k + 1 - rx - fx) * sx);
    for (let k = 0; k < ny; k++) sumY += wy[k] = kernelWeight(kernel, (k + 1 - ry - fy) * sy);
    const inside = x0 >= 0 && y0 >= 0 && x0 + nx <= width && y0 + ny <= height;
    // Bands sharing a table (an 8-bit source's share its mask's validity) look at the box once.
    let tested: Int32Array | undefined;
    let clear = inside;
    for (let b = 0; b < planes.length; b++) {
      const { values: src, valid: ok } = planes[b];
      if (!ok[centre]) continue;
      let sum = 0;
      let weights = 0;
      const sums = invalid[b];
      if (sums !== tested) {
        tested = sums;
        clear = inside && (!sums || allValid(sums, width, x0, y0, nx, ny));
      }
      if (clear) {
        sum = boxSum(src, y0 * width + x0, width, taps);
        weights = sumX * sumY;
      } else {
        // At the window's edge or near an invalid pixel: only the band's valid pixels count.
        for (let j = 0; j < ny; j++) {
          const y = y0 + j;
          if (y < 0 || y >= height || wy[j] === 0) continue;
          const row = y * width;
          for (let i = 0; i < nx; i++) {
            const x = x0 + i;
            if (x < 0 || x >= width || !ok[row + x]) continue;
            const w = wx[i] * wy[j];
            sum += w * src[row + x];
            weights += w;
          }
        }
      }
      if (weights > MIN_WEIGHT) {
        values[b][o] = sum / weights;
        valid[b][o] = 1;
      }
    }
  }
}
