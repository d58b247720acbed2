// A web-map tile warped from a georeferenced source, in two steps. The plan decides, without any
// I/O, what gdalwarp would: the stored level to read (gdalwarp's default overview choice for the
// tile's resolution), where each tile pixel's centre lies in it (the approximate transformer),
// and so the level window the tile needs, which is what the decode costs. The warp then reads
// only that window's blocks and resamples each band on its own. A source already in the tile's
// CRS on the tile's grid (a stored level of the same resolution, aligned to whole pixels)
// skips the resampling: its pixels are copied.
import { badRequest, notFound } from "../../shared/errors";
import { tileBounds, tileMatrix, tileMatrixSet } from "../../shared/maps/tile-matrix-sets";
import { tileSide, type Resampling, type TileRequest } from "../../shared/maps/tile-request";
import type { Cost } from "../../shared/cost";
import type { LevelSize } from "../../shared/levels";
import { readWork, squareOf, tileCost, type OutputSize, type TileCostShape, type TileRead } from "../../shared/maps/tile-cost";
import type { Cog, LevelWindow } from "../cog/cog";
import { bandLayout, readBands, sampleType } from "../cog/bands";
import { placementIn, toSourceCrs, type SourceGeo } from "../cog/georeference";
import { Slices } from "../runtime/slices";
import type { Reservation } from "../runtime/work-budget";
import { sameCrs, setCrs, type Crs } from "./crs";
import { kernelReach, resample, type Sampling } from "./kernels";
import { applyAffine, invertAffine, recyclePositions, sourceCoordinates, type Affine } from "./transformer";

export interface WarpedTile {
  width: number;
  height: number;
  /** One plane per rendered band (the request's bidx, or the default bands), source values (not rescaled) warped to the tile grid. */
  bands: Float32Array[];
  /** Per band, 1 where that band's warped value is valid, 0 where it is outside the data, nodata or masked. */
  valid: Uint8Array[];
}

/**
 * Where a warp paints: a grid of `width` × `height` pixels in `crs`, `affine` placing each output
 * pixel there (GDAL's geotransform order, in proj4's units). Data only, so a render pool's thread
 * can be handed it. A tile of a tile matrix set is one (tileGrid); so is an area a client names.
 */
export interface OutputGrid {
  crs: Crs;
  affine: Affine;
  width: number;
  height: number;
  /**
   * The source's resolution in `crs`, as gdalwarp suggests it, which the stored level is chosen
   * by; absent: computed from the source (a tile's comes with the source's metadata).
   */
  sourceResolution?: number;
}

/** What a warp reads and how it resamples, decided before any pixel is fetched. */
export interface WarpPlan extends Sampling, OutputSize {
  /** One-based bands rendered. */
  bands: number[];
  /** The level and window read; absent when the output misses the data (nothing is read). */
  read?: TileRead;
}

/** Within this, a position is on a pixel boundary and a scale is one. */
const GRID_SLACK = 1e-6;

/** 400 for a band past the ones `cog` has. */
export function checkBands(cog: Cog, bands: readonly number[]): void {
  const { count } = bandLayout(cog.levels[0].image);
  const past = bands.find((b) => b > count);
  if (past !== undefined) throw badRequest(`bidx ${past} is past the source's ${count} band${count === 1 ? "" : "s"}`);
}

/**
 * Plans `req` on `cog` (grown by `buffer` pixels on every side): 404 when the source is not
 * georeferenced, 400 for a band it lacks.
 * No I/O; its passes over the tile's pixels run in `slices` of the request's computation.
 */
export async function planTile(cog: Cog, req: TileRequest, slices: Slices, buffer = 0): Promise<WarpPlan> {
  const geo = georeferenced(cog);
  const grid = tileGrid(req, geo, cog.levels[0]);
  return grid ? planGrid(cog, bufferedGrid(grid, buffer), req.bidx, req.resampling, slices) : outside(squareOf(tileSide(req) + 2 * buffer), bandsOf(cog, req.bidx), req.resampling);
}

/** `grid` grown by `buffer` cells on every side (a kernel's neighbours beyond its edge), on the same cells. */
export function bufferedGrid(grid: OutputGrid, buffer: number): OutputGrid {
  if (buffer === 0) return grid;
  const [x0, a, b, y0, c, d] = grid.affine;
  return { ...grid, affine: [x0 - buffer * (a + b), a, b, y0 - buffer * (c + d), c, d], width: grid.width + 2 * buffer, height: grid.height + 2 * buffer };
}

/**
 * Tile `req` as an output grid, when the source lies on its set at all: its cells in the set's
 * CRS, and the source's resolution there as gdalwarp chooses a level by.
 */
export function tileGrid(req: TileRequest, geo: SourceGeo, full: LevelSize): OutputGrid | undefined {
  const tms = tileMatrixSet(req.tileMatrixSet);
  const tiling = geo.info.tiling[tms.id];
  if (!tiling) return undefined;
  const [left, , , top] = tileBounds(tms, req.z, req.x, req.y);
  const cell = tileMatrix(tms, req.z)!.cellSize / req.scale;
  const side = tileSide(req);
  return { crs: setCrs(tms.id), affine: [left, cell, 0, top, 0, -cell], width: side, height: side, sourceResolution: levelResolution(geo.pixelToCrs, full, tiling) };
}

/**
 * Plans a warp of `cog`'s `bands` (default: its colour bands) to `grid`: the level gdalwarp
 * would read for the grid's resolution, each output pixel's position in it, and the window those
 * positions need. No I/O; its passes over the output's pixels run in `slices`.
 */
export async function planGrid(cog: Cog, grid: OutputGrid, bidx: number[] | undefined, resampling: Resampling, slices: Slices): Promise<WarpPlan> {
  const geo = georeferenced(cog);
  const bands = bandsOf(cog, bidx);
  const { width, height, affine } = grid;
  const full = cog.levels[0];
  // gdalwarp chooses by the coarser of the output's two cell sides (GDAL 3.6, measured: a box
  // of 0.001° × 0.0005° cells over 0.0005° × 0.0004° pixels reads the first overview).
  const cell = Math.max(Math.hypot(affine[1], affine[4]), Math.hypot(affine[2], affine[5]));
  const index = overviewFor(cog, cell / (grid.sourceResolution ?? placedResolution(geo, full, grid.crs)));
  const level = cog.levels[index];
  // Grid CRS → source CRS → full-resolution pixel → this level's pixel.
  const toPixel = invertAffine(geo.pixelToCrs);
  const kx = level.width / full.width;
  const ky = level.height / full.height;
  const toLevel: Affine = [toPixel[0] * kx, toPixel[1] * kx, toPixel[2] * kx, toPixel[3] * ky, toPixel[4] * ky, toPixel[5] * ky];
  const toSource = toSourceCrs(geo, grid.crs);
  const exact = (x: number, y: number): [number, number] => {
    const [sx, sy] = toSource(...applyAffine(affine, x, y));
    return [toLevel[0] + sx * toLevel[1] + sy * toLevel[2], toLevel[3] + sx * toLevel[4] + sy * toLevel[5]];
  };
  const { xs, ys } = await sourceCoordinates(exact, width, height, slices);
  const { covered, extent, all } = await footprint(xs, ys, level, slices);
  if (!(extent[0] <= extent[2])) return { ...outside(grid, bands, resampling), covered };

  const scaleX = scaleOf(width, all[2] - all[0]);
  const scaleY = scaleOf(height, all[3] - all[1]);
  const aligned = sameCrs(geo.crs, grid.crs) && onGrid(xs, ys, width, height);
  const sampling = aligned ? "nearest" : resampling;
  const reach = kernelReach(sampling, Math.min(scaleX, scaleY));
  const window: LevelWindow = [
    Math.max(0, Math.floor(extent[0]) - reach),
    Math.max(0, Math.floor(extent[1]) - reach),
    Math.min(level.width, Math.floor(extent[2]) + 1 + reach),
    Math.min(level.height, Math.floor(extent[3]) + 1 + reach),
  ];
  await slices.each(xs.length, 2, (start, end) => shift(xs, ys, window, start, end));
  return { width, height, bands, read: { level: index, window }, xs, ys, covered, resampling: sampling, scaleX, scaleY };
}

/** The source's resolution in `crs` the level is chosen by, as for a tile; NaN (the full level) where it has no place there. */
function placedResolution(geo: SourceGeo, full: LevelSize, crs: Crs): number {
  const placement = placementIn(geo, full, crs);
  return placement ? levelResolution(geo.pixelToCrs, full, placement) : Number.NaN;
}

/** The source's georeference; 404 when it has none. */
function georeferenced(cog: Cog): SourceGeo {
  if (!cog.geo) throw notFound("the source is not georeferenced", `${cog.source.label} is not georeferenced`);
  return cog.geo;
}

/** The bands rendered (bidx, else the colour bands); 400 for one past the source's count. */
function bandsOf(cog: Cog, bidx: number[] | undefined): number[] {
  const bands = bidx ?? bandLayout(cog.levels[0].image).defaults;
  checkBands(cog, bands);
  return bands;
}

/** A plan that reads nothing: every output pixel is invalid. */
function outside(size: OutputSize, bands: number[], resampling: Resampling): WarpPlan {
  const { width, height } = size;
  return { width, height, bands, xs: new Float64Array(0), ys: new Float64Array(0), covered: new Uint8Array(width * height), resampling, scaleX: 1, scaleY: 1 };
}

/** Where each tile pixel's position falls, and the boxes of those positions. */
interface Footprint {
  /** 1 where the position falls inside the level. */
  covered: Uint8Array;
  /** The box of the covered positions [x0, y0, x1, y1]; empty (x0 > x1) when none is. */
  extent: number[];
  /** The box of every finite position. */
  all: number[];
}

async function footprint(xs: Float64Array, ys: Float64Array, level: { width: number; height: number }, slices: Slices): Promise<Footprint> {
  const found = { covered: new Uint8Array(xs.length), extent: [Infinity, Infinity, -Infinity, -Infinity], all: [Infinity, Infinity, -Infinity, -Infinity] };
  // The loops are functions of their own, given everything as arguments: called from a closure
  // made for each tile, their optimised code is kept from one tile to the next.
  await slices.each(xs.length, 8, (start, end) => footprintOf(xs, ys, level, found, start, end));
  return found;
}

function footprintOf(xs: Float64Array, ys: Float64Array, level: { width: number; height: number }, { covered, extent, all }: Footprint, start: number, end: number): void {
  for (let i = start; i < end; i++) {
    const x = xs[i];
    const y = ys[i];
    if (!Number.isFinite(x) || !Number.isFinite(y)) continue;
    grow(all, x, y);
    const cx = Math.floor(x + 1e-10);
    const cy = Math.floor(y + 1e-10);
    if (cx < 0 || cy < 0 || cx >= level.width || cy >= level.height) continue;
    covered[i] = 1;
    grow(extent, x, y);
  }
}

/** Positions in the level made positions in the window read. */
function shift(xs: Float64Array, ys: Float64Array, window: LevelWindow, start: number, end: number): void {
  for (let i = start; i < end; i++) {
    xs[i] -= window[0];
    ys[i] -= window[1];
  }
}

/** What a planned read costs: tileCost and readWork with the real window, bands, sample size and codec. */
export function plannedCost(cog: Cog, plan: WarpPlan): Cost {
  const shape = plannedShape(cog, plan);
  return { bytes: tileCost(shape, plan.read, plan), work: readWork(shape, plan.read, plan, plan.resampling) };
}

/**
 * What a planned read holds: its level's blocks (a chunky one decodes every sample it stores,
 * a planar one the planes read), the bands read with the mask or alpha, their sample size.
 */
export function plannedShape(cog: Cog, plan: Pick<WarpPlan, "read" | "bands">): TileCostShape {
  const level = cog.levels[plan.read?.level ?? 0];
  const { bits } = sampleType(level.image);
  const layout = bandLayout(level.image);
  const bands = plan.bands.length + (level.mask || layout.alpha !== undefined ? 1 : 0);
  const chunky = level.image.getFileDirectory().getValue("PlanarConfiguration") !== 2;
  return {
    tileWidth: level.tileWidth,
    tileHeight: level.tileHeight,
    bands,
    bytesPerSample: Math.ceil(bits / 8),
    blockSamples: chunky ? Math.max(bands, layout.count + (level.mask ? 1 : 0)) : bands,
    codec: cog.codec,
  };
}

/**
 * Reads and resamples a planned tile, in `slices` of the request's computation. `work`: the
 * request's reservation (else one of its own, fail-fast).
 */
export async function warpPlanned(cog: Cog, plan: WarpPlan, req: Pick<TileRequest, "nodata">, slices: Slices, work?: Reservation): Promise<WarpedTile> {
  const { width, height, read } = plan;
  const bands = plan.bands.map(() => new Float32Array(width * height));
  const valid = plan.bands.map(() => new Uint8Array(width * height));
  if (!read) return { width, height, bands, valid };
  const own = work ? undefined : cog.budget.tryReserve(plannedCost(cog, plan).bytes, `a tile of ${cog.source.label}`, "tile");
  try {
    const planes = await readBands(cog, read.level, read.window, plan.bands, req.nodata, slices.signal, (work ?? own)!);
    await resample(planes, plan, bands, valid, slices);
    spend(plan);
    return { width, height, bands, valid };
  } finally {
    own?.release();
  }
}

/** A warped plan's positions given back for the next plan's: the plan is warped once, and reads none after. */
function spend(plan: WarpPlan): void {
  recyclePositions(plan.xs, plan.ys);
  plan.xs = plan.ys = new Float64Array(0);
}

/** Plans and warps `req`: its bands over the tile grid, with their validity. */
export async function warpTile(cog: Cog, req: TileRequest, signal: AbortSignal = new AbortController().signal, work?: Reservation): Promise<WarpedTile> {
  const slices = new Slices(signal);
  return warpPlanned(cog, await planTile(cog, req, slices), req, slices, work);
}

/**
 * The level gdalwarp reads by default for an output `ratio` times coarser than the source's
 * own resolution: the last level finer than the ratio before the next is coarser, or the first
 * within 0.1 of it; the smallest level when every one is finer.
 */
export function overviewFor(cog: Pick<Cog, "levels">, ratio: number): number {
  const { levels } = cog;
  if (!(ratio > 1)) return 0;
  const ratioOf = (i: number) => levels[0].width / levels[i].width;
  let i = 0;
  for (; i < levels.length - 1; i++) {
    if (ratioOf(i) < ratio && ratioOf(i + 1) > ratio) break;
    if (Math.abs(ratioOf(i) - ratio) < 0.1) break;
  }
  return i;
}

/**
 * The source's resolution gdalwarp (GDAL 3.6) chooses the level by: for square pixels, the
 * resolution it suggests for the whole image (the diagonal's); for pixels that are not square,
 * the width of a source column along the output's x axis (the image's extent in the set's CRS
 * over its columns), whether the columns are the coarser axis or the finer, as measured with
 * GDAL 3.6 on sources of 30 × 20 m and 20 × 30 m pixels.
 */
function levelResolution(pixelToCrs: Affine, full: { width: number }, tiling: { resolution: number; bounds: readonly number[] }): number {
  const column = Math.hypot(pixelToCrs[1], pixelToCrs[4]);
  const row = Math.hypot(pixelToCrs[2], pixelToCrs[5]);
  return column === row ? tiling.resolution : (tiling.bounds[2] - tiling.bounds[0]) / full.width;
}

/** Whether every output pixel centre is a source pixel centre, one source pixel apart: a copy. */
function onGrid(xs: Float64Array, ys: Float64Array, width: number, height: number): boolean {
  const x0 = xs[0] - 0.5;
  const y0 = ys[0] - 0.5;
  if (Math.abs(x0 - Math.round(x0)) > GRID_SLACK || Math.abs(y0 - Math.round(y0)) > GRID_SLACK) return false;
  const last = width * height - 1;
  return (
    Math.abs(xs[last] - xs[0] - (width - 1)) < GRID_SLACK &&
    Math.abs(ys[last] - ys[0] - (height - 1)) < GRID_SLACK &&
    Math.abs(xs[width - 1] - xs[0] - (width - 1)) < GRID_SLACK &&
    Math.abs(ys[width - 1] - ys[0]) < GRID_SLACK
  );
}

function grow(box: number[], x: number, y: number): void {
  if (x < box[0]) box[0] = x;
  if (y < box[1]) box[1] = y;
  if (x > box[2]) box[2] = x;
  if (y > box[3]) box[3] = y;
}

/** Output pixels per source pixel across a span of `extent` source pixels between the first and last centres. */
const scaleOf = (pixels: number, extent: number) => (extent > 0 && Number.isFinite(extent) ? (pixels - 1) / extent : 1);
