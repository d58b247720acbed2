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
  add(asset: AssetTuple): void;
  /** True once more assets cannot change the result (`first` with every pixel filled): stop reading. */
  readonly done: boolean;
  /**
   * The reduced tile: the tuple's components (one fewer for `lastband*`, a single count plane for
   * `count`), each with its validity; a pixel no asset took part in is invalid (count: 0, valid).
   */
  result(): AssetTuple;
}

/** The tuple before channels: the source bands the style reads, each once, by band number. */
export function beforeChannelsTuple(bands: readonly number[]): number[] {
  return [...new Set(bands)].sort((a, b) => a - b);
}

export function pixelSelection(options: PixelSelectionOptions): PixelSelectionReducer {
  const { mode, rankChannel, components, pixels } = options;
  checkRankChannel(mode, rankChannel, components);
  if ((mode === "lastbandhigh" || mode === "lastbandlow") && components < 2) {
    throw badRequest(`${mode} needs a tuple of at least two components (it decides on the last and drops it)`);
  }
  switch (mode) {
    case "first":
      return winnerTakesPixel(components, pixels, components);
    case "highest":
      return winnerTakesPixel(components, pixels, components, { rank: (rankChannel ?? 1) - 1, better: (a, b) => a > b });
    case "lowest":
      return winnerTakesPixel(components, pixels, components, { rank: (rankChannel ?? 1) - 1, better: (a, b) => a < b });
    case "lastbandhigh":
      return winnerTakesPixel(components, pixels, components - 1, { rank: components - 1, better: (a, b) => a > b });
    case "lastbandlow":
      return winnerTakesPixel(components, pixels, components - 1, { rank: components - 1, better: (a, b) => a < b });
    case "mean":
    case "median":
    case "stdev":
    case "count":
      return stackStatistic(mode, components, pixels);
  }
}

/** Whether every component of `asset` is valid at pixel `i`: the tuple rule. */
function takesPart(asset: AssetTuple, i: number): boolean {
  return asset.valid.every((v) => v[i] === 1);
}

/**
 * Modes where one asset's tuple wins each pixel: the first to take part, replaced only by a
 * later one whose `rank` component is strictly `better` (so ties keep the earlier asset).
 * Without a ranking (`first`) nothing is replaced, and the tile is done once every pixel has
 * a winner. The result keeps the winner's first `kept` components.
 */
function winnerTakesPixel(
  components: number,
  pixels: number,
  kept: number,
  ranking?: { rank: number; better: (a: number, b: number) => boolean },
): PixelSelectionReducer {
  const bands = Array.from({ length: components }, () => new Float32Array(pixels));
  const valid = new Uint8Array(pixels);
  let filled = 0;
  return {
    add(asset) {
      for (let i = 0; i < pixels; i++) {
        if (!takesPart(asset, i)) continue;
        if (valid[i] && !(ranking && ranking.better(asset.bands[ranking.rank][i], bands[ranking.rank][i]))) continue;
        if (!valid[i]) filled++;
        valid[i] = 1;
        for (let c = 0; c < components; c++) bands[c][i] = asset.bands[c][i];
      }
    },
    get done() {
      return !ranking && filled === pixels;
    },
    result: () => ({ bands: bands.slice(0, kept), valid: bands.slice(0, kept).map(() => valid) }),
  };
}

/** Modes computed over every asset taking part at a pixel, so they keep every asset until the end. */
function stackStatistic(mode: "mean" | "median" | "stdev" | "count", components: number, pixels: number): PixelSelectionReducer {
  const stack: AssetTuple[] = [];
  return {
    add: (asset) => void stack.push(asset),
    done: false,
    result() {
      const taking = Array.from({ length: pixels }, (_, i) => stack.filter((asset) => takesPart(asset, i)));
      if (mode === "count") return { bands: [Float32Array.from(taking, (t) => t.length)], valid: [new Uint8Array(pixels).fill(1)] };
      const valid = Uint8Array.from(taking, (t) => (t.length > 0 ? 1 : 0));
      const statistic = STATISTICS[mode];
      const bands = Array.from({ length: components }, (_, c) =>
        Float32Array.from(taking, (t, i) => (t.length > 0 ? statistic(t.map((asset) => asset.bands[c][i])) : 0)),
      );
      return { bands, valid: bands.map(() => valid) };
    },
  };
}

const mean = (xs: number[]) => xs.reduce((sum, x) => sum + x, 0) / xs.length;

const STATISTICS: Record<"mean" | "median" | "stdev", (xs: number[]) => number> = {
  mean,
  median(xs) {
    const sorted = xs.sort((a, b) => a - b);
    const half = sorted.length >> 1;
    return sorted.length % 2 === 1 ? sorted[half] : (sorted[half - 1] + sorted[half]) / 2;
  },
  // The population deviation (as numpy's default), from the mean in a second pass for precision.
  stdev(xs) {
    const m = mean(xs);
    return Math.sqrt(mean(xs.map((x) => (x - m) ** 2)));
  },
};
