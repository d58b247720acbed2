// Resampling kernels, as GDAL's warper applies them. A source position (sx, sy) is in pixel
// coordinates of the window read (pixel i covers [i, i + 1)). Nearest takes the pixel that holds
// it; bilinear and cubic (Keys, a = −0.5, GDAL's "cubic") weigh the pixels around it, the kernel
// stretched by 1/scale when the output is coarser than the source (scale < 1), so every source
// pixel under an output pixel counts. Each band is resampled on its own: only that band's valid
// pixels take part and their weights are renormalised, so one band's nodata never bleeds into
// another band, nor into its own neighbours' values.
import type { Resampling } from "../../shared/maps/tile-request";
import type { Plane } from "../cog/bands";

export interface Kernel {
  /** Half-width in source pixels at scale 1. */
  radius: number;
  weight(distance: number): number;
}

export const KERNELS: Record<Exclude<Resampling, "nearest">, Kernel> = {
  bilinear: { radius: 1, weight: (d) => Math.max(0, 1 - Math.abs(d)) },
  cubic: { radius: 2, weight: keysCubic },
};

/** Keys' cubic convolution with a = −0.5. */
function keysCubic(distance: number): number {
  const x = Math.abs(distance);
  if (x < 1) return (1.5 * x - 2.5) * x * x + 1;
  if (x < 2) return ((-0.5 * x + 2.5) * x - 4) * x + 2;
  return 0;
}

/** Below this total weight no valid pixel counts enough: the output is invalid (GDAL's threshold). */
const MIN_WEIGHT = 1e-5;

/** How far beyond a position a kernel reads, in source pixels, at `scale`. */
export function kernelReach(resampling: Resampling, scale: number): number {
  return resampling === "nearest" ? 0 : Math.ceil(KERNELS[resampling].radius / Math.min(1, scale));
}

/**
 * Resamples `plane` at the positions `xs`, `ys` (window pixels; NaN: no source) into `values`
 * and `valid`, for the output pixels whose `covered` is 1 (the others are left invalid).
 * `scaleX`, `scaleY`: output pixels per source pixel along each axis.
 */
export function resample(
  plane: Plane,
  xs: Float64Array,
  ys: Float64Array,
  covered: Uint8Array,
  resampling: Resampling,
  scaleX: number,
  scaleY: number,
  values: Float32Array,
  valid: Uint8Array,
): void {
  if (resampling === "nearest") return nearest(plane, xs, ys, covered, values, valid);
  const kernel = KERNELS[resampling];
  const sx = Math.min(1, scaleX);
  const sy = Math.min(1, scaleY);
  const rx = Math.ceil(kernel.radius / sx);
  const ry = Math.ceil(kernel.radius / sy);
  const wx = new Float64Array(2 * rx);
  const wy = new Float64Array(2 * ry);
  const { width, height, values: src, valid: ok } = plane;
  for (let o = 0; o < xs.length; o++) {
    if (!covered[o]) continue;
    // Pixel centres sit at i + 0.5: the kernel is centred on the position less half a pixel.
    // As GDAL's warper, an output pixel whose own source pixel is invalid stays invalid: the
    // kernel smooths values, never grows the data into its nodata.
    const cx = Math.floor(xs[o] + 1e-10);
    const cy = Math.floor(ys[o] + 1e-10);
    if (cx < 0 || cy < 0 || cx >= plane.width || cy >= plane.height || !plane.valid[cy * plane.width + cx]) continue;
    const px = xs[o] - 0.5;
    const py = ys[o] - 0.5;
    const ix = Math.floor(px);
    const iy = Math.floor(py);
    const fx = px - ix;
    const fy = py - iy;
    for (let k = 0; k < 2 * rx; k++) wx[k] = kernel.weight((k + 1 - rx - fx) * sx);
    for (let k = 0; k < 2 * ry; k++) wy[k] = kernel.weight((k + 1 - ry - fy) * sy);
    let sum = 0;
    let weights = 0;
    for (let j = 0; j < 2 * ry; j++) {
      const y = iy + 1 - ry + j;
      if (y < 0 || y >= height || wy[j] === 0) continue;
      const row = y * width;
      for (let i = 0; i < 2 * rx; i++) {
        const x = ix + 1 - rx + i;
        if (x < 0 || x >= width || !ok[row + x]) continue;
        const w = wx[i] * wy[j];
        sum += w * src[row + x];
        weights += w;
      }
    }
    if (weights > MIN_WEIGHT) {
      values[o] = sum / weights;
      valid[o] = 1;
    }
  }
}

function nearest(plane: Plane, xs: Float64Array, ys: Float64Array, covered: Uint8Array, values: Float32Array, valid: Uint8Array): void {
  const { width, height, values: src, valid: ok } = plane;
  for (let o = 0; o < xs.length; o++) {
    if (!covered[o]) continue;
    // GDAL's slack: a position a hair below a pixel boundary belongs to the pixel above it.
    const x = Math.floor(xs[o] + 1e-10);
    const y = Math.floor(ys[o] + 1e-10);
    if (x < 0 || y < 0 || x >= width || y >= height) continue;
    const i = y * width + x;
    if (ok[i]) {
      values[o] = src[i];
      valid[o] = 1;
    }
  }
}
