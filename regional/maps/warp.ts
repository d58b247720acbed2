// A web-map tile warped from a georeferenced source, in two steps. The plan decides, without any
// I/O, what gdalwarp would: the stored level to read (gdalwarp's default overview choice for the
// tile's resolution), where each tile pixel's centre lies in it (the approximate transformer),
// and so the level window the tile needs, which is what the decode costs. The warp then reads
// only that window's blocks and resamples each band on its own. A source already in the tile's
// CRS on the tile's grid (a stored level of the same resolution, aligned to whole pixels)
// skips the resampling: its pixels are copied.
import { badRequest, notFound } from "../../shared/errors";
import { tileBounds, tileMatrixSet } from "../../shared/maps/tile-matrix-sets";
import { tileSide, type TileRequest } from "../../shared/maps/tile-request";
import type { Cost } from "../../shared/cost";
import { readWork, tileCost, type TileCostShape, type TileRead } from "../../shared/maps/tile-cost";
import type { Cog, LevelWindow } from "../cog/cog";
import { bandLayout, readBands, sampleType } from "../cog/bands";
import { Slices } from "../runtime/slices";
import type { Reservation } from "../runtime/work-budget";
import { inSetCrs, setConversion } from "./crs";
import { kernelReach, resample, type Sampling } from "./kernels";
import { invertAffine, sourceCoordinates, type Affine } from "./transformer";

export interface WarpedTile {
  width: number;
  height: number;
  /** One plane per rendered band (the request's bidx, or the default bands), source values (not rescaled) warped to the tile grid. */
  bands: Float32Array[];
  /** Per band, 1 where that band's warped value is valid, 0 where it is outside the data, nodata or masked. */
  valid: Uint8Array[];
}

/** What a tile reads and how it resamples, decided before any pixel is fetched. */
export interface TilePlan extends Sampling {
  side: number;
  /** One-based bands rendered. */
  bands: number[];
  /** The level and window read; absent when the tile misses the data (nothing is read). */
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
 * Plans `req` on `cog`: 404 when the source is not georeferenced, 400 for a band it lacks.
 * No I/O; its passes over the tile's pixels run in `slices` of the request's computation.
 */
export async function planTile(cog: Cog, req: TileRequest, slices: Slices): Promise<TilePlan> {
  const geo = cog.geo;
  if (!geo) throw notFound("the source is not georeferenced", `${cog.source.label} is not georeferenced`);
  const layout = bandLayout(cog.levels[0].image);
  const bands = req.bidx ?? layout.defaults;
  checkBands(cog, bands);
  const side = tileSide(req);
  const tms = tileMatrixSet(req.tileMatrixSet);
  const tiling = geo.info.tiling[tms.id];
  const outside = { side, bands, xs: new Float64Array(0), ys: new Float64Array(0), covered: new Uint8Array(side * side), resampling: req.resampling, scaleX: 1, scaleY: 1 };
  if (!tiling) return outside;

  const [left, , , top] = tileBounds(tms, req.z, req.x, req.y);
  const cell = tms.tileMatrices[req.z].cellSize / req.scale;
  const full = cog.levels[0];
  const index = overviewFor(cog, cell / levelResolution(geo.pixelToCrs, full, tiling));
  const level = cog.levels[index];
  // Set CRS → source CRS → full-resolution pixel → this level's pixel.
  const toPixel = invertAffine(geo.pixelToCrs);
  const kx = level.width / full.width;
  const ky = level.height / full.height;
  const toLevel: Affine = [toPixel[0] * kx, toPixel[1] * kx, toPixel[2] * kx, toPixel[3] * ky, toPixel[4] * ky, toPixel[5] * ky];
  const toSource = setConversion(geo.crs, tms.id, true);
  const exact = (x: number, y: number): [number, number] => {
    const [sx, sy] = toSource(left + x * cell, top - y * cell);
    return [toLevel[0] + sx * toLevel[1] + sy * toLevel[2], toLevel[3] + sx * toLevel[4] + sy * toLevel[5]];
  };
  const { xs, ys } = await sourceCoordinates(exact, side, side, slices);
  const { covered, extent, all } = await footprint(xs, ys, level, slices);
  if (!(extent[0] <= extent[2])) return { ...outside, covered };

  const scaleX = scaleOf(side, all[2] - all[0]);
  const scaleY = scaleOf(side, all[3] - all[1]);
  const aligned = inSetCrs(geo.crs, tms.id) && onGrid(xs, ys, side);
  const resampling = aligned ? "nearest" : req.resampling;
  const reach = kernelReach(resampling, Math.min(scaleX, scaleY));
  const window: LevelWindow = [
    Math.max(0, Math.floor(extent[0]) - reach),
    Math.max(0, Math.floor(extent[1]) - reach),
    Math.min(level.width, Math.floor(extent[2]) + 1 + reach),
    Math.min(level.height, Math.floor(extent[3]) + 1 + reach),
  ];
  await slices.each(xs.length, 2, (start, end) => shift(xs, ys, window, start, end));
  return { side, bands, read: { level: index, window }, xs, ys, covered, resampling, scaleX, scaleY };
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
export function plannedCost(cog: Cog, plan: TilePlan): Cost {
  const shape = plannedShape(cog, plan);
  return { bytes: tileCost(shape, plan.read, plan.side), work: readWork(shape, plan.read, plan.side, plan.resampling) };
}

/**
 * What a planned read holds: its level's blocks (a chunky one decodes every sample it stores,
 * a planar one the planes read), the bands read with the mask or alpha, their sample size.
 */
export function plannedShape(cog: Cog, plan: Pick<TilePlan, "read" | "bands">): TileCostShape {
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
export async function warpPlanned(cog: Cog, plan: TilePlan, req: TileRequest, slices: Slices, work?: Reservation): Promise<WarpedTile> {
  const { side, read } = plan;
  const bands = plan.bands.map(() => new Float32Array(side * side));
  const valid = plan.bands.map(() => new Uint8Array(side * side));
  if (!read) return { width: side, height: side, bands, valid };
  const own = work ? undefined : cog.budget.tryReserve(plannedCost(cog, plan).bytes, `a tile of ${cog.source.label}`, "tile");
  try {
    const planes = await readBands(cog, read.level, read.window, plan.bands, req.nodata, slices.signal, (work ?? own)!);
    await resample(planes, plan, bands, valid, slices);
    return { width: side, height: side, bands, valid };
  } finally {
    own?.release();
  }
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
function levelResolution(pixelToCrs: Affine, full: { width: number }, tiling: { resolution: number; bounds: number[] }): number {
  const column = Math.hypot(pixelToCrs[1], pixelToCrs[4]);
  const row = Math.hypot(pixelToCrs[2], pixelToCrs[5]);
  return column === row ? tiling.resolution : (tiling.bounds[2] - tiling.bounds[0]) / full.width;
}

/** Whether every output pixel centre is a source pixel centre, one source pixel apart: a copy. */
function onGrid(xs: Float64Array, ys: Float64Array, side: number): boolean {
  const x0 = xs[0] - 0.5;
  const y0 = ys[0] - 0.5;
  if (Math.abs(x0 - Math.round(x0)) > GRID_SLACK || Math.abs(y0 - Math.round(y0)) > GRID_SLACK) return false;
  const last = side * side - 1;
  return Math.abs(xs[last] - xs[0] - (side - 1)) < GRID_SLACK && Math.abs(ys[last] - ys[0] - (side - 1)) < GRID_SLACK && Math.abs(xs[side - 1] - xs[0] - (side - 1)) < GRID_SLACK && Math.abs(ys[side - 1] - ys[0]) < GRID_SLACK;
}

function grow(box: number[], x: number, y: number): void {
  if (x < box[0]) box[0] = x;
  if (y < box[1]) box[1] = y;
  if (x > box[2]) box[2] = x;
  if (y > box[3]) box[3] = y;
}

/** Output pixels per source pixel across a span of `extent` source pixels between the first and last centres. */
const scaleOf = (side: number, extent: number) => (extent > 0 && Number.isFinite(extent) ? (side - 1) / extent : 1);
