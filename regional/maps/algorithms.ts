// The algorithms a tile or area applies to its channels before colouring (shared/maps/algorithms.ts
// names them and checks their parameters). The input is the warped output grid grown by the
// algorithm's buffer on every side (a 3×3 kernel's neighbours beyond the tile's edge are real
// source pixels, so neighbouring tiles join without seams); the output is the grid itself.
// Hillshade and slope follow gdaldem's default (Horn's) formulas on the grid's cells, so a tile
// equals gdaldem run on the same warped tile; the terrain encodings are MapLibre's and Mapbox's.
import { ALGORITHMS, parametersOf, type AlgorithmName, type AlgorithmParams } from "../../shared/maps/algorithms";
import type { OutputSize } from "../../shared/maps/tile-cost";
import type { Slices } from "../runtime/slices";
import type { AssetTuple } from "./pixel-selection";

/** The output grid's cells: their sides in its CRS's units (y negative, north up), and whether those are degrees. */
export interface GridCells {
  xSize: number;
  ySize: number;
  geographic: boolean;
}

/** Metres per degree of latitude, gdaldem's advice for `-s` on a geographic DEM. */
const METRES_PER_DEGREE = 111120;

/** One output pixel's value from the input at `i` (its index in the buffered input, rows `stride` apart), or NaN for none. */
type PixelKernel = (input: AssetTuple, i: number, stride: number) => number;

/**
 * `name` applied to `input` (channels over `size` grown by the algorithm's buffer): channels over `size`.
 * Runs in `slices`; each output pixel reads only the input, so the order of chunks does not matter.
 */
export async function applyAlgorithm(name: AlgorithmName, given: AlgorithmParams | undefined, input: AssetTuple, size: OutputSize, cells: GridCells, slices: Slices): Promise<AssetTuple> {
  const params = parametersOf(name, given);
  if (name === "terrarium" || name === "terrainrgb") return encodeHeights(name, params, input, size, slices);
  const kernel = name === "normalizedIndex" ? normalizedIndex : name === "hillshade" ? hillshade(params, cells) : slope(params, cells);
  const buffer = ALGORITHMS[name].buffer;
  const stride = size.width + 2 * buffer;
  const values = new Float32Array(size.width * size.height);
  const valid = new Uint8Array(size.width * size.height);
  await slices.each(size.height, size.width * 12, (start, end) => {
    for (let row = start; row < end; row++) {
      for (let col = 0, o = row * size.width; col < size.width; col++, o++) {
        const v = kernel(input, (row + buffer) * stride + col + buffer, stride);
        if (Number.isNaN(v)) continue;
        values[o] = v;
        valid[o] = 1;
      }
    }
  });
  return { bands: [values], valid: [valid] };
}

/** (b − a) / (b + a) of the two channels; none where either is invalid or their sum is 0. */
const normalizedIndex: PixelKernel = ({ bands: [a, b], valid }, i) =>
  valid[0][i] && valid[1][i] && a[i] + b[i] !== 0 ? Math.fround((b[i] - a[i]) / (b[i] + a[i])) : Number.NaN;

/**
 * Horn's gradient sums of the 3×3 window around `i` into `out`: west minus east, and south minus
 * north (a0…a8 row by row from the north-west). False when a pixel of the window is invalid:
 * gdaldem writes nodata there.
 */
function hornSums(v: Float32Array, ok: Uint8Array, i: number, stride: number, out: Float64Array): boolean {
  const [n, s] = [i - stride, i + stride];
  if (!(ok[n - 1] & ok[n] & ok[n + 1] & ok[i - 1] & ok[i + 1] & ok[s - 1] & ok[s] & ok[s + 1])) return false;
  out[0] = v[n - 1] + 2 * v[i - 1] + v[s - 1] - (v[n + 1] + 2 * v[i + 1] + v[s + 1]);
  out[1] = v[s - 1] + 2 * v[s] + v[s + 1] - (v[n - 1] + 2 * v[n] + v[n + 1]);
  return true;
}

/** The horizontal scale: the parameter, else 1, or metres per degree on a geographic grid. */
const scaleOf = (params: AlgorithmParams, cells: GridCells) => (params.scale as number | undefined) ?? (cells.geographic ? METRES_PER_DEGREE : 1);

/**
 * gdaldem hillshade's default: Horn's slope, the light at `azimuth` and `angle_altitude`, 1–255
 * (254 × the cosine of the angle to the light, plus one; 1 in full shade).
 */
function hillshade(params: AlgorithmParams, cells: GridCells): PixelKernel {
  const rad = Math.PI / 180;
  const altitude = (params.angle_altitude as number) * rad;
  const azimuth = (params.azimuth as number) * rad;
  const z = (params.z_factor as number) / (8 * scaleOf(params, cells));
  const cosAltZ254 = 254 * Math.cos(altitude) * z;
  const [cosAz, sinAz] = [Math.cos(azimuth) * cosAltZ254, Math.sin(azimuth) * cosAltZ254];
  const sinAlt254 = 254 * Math.sin(altitude);
  const sums = new Float64Array(2);
  return ({ bands, valid }, i, stride) => {
    if (!valid[0][i] || !hornSums(bands[0], valid[0], i, stride, sums)) return Number.NaN;
    const x = sums[0] / cells.xSize;
    const y = sums[1] / cells.ySize;
    const shade = (sinAlt254 - (y * cosAz - x * sinAz)) / Math.sqrt(1 + z * z * (x * x + y * y));
    // gdaldem writes the float into a byte band: rounded.
    return Math.round(shade <= 0 ? 1 : 1 + shade);
  };
}

/** gdaldem slope's default: Horn's method, in degrees or percent. */
function slope(params: AlgorithmParams, cells: GridCells): PixelKernel {
  const scale8 = 8 * scaleOf(params, cells);
  const percent = params.units === "percent";
  const sums = new Float64Array(2);
  return ({ bands, valid }, i, stride) => {
    if (!valid[0][i] || !hornSums(bands[0], valid[0], i, stride, sums)) return Number.NaN;
    const dx = sums[0] / cells.xSize;
    const dy = sums[1] / cells.ySize;
    const rise = Math.sqrt(dx * dx + dy * dy) / scale8;
    return Math.fround(percent ? 100 * rise : (Math.atan(rise) * 180) / Math.PI);
  };
}

/** Largest code of 24 bits (Terrain-RGB), and of Terrarium's 16 whole bits and 8 of fraction. */
const MAX_RGB_CODE = 2 ** 24 - 1;
const MAX_TERRARIUM = 65536 - 1 / 256;

/**
 * Heights as RGB: Terrarium's v = h + 32768 (R = ⌊v/256⌋, G = ⌊v⌋ mod 256, B = ⌊frac(v)·256⌋), or
 * Terrain-RGB's code round((h − baseval)/interval) in R, G, B from the most significant. Every
 * pixel is valid: where the DEM has none, `nodata_height` is encoded (MapLibre reads every pixel).
 */
async function encodeHeights(name: "terrarium" | "terrainrgb", params: AlgorithmParams, input: AssetTuple, size: OutputSize, slices: Slices): Promise<AssetTuple> {
  const pixels = size.width * size.height;
  const rgb = [new Float32Array(pixels), new Float32Array(pixels), new Float32Array(pixels)];
  const nodata = params.nodata_height as number;
  const [values, valid] = [input.bands[0], input.valid[0]];
  await slices.each(pixels, 8, (start, end) => {
    for (let i = start; i < end; i++) {
      const h = valid[i] ? values[i] : nodata;
      let code: number;
      if (name === "terrarium") {
        const v = Math.min(MAX_TERRARIUM, Math.max(0, h + 32768));
        const whole = Math.floor(v);
        code = whole * 256 + Math.floor((v - whole) * 256);
      } else {
        code = Math.min(MAX_RGB_CODE, Math.max(0, Math.round((h - (params.baseval as number)) / (params.interval as number))));
      }
      rgb[0][i] = code >> 16;
      rgb[1][i] = (code >> 8) & 255;
      rgb[2][i] = code & 255;
    }
  });
  const opaque = new Uint8Array(pixels).fill(1);
  return { bands: rgb, valid: [opaque, opaque, opaque] };
}
