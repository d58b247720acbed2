// Pixel selection: how a mosaic tile painted from several assets becomes one tile, with the
// modes rio-tiler's users know. Each asset brings a tuple per pixel (its components' planes and
// validity) and takes part at a pixel only where every component is valid, so a winner is
// always one asset's complete tuple, never a mix of two assets' bands. Assets are added in
// source (paint) order; ties go to the earlier one.
//
// What a tuple is depends on the style's `stage`: before channels, an asset's source bands that
// the style reads (`beforeChannelsTuple`); after channels, its evaluated output channels (the
// expressions' results, one component a channel).
import { badRequest } from "../../shared/errors";
import { checkRankChannel, type PixelSelection } from "../../shared/maps/style";
import type { Slices } from "../runtime/slices";

/** One asset's tuple over the tile: a plane per component and its validity (1 valid, 0 not). */
export interface AssetTuple {
  bands: Float32Array[];
  valid: Uint8Array[];
}

export interface PixelSelectionOptions {
  mode: PixelSelection;
  /** One-based component that `highest` and `lowest` compare (default 1); no other mode takes it. */
  rankChannel?: number;
  /** Components in every asset's tuple. */
  components: number;
  /** Pixels in the tile. */
  pixels: number;
}

export interface PixelSelectionReducer {
  add(asset: AssetTuple): Promise<void>;
  /** True once more assets cannot change the result (`first` with every pixel filled): stop reading. */
  readonly done: boolean;
  /**
   * The reduced tile: the tuple's components (one fewer for `lastband*`, a single count plane for
   * `count`), each with its validity; a pixel no asset took part in is invalid (count: 0, valid).
   */
  result(): Promise<AssetTuple>;
}

/** The tuple before channels: the source bands the style reads, each once, by band number. */
export function beforeChannelsTuple(bands: readonly number[]): number[] {
  return [...new Set(bands)].sort((a, b) => a - b);
}

/** A reducer whose passes over the tile's pixels run in `slices` of the request's computation. */
export function pixelSelection(options: PixelSelectionOptions, slices: Slices): PixelSelectionReducer {
  const { mode, rankChannel, components, pixels } = options;
  checkRankChannel(mode, rankChannel, components);
  if ((mode === "lastbandhigh" || mode === "lastbandlow") && components < 2) {
    throw badRequest(`${mode} needs a tuple of at least two components (it decides on the last and drops it)`);
  }
  const tile = { components, pixels, slices };
  switch (mode) {
    case "first":
      return winnerTakesPixel(tile, components);
    case "highest":
      return winnerTakesPixel(tile, components, { rank: (rankChannel ?? 1) - 1, higher: true });
    case "lowest":
      return winnerTakesPixel(tile, components, { rank: (rankChannel ?? 1) - 1, higher: false });
    case "lastbandhigh":
      return winnerTakesPixel(tile, components - 1, { rank: components - 1, higher: true });
    case "lastbandlow":
      return winnerTakesPixel(tile, components - 1, { rank: components - 1, higher: false });
    case "mean":
    case "count":
      return accumulation(mode, tile);
    case "median":
    case "stdev":
      return stackStatistic(STATISTICS[mode], tile);
  }
}

/** The tile a reducer works over. */
interface Tile {
  components: number;
  pixels: number;
  slices: Slices;
}

/** Whether every component of `asset` is valid at pixel `i`: the tuple rule. */
function takesPart(asset: AssetTuple, i: number): boolean {
  for (const v of asset.valid) if (v[i] !== 1) return false;
  return true;
}

/**
 * Modes where one asset's tuple wins each pixel: the first to take part, replaced only by a
 * later one whose `rank` component is strictly higher or lower (so ties keep the earlier asset).
 * Without a ranking (`first`) nothing is replaced, and the tile is done once every pixel has
 * a winner. The result keeps the winner's first `kept` components.
 */
function winnerTakesPixel(
  { components, pixels, slices }: Tile,
  kept: number,
  ranking?: { rank: number; higher: boolean },
): PixelSelectionReducer {
  const bands = Array.from({ length: components }, () => new Float32Array(pixels));
  const valid = new Uint8Array(pixels);
  let filled = 0;
  const better = (asset: AssetTuple, i: number) => {
    if (!ranking) return false;
    const theirs = asset.bands[ranking.rank][i];
    const ours = bands[ranking.rank][i];
    return ranking.higher ? theirs > ours : theirs < ours;
  };
  const take = (asset: AssetTuple, start: number, end: number) => {
    for (let i = start; i < end; i++) {
      if (!takesPart(asset, i)) continue;
      if (valid[i] && !better(asset, i)) continue;
      if (!valid[i]) filled++;
      valid[i] = 1;
      for (let c = 0; c < components; c++) bands[c][i] = asset.bands[c][i];
    }
  };
  return {
    add: (asset) => slices.each(pixels, 2 * components, (start, end) => take(asset, start, end)),
    get done() {
      return !ranking && filled === pixels;
    },
    result: async () => ({ bands: bands.slice(0, kept), valid: bands.slice(0, kept).map(() => valid) }),
  };
}

/**
 * `mean` and `count`, summed as the assets come (in paint order, as a sum over the stack would
 * be), so no asset is kept once added.
 */
function accumulation(mode: "mean" | "count", { components, pixels, slices }: Tile): PixelSelectionReducer {
  const counts = new Float32Array(pixels);
  const sums = mode === "mean" ? Array.from({ length: components }, () => new Float64Array(pixels)) : [];
  const add = (asset: AssetTuple, start: number, end: number) => {
    for (let i = start; i < end; i++) {
      if (!takesPart(asset, i)) continue;
      counts[i]++;
      for (let c = 0; c < sums.length; c++) sums[c][i] += asset.bands[c][i];
    }
  };
  return {
    add: (asset) => slices.each(pixels, 2 * components, (start, end) => add(asset, start, end)),
    done: false,
    async result() {
      if (mode === "count") return { bands: [counts], valid: [new Uint8Array(pixels).fill(1)] };
      const valid = new Uint8Array(pixels);
      const bands = sums.map(() => new Float32Array(pixels));
      await slices.each(pixels, components, (start, end) => {
        for (let i = start; i < end; i++) {
          if (counts[i] === 0) continue;
          valid[i] = 1;
          for (let c = 0; c < components; c++) bands[c][i] = sums[c][i] / counts[i];
        }
      });
      return { bands, valid: bands.map(() => valid) };
    },
  };
}

/** `median` and `stdev`, computed over every asset taking part at a pixel, so they keep every asset until the end. */
function stackStatistic(statistic: (xs: Float64Array, n: number) => number, tile: Tile): PixelSelectionReducer {
  const stack: AssetTuple[] = [];
  return {
    add: async (asset) => void stack.push(asset),
    done: false,
    result: () => statisticOf(statistic, stack, tile),
  };
}

/** `statistic` per component over the assets taking part at each pixel, gathered into one scratch array (never an array a pixel). */
async function statisticOf(statistic: (xs: Float64Array, n: number) => number, stack: AssetTuple[], { components, pixels, slices }: Tile): Promise<AssetTuple> {
  const valid = new Uint8Array(pixels);
  const bands = Array.from({ length: components }, () => new Float32Array(pixels));
  const taking: AssetTuple[] = [];
  const values = new Float64Array(stack.length);
  // A median sorts: a few more steps a value.
  const units = stack.length * (components + 1) * (statistic === STATISTICS.median ? 4 : 1);
  await slices.each(pixels, units, (start, end) => {
    for (let i = start; i < end; i++) {
      let n = 0;
      for (const asset of stack) if (takesPart(asset, i)) taking[n++] = asset;
      if (n === 0) continue;
      valid[i] = 1;
      for (let c = 0; c < components; c++) {
        for (let k = 0; k < n; k++) values[k] = taking[k].bands[c][i];
        bands[c][i] = statistic(values, n);
      }
    }
  });
  return { bands, valid: bands.map(() => valid) };
}

/** The mean of the first `n` of `xs`. */
function mean(xs: Float64Array, n: number): number {
  let sum = 0;
  for (let k = 0; k < n; k++) sum += xs[k];
  return sum / n;
}

/** Each statistic of the first `n` of `xs` (which it may reorder). */
const STATISTICS: Record<"median" | "stdev", (xs: Float64Array, n: number) => number> = {
  median(xs, n) {
    const sorted = xs.subarray(0, n).sort();
    const half = n >> 1;
    return n % 2 === 1 ? sorted[half] : (sorted[half - 1] + sorted[half]) / 2;
  },
  // The population deviation (as numpy's default), from the mean in a second pass for precision.
  stdev(xs, n) {
    const m = mean(xs, n);
    let sum = 0;
    for (let k = 0; k < n; k++) sum += (xs[k] - m) ** 2;
    return Math.sqrt(sum / n);
  },
};
