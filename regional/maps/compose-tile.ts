// A map tile, or an area of any output grid a client names (areas.ts), painted from one or more
// assets: a single COG is a mosaic of one. Every band an
// asset brings is warped on its own (one band's nodata never reaches another's interpolation);
// each asset's tuple (its source bands before channels, its evaluated channels after) is reduced
// by pixel selection in paint order; the colouring then runs once on the result. The plan is
// made and costed before any pixel I/O, so a mosaic tile is admitted like any tile: one
// reservation, permit and deadline for all of its child reads.
import { isMainThread } from "node:worker_threads";
import type { Cost, Partition } from "../../shared/cost";
import { badRequest } from "../../shared/errors";
import { ALGORITHMS, algorithmBuffer, parametersOf } from "../../shared/maps/algorithms";
import { expressionEvaluation, expressionNodes, parseExpressions, type BandPlane, type ExpressionProgram } from "../../shared/maps/expression";
import { AREA_WORK_HELP, composeWork, TILE_WORK_HELP, type OutputFormat, type OutputSize } from "../../shared/maps/tile-cost";
import type { PixelSelection, StyleFields } from "../../shared/maps/style";
import type { Resampling, TileRequest } from "../../shared/maps/tile-request";
import type { Cog } from "../cog/cog";
import { bandLayout } from "../cog/bands";
import type { PreparedDecode } from "../render/prepared-decode";
import { Slices } from "../runtime/slices";
import type { Reservation } from "../runtime/work-budget";
import { tileMatrix, tileMatrixSet } from "../../shared/maps/tile-matrix-sets";
import { applyAlgorithm, type GridCells } from "./algorithms";
import { isGeographic, setCrs } from "./crs";
import { pixelSelection, type AssetTuple } from "./pixel-selection";
import { areaTiff } from "./area-tiff";
import { featureMask, maskCost, type PixelRings } from "./feature-mask";
import { encodeTile, sampleRange, valueRanges, type RenderedTile } from "./render-tile";
import { bufferedGrid, plannedCost, planGrid, planTile, warpPlanned, type OutputGrid, type WarpPlan } from "./warp";

/** One band an asset brings: its name in expressions, and where it is stored. */
export interface AssetBand {
  name: string;
  cog: Cog;
  /** One-based band in `cog`. */
  band: number;
}

/** One asset a tile paints: a COG, or a STAC item's chosen assets. */
export interface TileAsset {
  label: string;
  /** Each band the style reads, once, sorted by band number (the tuple before channels). */
  bands: AssetBand[];
  /** Without an expression, the bands shown, by name, in the request's order. */
  channels: string[];
}

/** An area of `grid` painted with the style fields, as a tile is: the request of /bbox, /feature, /preview, /statistics. */
export interface AreaRequest extends StyleFields {
  grid: OutputGrid;
  resampling: Resampling;
  /** Absent: the values are wanted, not an image (statistics). */
  format?: OutputFormat;
  /** A feature's polygons in the grid's pixels: everything outside them is invalid (transparent, nodata). */
  polygons?: PixelRings[];
}

/** What a composition paints. */
export type PaintRequest = TileRequest | AreaRequest;

/** Band names in band-number order: `b2` before `b10`, `B04` before `B08`, `visual_b1` before `visual_b2`. */
export const byBandNumber = (a: string, b: string) => a.localeCompare(b, "en", { numeric: true });

/** What chooses a COG's bands: bidx or an expression; neither, its colour bands (a tile) or every band but alpha (`allBands`, a point). */
export type BandChoice = Pick<StyleFields, "bidx" | "expression"> & { allBands?: boolean };

/** The bands of `cog` a request reads (its expression's, its bidx, or by default as `allBands` says), named b1…bN. */
export function cogAsset(cog: Cog, req: BandChoice, label: string): TileAsset {
  const { count, defaults, alpha } = bandLayout(cog.levels[0].image);
  const every = Array.from({ length: count }, (_, i) => i + 1).filter((band) => band - 1 !== alpha);
  let numbers = req.bidx ?? (req.allBands ? every : defaults);
  if (req.expression) {
    const names = Array.from({ length: count }, (_, i) => `b${i + 1}`);
    numbers = parseExpressions(req.expression, names).bands.map((name) => Number(name.slice(1)));
  }
  const sorted = [...new Set(numbers)].sort((a, b) => a - b);
  return { label, bands: sorted.map((band) => ({ name: `b${band}`, cog, band })), channels: numbers.map((band) => `b${band}`) };
}

/** 400 unless every asset brings as many bands as the first: their tuples are reduced component by component. */
export function checkSameBands(assets: TileAsset[]): void {
  const [first] = assets;
  for (const asset of assets) {
    if (asset.bands.length !== first.bands.length) {
      // The assets by their labels (keys, URLs) for the log; the answer, cached for anyone, without.
      const differ = (a: string, b: string) => `the assets differ: ${a} brings ${first.bands.length} bands and ${b} ${asset.bands.length}; choose the bands with bidx or an expression`;
      throw badRequest(differ("one", "another"), differ(first.label, asset.label));
    }
  }
}

interface PlannedRead {
  cog: Cog;
  bands: AssetBand[];
  plan: WarpPlan;
}

/**
 * The tile's (or area's) decode over `assets` (in paint order), costed with every asset's real
 * window: the warps, the reducer's planes, and the image. `maxAssets` is checked by the caller.
 * Its planning and its render run in slices of the event loop under `signal`
 * (runtime/slices.ts).
 */
export async function composeTile(assets: TileAsset[], req: PaintRequest, what: string, signal: AbortSignal): Promise<PreparedDecode> {
  const composition = await compose(assets, req, signal);
  const workHelp = "grid" in req ? AREA_WORK_HELP : TILE_WORK_HELP;
  return { cost: composition.cost, what, workHelp, render: (signal, work, partition) => render(composition, what, signal, work, partition) };
}

/** The values of an area, before any colouring: each output channel's plane, named as titiler names it. */
export interface AreaValues extends AssetTuple, OutputSize {
  names: string[];
}

/** An area's values over `assets`, costed before any pixel I/O: what the statistics are computed from. */
export interface ComposedValues {
  cost: Cost;
  values(signal: AbortSignal, work: Reservation): Promise<AreaValues>;
}

export async function composeValues(assets: TileAsset[], req: AreaRequest, signal: AbortSignal): Promise<ComposedValues> {
  const composition = await compose(assets, { ...req, format: undefined }, signal);
  const names = channelNames(composition);
  return {
    cost: composition.cost,
    values: async (signal, work) => ({ ...(await composeTuple(composition, new Slices(signal), work)), ...composition.size, names }),
  };
}

/** Checks, plans and costs a composition; no pixel I/O. */
async function compose(assets: TileAsset[], req: PaintRequest, signal: AbortSignal): Promise<Composition> {
  const first = assets[0];
  const program = req.expression ? parseExpressions(req.expression, first.bands.map((b) => b.name)) : undefined;
  const stage = req.stage ?? "after_channels";
  const lastband = req.pixelSelection === "lastbandhigh" || req.pixelSelection === "lastbandlow";
  const decider = first.bands.at(-1)!.name;
  if (stage === "before_channels" && lastband && program?.bands.includes(decider)) {
    throw badRequest(`the expression reads ${decider}, which ${req.pixelSelection} decides on and drops before channels`);
  }
  const components = stage === "before_channels" ? first.bands.length : (program?.channels.length ?? first.channels.length);
  checkSameBands(assets);
  const made = req.pixelSelection === "count" ? 1 : (program?.channels.length ?? first.channels.length) - (lastband ? 1 : 0);
  const algorithm = req.algorithm ? ALGORITHMS[req.algorithm] : undefined;
  if (algorithm && made !== algorithm.inputs) {
    throw badRequest(`${req.algorithm} reads ${algorithm.inputs} channel${algorithm.inputs === 1 ? "" : "s"}, and the source gives ${made}; choose them with bidx or an expression`);
  }
  const buffer = algorithmBuffer(req.algorithm);
  const reads = await planAssets(assets, req, buffer, new Slices(signal));
  // The warps paint the output grown by the algorithm's buffer; the algorithm gives the output.
  const readSize: OutputSize = { width: reads[0][0].plan.width, height: reads[0][0].plan.height };
  const size: OutputSize = { width: readSize.width - 2 * buffer, height: readSize.height - 2 * buffer };
  const pixels = readSize.width * readSize.height;
  // The reducer's planes: two a component (value, validity); the stack statistics keep every asset's.
  const stacked = req.pixelSelection === "median" || req.pixelSelection === "stdev" || req.pixelSelection === "mean";
  const reducing = pixels * components * 5 * (stacked ? assets.length + 1 : 2);
  const readCosts = reads.flat().map((r) => plannedCost(r.cog, r.plan));
  const nodes = program ? expressionNodes(program) : 0;
  const mode = req.pixelSelection ?? "first";
  // A GeoTIFF holds its planes in the sample type, and the compressed file, beside the values.
  const tiff = req.format === "tif" ? pixels * components * 8 * 2 : 0;
  const mask = "polygons" in req && req.polygons ? maskCost(req.polygons, size.width, size.height) : { bytes: 0, work: 0 };
  const cost = {
    bytes: readCosts.reduce((sum, c) => sum + c.bytes, 0) + reducing + tiff + mask.bytes,
    work:
      readCosts.reduce((sum, c) => sum + c.work, 0) +
      mask.work +
      composeWork({ assets: assets.length, size: readSize, components, nodes, pixelSelection: mode, format: req.format, algorithm: req.algorithm }),
  };
  // An image maps values to 0–255; a GeoTIFF or statistics keep them.
  const image = req.format !== undefined && req.format !== "tif";
  // An algorithm's output spans its own range; a source's values their sample type's.
  const natural = () => (req.algorithm ? ALGORITHMS[req.algorithm].range(parametersOf(req.algorithm, req.algorithmParams)) : sampleRange(first.bands[0].cog));
  const ranges = image ? valueRanges(req, algorithm?.outputs ?? made, natural) : undefined;
  return { assets, reads, req, program, stage, mode, components, readSize, size, ranges, cost };
}

/** The output grid's cells, which hillshade and slope measure their gradients on. */
function gridCells(req: PaintRequest): GridCells {
  if ("grid" in req) return { xSize: req.grid.affine[1], ySize: req.grid.affine[5], geographic: isGeographic(req.grid.crs) };
  const tms = tileMatrixSet(req.tileMatrixSet);
  const cell = tileMatrix(tms, req.z)!.cellSize / req.scale;
  return { xSize: cell, ySize: -cell, geographic: isGeographic(setCrs(tms.id)) };
}

/** The names of a composition's output channels: `count`, the expression's channels, or its bands'. */
function channelNames({ req, program, assets }: Composition): string[] {
  if (req.algorithm) {
    const outputs = ALGORITHMS[req.algorithm].outputs;
    return outputs === 1 ? [req.algorithm] : Array.from({ length: outputs }, (_, i) => `${req.algorithm}_${i + 1}`);
  }
  if (req.pixelSelection === "count") return ["count"];
  if (program && req.expression) return req.expression.split(";").map((text) => text.trim());
  const lastband = req.pixelSelection === "lastbandhigh" || req.pixelSelection === "lastbandlow";
  return lastband ? assets[0].channels.slice(0, -1) : assets[0].channels;
}

/**
 * A tile of the full partition (a mosaic of many assets, an expression at the node cap) paints on
 * the render pool's threads, at their lower priority, so that viewers' tiles on this decoder take
 * the CPU first; a tile paints here, in slices of the event loop.
 */
async function render(composition: Composition, what: string, signal: AbortSignal, work: Reservation, partition: Partition): Promise<RenderedTile> {
  if (partition === "full" && isMainThread) {
    // Loaded here, not above: the pool's threads paint and never load the pool.
    const { paintInPool } = await import("../render/render-pool");
    return paintInPool(composition.assets, composition.req, what, signal, work);
  }
  return paint(composition, new Slices(signal), work);
}

/** A tile or area composed and planned, ready to paint. */
interface Composition {
  assets: TileAsset[];
  /** Each asset's warp plans, in paint order. */
  reads: PlannedRead[][];
  req: PaintRequest;
  program: ExpressionProgram | undefined;
  stage: "before_channels" | "after_channels";
  mode: PixelSelection;
  /** Components of each asset's tuple. */
  components: number;
  /** The output grown by the algorithm's buffer: what the warps paint. */
  readSize: OutputSize;
  size: OutputSize;
  ranges: [number, number][] | undefined;
  cost: Cost;
}

/** The composition's values, masked outside a feature's polygons, coloured and encoded. */
async function paint(tile: Composition, slices: Slices, work: Reservation): Promise<RenderedTile> {
  const out = await composeTuple(tile, slices, work);
  const { req, size } = tile;
  if ("polygons" in req && req.polygons) {
    const inside = await featureMask(req.polygons, size.width, size.height, slices);
    await slices.each(inside.length, out.valid.length, (start, end) => {
      for (const valid of out.valid) for (let i = start; i < end; i++) valid[i] &= inside[i];
    });
  }
  const { format } = req;
  if (format === "tif" && "grid" in req) {
    // Values no longer a band's own (an expression, a statistic over assets) are written as floats.
    const float = (req.algorithm ? ALGORITHMS[req.algorithm].outputType === "float32" : tile.program !== undefined) || ["mean", "stdev", "median"].includes(tile.mode);
    return areaTiff({ ...out, ...size, names: channelNames(tile) }, req.grid, tile.assets[0].bands[0].cog, float, req.nodata, slices);
  }
  if (format === undefined || format === "tif") throw new Error("a composition without an image format has values, not an image: composeValues");
  const lossless = req.algorithm !== undefined && ALGORITHMS[req.algorithm].exact;
  return encodeTile({ ...size, bands: out.bands, valid: out.valid }, { ...req, format }, tile.ranges, slices, lossless);
}

/** Each asset warped and made a tuple, in paint order; the tuples reduced; the channels computed; the algorithm applied. */
async function composeTuple(tile: Composition, slices: Slices, work: Reservation): Promise<AssetTuple> {
  const { assets, req, program, stage, mode, readSize } = tile;
  const pixels = readSize.width * readSize.height;
  const tupleAt = async (i: number) => {
    const planes = await warpAsset(tile.reads[i], req, slices, work);
    return stage === "before_channels" ? tupleOf(assets[i].bands.map((b) => planes.get(b.name)!)) : channels(program, assets[i], planes, pixels, slices);
  };
  // One asset painted `first` is its own result (its invalid pixels stay transparent): nothing to reduce.
  let reduced: AssetTuple;
  if (assets.length === 1 && mode === "first") {
    reduced = await tupleAt(0);
  } else {
    const reducer = pixelSelection({ mode, rankChannel: req.rankChannel, components: tile.components, pixels }, slices);
    for (let i = 0; i < assets.length && !reducer.done; i++) await reducer.add(await tupleAt(i));
    reduced = await reducer.result();
  }
  const made = stage === "before_channels" ? await afterReduction(program, req, assets[0], reduced, pixels, slices) : reduced;
  return req.algorithm ? applyAlgorithm(req.algorithm, req.algorithmParams, made, tile.size, gridCells(req), slices) : made;
}

/** `req` on one COG, rendered outside a server: its work reserved from the COG's budget, fail-fast. */
export async function renderTile(cog: Cog, req: TileRequest, signal = new AbortController().signal): Promise<RenderedTile> {
  const prepared = await composeTile([cogAsset(cog, req, cog.source.label)], req, cog.source.label, signal);
  const work = cog.budget.tryReserve(prepared.cost.bytes, `a tile of ${cog.source.label}`, "tile");
  try {
    return (await prepared.render(signal, work, "tile")) as RenderedTile;
  } finally {
    work.release();
  }
}

/** Every asset's warp plans, in paint order. */
async function planAssets(assets: TileAsset[], req: PaintRequest, buffer: number, slices: Slices): Promise<PlannedRead[][]> {
  const reads: PlannedRead[][] = [];
  for (const asset of assets) reads.push(await planReads(asset, req, buffer, slices));
  return reads;
}

/** One warp plan a COG of the asset (the output grown by `buffer`), reading all of that COG's bands the asset needs at once. */
async function planReads(asset: TileAsset, req: PaintRequest, buffer: number, slices: Slices): Promise<PlannedRead[]> {
  const byCog = new Map<Cog, AssetBand[]>();
  for (const band of asset.bands) byCog.set(band.cog, [...(byCog.get(band.cog) ?? []), band]);
  const reads: PlannedRead[] = [];
  for (const [cog, bands] of byCog) {
    const bidx = bands.map((b) => b.band);
    const plan = "grid" in req ? await planGrid(cog, bufferedGrid(req.grid, buffer), bidx, req.resampling, slices) : await planTile(cog, { ...req, bidx }, slices, buffer);
    reads.push({ cog, bands, plan });
  }
  return reads;
}

/** The asset's bands warped to the tile, by name. */
async function warpAsset(reads: PlannedRead[], req: PaintRequest, slices: Slices, work: Reservation): Promise<Map<string, BandPlane>> {
  const planes = new Map<string, BandPlane>();
  for (const { cog, bands, plan } of reads) {
    const warped = await warpPlanned(cog, plan, req, slices, work);
    bands.forEach((b, i) => planes.set(b.name, { values: warped.bands[i], valid: warped.valid[i] }));
  }
  return planes;
}

export const tupleOf = (planes: BandPlane[]): AssetTuple => ({ bands: planes.map((p) => p.values), valid: planes.map((p) => p.valid) });

/** An asset's output channels: its expression's results (a pass a node over the pixels), or its bands in the request's order. */
export async function channels(program: ExpressionProgram | undefined, asset: TileAsset, planes: Map<string, BandPlane>, pixels: number, slices: Slices): Promise<AssetTuple> {
  if (program) {
    const evaluation = expressionEvaluation(program, planes, pixels);
    await slices.each(pixels, expressionNodes(program), evaluation.evaluate);
    return evaluation;
  }
  // Before channels, lastband* has dropped its deciding band: the others are the channels.
  return tupleOf(asset.channels.filter((name) => planes.has(name)).map((name) => planes.get(name)!));
}

/**
 * Before channels, the reduced tuple's components are the first asset's bands (less the last for
 * lastband*); the channels are computed from them once, after reduction.
 */
export async function afterReduction(program: ExpressionProgram | undefined, req: Pick<StyleFields, "pixelSelection">, first: TileAsset, reduced: AssetTuple, pixels: number, slices: Slices): Promise<AssetTuple> {
  if (req.pixelSelection === "count") return reduced;
  const planes = new Map<string, BandPlane>();
  reduced.bands.forEach((values, i) => planes.set(first.bands[i].name, { values, valid: reduced.valid[i] }));
  return channels(program, first, planes, pixels, slices);
}
