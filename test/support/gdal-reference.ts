// What GDAL makes of the map fixtures, for the tests to hold Tessera's answers against: a tile
// warped by gdalwarp (same bounds, size, target CRS and resampling; GDAL's default error
// threshold and overview choice), a window of bands and their masks as GDAL reads them, the grid
// gdalwarp suggests for a CRS, points moved between CRSs, and what gdalinfo reports. All through one GDAL process (gdal-worker.py, Debian's
// python3-gdal) per test file, which runs gdalwarp's and gdalinfo's own library entry points
// with their command-line arguments.
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import type { TileMatrixSet } from "../../shared/maps/tile-matrix-sets";
import type { Resampling } from "../../shared/maps/tile-request";

/** The Python that has GDAL's bindings (Debian's python3-gdal), not another one on the PATH. */
export const GDAL_PYTHON = "/usr/bin/python3";
const WORKER = fileURLToPath(new URL("./gdal-worker.py", import.meta.url));

/** Bands of a tile as raw values, and per band where they are valid (1) or not (0). */
export interface TilePlanes {
  width: number;
  height: number;
  bands: Float32Array[];
  valid: Uint8Array[];
}

export const GDAL_RESAMPLING: Record<Resampling, string> = { nearest: "near", bilinear: "bilinear", cubic: "cubic" };

/**
 * gdalwarp of `file` onto a tile: `bounds` in `tms`'s CRS, `side`² pixels, every band as Float32
 * source values; NaN marks what GDAL leaves unwritten (outside the data, nodata), which becomes
 * validity 0. `options`: more gdalwarp arguments.
 */
export function gdalWarpTile(
  file: string,
  tms: TileMatrixSet,
  bounds: readonly [number, number, number, number],
  side: number,
  resampling: Resampling,
  options: string[] = [],
): Promise<TilePlanes> {
  return gdalWarp(file, { crs: tms.crs, bounds, width: side, height: side, resampling, options });
}

/** gdalwarp of `file` onto any grid: `bounds` (-te) in `crs` (-t_srs), `width` × `height` pixels (-ts), as gdalWarpTile. */
export async function gdalWarp(
  file: string,
  grid: { crs: string; bounds: readonly number[]; width: number; height: number; resampling: Resampling; options?: string[] },
): Promise<TilePlanes> {
  const { crs, bounds, width, height, resampling, options = [] } = grid;
  const args = ["-ot", "Float32", "-dstnodata", "nan", "-t_srs", crs, "-te", ...bounds.map(String), "-ts", String(width), String(height), "-r", GDAL_RESAMPLING[resampling], ...options];
  const out = await call<{ width: number; height: number; bands: number; data: string }>({ op: "warp", src: file, args });
  const raw = Buffer.from(out.data, "base64");
  const all = new Float32Array(raw.buffer, raw.byteOffset, raw.byteLength / 4);
  const plane = out.width * out.height;
  const bands = Array.from({ length: out.bands }, (_, b) => all.slice(b * plane, (b + 1) * plane));
  const valid = bands.map((band) => Uint8Array.from(band, (v) => (Number.isNaN(v) ? 0 : 1)));
  return { width: out.width, height: out.height, bands, valid };
}

/** The grid gdalwarp chooses for `file` reprojected to `crs`: its geotransform and size. */
export function gdalSuggestedWarpOutput(file: string, crs: string): Promise<{ geoTransform: number[]; width: number; height: number }> {
  return call({ op: "suggestedWarpOutput", src: file, crs });
}

/** `gdalinfo -json`'s report of a file, opened with the driver's `openOptions` (gdalinfo's -oo). */
export function gdalInfo(file: string, openOptions: string[] = []): Promise<Record<string, unknown>> {
  return call({ op: "info", file, openOptions });
}

/**
 * GDAL's own read of a window [x0, y0, x1, y1] of `file`'s level (0 = full resolution, n = its
 * nth overview): each of `bands` (from 1) as stored, and its mask band (1 valid, 0 not).
 */
export async function gdalWindow(file: string, level: number, window: readonly number[], bands: number[]): Promise<{ values: Float64Array[]; mask: Uint8Array[] }> {
  const [x0, y0, x1, y1] = window;
  const out = await call<{ values: string; masks: string }>({ op: "read", file, level, window, bands });
  const values = Buffer.from(out.values, "base64");
  const all = new Float64Array(Uint8Array.prototype.slice.call(values).buffer);
  const masks = Buffer.from(out.masks, "base64");
  const n = (x1 - x0) * (y1 - y0);
  return {
    values: bands.map((_, i) => all.slice(i * n, (i + 1) * n)),
    mask: bands.map((_, i) => Uint8Array.from(masks.subarray(i * n, (i + 1) * n), (m) => (m > 0 ? 1 : 0))),
  };
}

/** Points [x, y] from CRS `from` to CRS `to`, x (easting, longitude) first. */
export async function gdalTransform(points: [number, number][], from: string, to: string): Promise<[number, number][]> {
  return (await call<{ points: [number, number][] }>({ op: "transform", points, from, to })).points;
}

/** Full-resolution pixel positions [x, y] of `file` to [longitude, latitude], as `gdaltransform -t_srs EPSG:4326 file`. */
export async function gdalPixelToLonLat(file: string, points: [number, number][]): Promise<[number, number][]> {
  return (await call<{ points: [number, number][] }>({ op: "pixelToLonLat", file, points })).points;
}

/** rio-tiler's statistics of one band by NumPy, over a window GDAL reads (its mask, and a cutline mask of 1 inside). */
export interface NumpyStatistics {
  min: number | null;
  max: number | null;
  mean: number | null;
  count: number;
  sum: number;
  std: number | null;
  median: number | null;
  majority: number | null;
  minority: number | null;
  unique: number;
  histogram: [number[], number[]];
  valid_percent: number;
  masked_pixels: number;
  valid_pixels: number;
  percentiles: Record<string, number | null>;
}

export function numpyStatistics(request: {
  file: string;
  band: number;
  level: number;
  window: readonly number[];
  /** gdalwarp arguments: the statistics of `file` warped so (into memory), not of the file itself. */
  warp?: string[];
  cutline?: Uint8Array;
  percentiles?: number[];
  bins?: number | number[];
  range?: [number, number];
  categorical?: boolean;
}): Promise<NumpyStatistics> {
  const { cutline, ...rest } = request;
  return call({ op: "numpyStatistics", ...rest, ...(cutline && { cutline: Buffer.from(cutline).toString("base64") }) });
}

/** gdal_rasterize of a GeoJSON geometry (longitude, latitude) onto a grid: 1 inside (pixel centres), else 0. */
export async function gdalRasterize(geometry: unknown, crs: string, geoTransform: readonly number[], width: number, height: number): Promise<Uint8Array> {
  const out = await call<{ mask: string }>({ op: "rasterize", geometry, crs, geoTransform, width, height });
  return new Uint8Array(Buffer.from(out.mask, "base64"));
}

/**
 * `gdaldem {processing}` (hillshade, slope) with its `options` on `plane` (NaN: no data) placed by
 * `geoTransform` in `crs`: the output, NaN where gdaldem writes its nodata.
 */
export async function gdalDem(processing: "hillshade" | "slope", plane: Float32Array, grid: { width: number; height: number; geoTransform: readonly number[]; crs: string }, options: string[] = []): Promise<Float32Array> {
  const NODATA = -9999;
  const data = Float32Array.from(plane, (v) => (Number.isNaN(v) ? NODATA : v));
  const out = await call<{ data: string }>({ op: "dem", processing, options, nodata: NODATA, ...grid, data: Buffer.from(data.buffer).toString("base64") });
  const raw = Buffer.from(out.data, "base64");
  return new Float32Array(Uint8Array.prototype.slice.call(raw).buffer);
}

/** One GDAL process, answering requests in the order they were sent. */
class GdalWorker {
  private readonly child = spawn(GDAL_PYTHON, [WORKER], { stdio: ["pipe", "pipe", "inherit"] });
  private readonly waiting: ((line: string) => void)[] = [];
  exited = false;

  constructor() {
    createInterface({ input: this.child.stdout }).on("line", (line) => {
      this.waiting.shift()?.(line);
      if (this.waiting.length === 0) this.hold(false);
    });
    this.child.on("exit", (code) => {
      this.exited = true;
      for (const answer of this.waiting.splice(0)) answer(JSON.stringify({ error: `gdal-worker.py exited (${code})` }));
    });
    this.hold(false);
  }

  async call<T>(request: Record<string, unknown>): Promise<T> {
    const line = await new Promise<string>((resolve) => {
      this.waiting.push(resolve);
      this.hold(true);
      this.child.stdin.write(`${JSON.stringify(request)}\n`);
    });
    const answer = JSON.parse(line) as { ok?: T; error?: string };
    if (answer.error !== undefined) throw new Error(`GDAL: ${answer.error}`);
    return answer.ok as T;
  }

  /** An idle worker keeps no process alive (it ends when its stdin closes); a pending answer does. */
  private hold(on: boolean): void {
    for (const handle of [this.child, this.child.stdout] as unknown as { ref(): void; unref(): void }[]) {
      if (on) handle.ref();
      else handle.unref();
    }
  }
}

let worker: GdalWorker | undefined;

/** One request to this process's GDAL worker, started on first use. */
function call<T>(request: Record<string, unknown>): Promise<T> {
  if (!worker || worker.exited) worker = new GdalWorker();
  return worker.call<T>(request);
}
