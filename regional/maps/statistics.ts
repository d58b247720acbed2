// Statistics of an area's pixels, per band, with titiler's names and rio-tiler's definitions
// (get_array_statistics, without coverage weights):
// - a pixel counts when it is valid, inside the feature's mask (if any) and finite (NaN and ±Inf
//   are masked, as numpy.ma.fix_invalid masks them);
// - min, max; sum; mean = sum / count; std the population standard deviation (ddof = 0);
// - median and percentile_N by the inverted CDF: the k-th smallest value with k = ⌈q·n⌉
//   (1-based, at least 1), q = N / 100 (rio-tiler's weighted quantile with unit weights): always
//   a value of the data, and the lower middle value for an even count;
// - majority and minority: the most and least frequent value, the smallest one on a tie; unique:
//   how many distinct values;
// - histogram [counts, edges] as numpy.histogram: `bins` equal bins over `range` (default the
//   data's min..max, widened by 0.5 each side when they are equal), every bin half-open but the
//   last, values outside the range not counted; or given edges. Categorical: the count of every
//   distinct value (or of each listed category) and the values;
// - valid_pixels, masked_pixels (everything else in the area, outside the mask too), and
//   valid_percent, rounded to two decimals.
// Every pass runs in slices of the event loop (runtime/slices.ts); the sort is a merge sort of
// chunks, O(n log n), a chunk or a merge step a slice at most.
import { badRequest } from "../../shared/errors";
import { SORT_CHUNK } from "../../shared/maps/statistics-request";
import { Slices } from "../runtime/slices";

export interface StatisticsOptions {
  categorical: boolean;
  /** Categories to count (categorical only); absent: every distinct value. */
  categories?: number[];
  /** Whole percentiles 0–100; rio-tiler's default is [2, 98]. */
  percentiles: number[];
  /** A bin count, or the bin edges (increasing). */
  bins: number | number[];
  range?: [number, number];
}

/** One band's statistics, in titiler's key order (percentile_N last). */
export type BandStatistics = Record<string, number | null | [number[], number[]]>;

export interface StatisticsPlanes {
  width: number;
  height: number;
  names: string[];
  bands: Float32Array[];
  valid: Uint8Array[];
}

/** Units per item of each pass (for Slices' chunking). */
const SCAN_UNITS = 4;

/**
 * Each band's statistics over its valid pixels within `mask` (1 inside; absent: everywhere), by
 * band name. NaN answers (no valid pixel) are written as null, JSON having no NaN.
 */
export async function areaStatistics(planes: StatisticsPlanes, options: StatisticsOptions, signal: AbortSignal, mask?: Uint8Array): Promise<Record<string, BandStatistics>> {
  const slices = new Slices(signal);
  const out: Record<string, BandStatistics> = {};
  for (let b = 0; b < planes.bands.length; b++) {
    const values = await validValues(planes.bands[b], planes.valid[b], mask, slices);
    out[planes.names[b]] = await bandStatistics(await sortInSlices(values, slices), planes.width * planes.height, options, slices);
  }
  return out;
}

/** The band's counted values, in a new array. */
async function validValues(band: Float32Array, valid: Uint8Array, mask: Uint8Array | undefined, slices: Slices): Promise<Float32Array> {
  let n = 0;
  const kept = new Float32Array(band.length);
  await slices.each(band.length, SCAN_UNITS, (start, end) => {
    for (let i = start; i < end; i++) {
      const v = band[i];
      if (valid[i] !== 0 && (mask === undefined || mask[i] !== 0) && Number.isFinite(v)) kept[n++] = v;
    }
  });
  return kept.subarray(0, n);
}

/** The statistics of one band's sorted values, `size` the area's pixels. */
async function bandStatistics(sorted: Float32Array, size: number, o: StatisticsOptions, slices: Slices): Promise<BandStatistics> {
  const n = sorted.length;
  const runs = await valueRuns(sorted, slices, o.categorical && !o.categories);
  const { sum, std } = await moments(sorted, slices);
  const histogram = o.categorical ? categoryCounts(sorted, runs, o.categories) : binCounts(sorted, o.bins, o.range);
  const stats: BandStatistics = {
    min: n ? sorted[0] : null,
    max: n ? sorted[n - 1] : null,
    mean: n ? sum / n : null,
    count: n,
    sum,
    std: n ? std : null,
    median: quantile(sorted, 0.5),
    majority: runs.majority,
    minority: runs.minority,
    unique: runs.unique,
    histogram,
    valid_percent: roundHalfEven(size ? (n / size) * 100 : 0, 2),
    masked_pixels: size - n,
    valid_pixels: n,
  };
  for (const p of o.percentiles) stats[`percentile_${p}`] = quantile(sorted, p / 100);
  return stats;
}

/** rio-tiler's weighted quantile with unit weights: the first value whose rank reaches q·n. */
export function quantile(sorted: Float32Array, q: number): number | null {
  const n = sorted.length;
  if (n === 0) return null;
  const k = Math.max(0, Math.ceil(q * n) - 1);
  return sorted[Math.min(n - 1, k)];
}

/**
 * The distinct values: how many, the most and least frequent (the smallest on a tie), and, for a
 * categorical answer, each with its count (HttpError past MAX_CATEGORIES: the answer would list them all).
 */
async function valueRuns(sorted: Float32Array, slices: Slices, keep: boolean) {
  const values: number[] = [];
  const counts: number[] = [];
  const best = { unique: 0, majority: null as number | null, most: 0, minority: null as number | null, least: Infinity };
  const close = (value: number, count: number) => {
    best.unique++;
    if (count > best.most) [best.majority, best.most] = [value, count];
    if (count < best.least) [best.minority, best.least] = [value, count];
    if (!keep) return;
    if (values.length >= MAX_CATEGORIES) throw tooManyCategories();
    values.push(value);
    counts.push(count);
  };
  let run = 0;
  await slices.each(sorted.length, SCAN_UNITS, (start, end) => {
    for (let i = start; i < end; i++) {
      if (run > 0 && sorted[i] !== sorted[i - 1]) (close(sorted[i - 1], run), (run = 0));
      run++;
    }
  });
  if (run > 0) close(sorted[sorted.length - 1], run);
  return { values, counts, unique: best.unique, majority: best.majority, minority: best.minority };
}

/** The most distinct values a categorical answer lists (without `c=`). */
export const MAX_CATEGORIES = 4096;

const tooManyCategories = () =>
  badRequest(`categorical=true over more than ${MAX_CATEGORIES} distinct values; name the categories to count with c=`);

/** The sum (compensated) and the population standard deviation (two passes). */
async function moments(sorted: Float32Array, slices: Slices): Promise<{ sum: number; std: number }> {
  const n = sorted.length;
  const total = new Neumaier();
  await slices.each(n, SCAN_UNITS, (start, end) => {
    for (let i = start; i < end; i++) total.add(sorted[i]);
  });
  const sum = total.value;
  const mean = n ? sum / n : 0;
  const squares = new Neumaier();
  await slices.each(n, SCAN_UNITS, (start, end) => {
    for (let i = start; i < end; i++) squares.add((sorted[i] - mean) ** 2);
  });
  return { sum, std: n ? Math.sqrt(squares.value / n) : 0 };
}

/** Kahan–Babuška–Neumaier summation: a sum of millions of values without drift. */
class Neumaier {
  private sum = 0;
  private c = 0;
  add(v: number): void {
    const t = this.sum + v;
    this.c += Math.abs(this.sum) >= Math.abs(v) ? this.sum - t + v : v - t + this.sum;
    this.sum = t;
  }
  get value(): number {
    return this.sum + this.c;
  }
}

/** Categorical counts: of every distinct value, or of each requested category (0 when absent). */
function categoryCounts(sorted: Float32Array, runs: { values: number[]; counts: number[] }, categories?: number[]): [number[], number[]] {
  if (!categories) return [runs.counts, runs.values];
  // Values are float32: a category matches the float32 nearest to it.
  return [categories.map((c) => upperBound(sorted, Math.fround(c)) - lowerBound(sorted, Math.fround(c))), categories];
}

/** numpy.histogram over sorted values: `bins` equal bins (numpy.linspace's edges) or the given edges. */
export function binCounts(sorted: Float32Array, bins: number | number[], range?: [number, number]): [number[], number[]] {
  const edges = typeof bins === "number" ? linspaceEdges(sorted, bins, range) : bins;
  const counts: number[] = [];
  const last = edges.length - 2;
  for (let i = 0; i <= last; i++) {
    // Bins are [edge, next edge), the last one closed: counted by where the edges fall in the sorted values.
    const from = lowerBound(sorted, edges[i]);
    const to = i === last ? upperBound(sorted, edges[i + 1]) : lowerBound(sorted, edges[i + 1]);
    counts.push(Math.max(0, to - from));
  }
  return [counts, edges];
}

/** numpy's equal-width edges: start + i·step, the last exactly the stop. */
function linspaceEdges(sorted: Float32Array, bins: number, range?: [number, number]): number[] {
  let [first, last] = range ?? (sorted.length ? [sorted[0], sorted[sorted.length - 1]] : [0, 1]);
  if (first === last) [first, last] = [first - 0.5, last + 0.5];
  const step = (last - first) / bins;
  const edges = Array.from({ length: bins + 1 }, (_, i) => i * step + first);
  edges[bins] = last;
  return edges;
}

/** The first index whose value is >= v. */
function lowerBound(sorted: Float32Array, v: number): number {
  let [lo, hi] = [0, sorted.length];
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid] < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The first index whose value is > v. */
function upperBound(sorted: Float32Array, v: number): number {
  let [lo, hi] = [0, sorted.length];
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid] <= v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * Python's round(x, digits): to the nearest, an exact tie to the even last digit (toFixed
 * would round it up). Ties exist in binary only where x·8 is whole (x.125, x.375, …).
 */
export function roundHalfEven(x: number, digits: number): number {
  const scale = 10 ** digits;
  const scaled = x * scale;
  if (Number.isInteger(x * 8) && Math.abs(scaled - Math.trunc(scaled)) === 0.5) {
    const down = Math.floor(scaled);
    return (down % 2 === 0 ? down : down + 1) / scale;
  }
  return Number(x.toFixed(digits));
}

/**
 * The values sorted ascending, in slices: chunks sorted natively, then merged pairwise, each
 * merge advanced a chunk at a time. O(n log n) comparisons; one extra buffer of n.
 */
export async function sortInSlices(values: Float32Array, slices: Slices): Promise<Float32Array> {
  const n = values.length;
  for (let start = 0; start < n; start += SORT_CHUNK) {
    await slices.pause();
    values.subarray(start, Math.min(n, start + SORT_CHUNK)).sort();
  }
  let from = values;
  let to: Float32Array = new Float32Array(n);
  for (let width = SORT_CHUNK; width < n; width *= 2) {
    for (let left = 0; left < n; left += 2 * width) {
      await merge(from, to, left, Math.min(n, left + width), Math.min(n, left + 2 * width), slices);
    }
    [from, to] = [to, from];
  }
  return from;
}

/** Merges from[left, mid) and from[mid, right) into to[left, right), pausing every SORT_CHUNK values. */
async function merge(from: Float32Array, to: Float32Array, left: number, mid: number, right: number, slices: Slices): Promise<void> {
  let [i, j, k] = [left, mid, left];
  while (k < right) {
    await slices.pause();
    const stop = Math.min(right, k + SORT_CHUNK);
    for (; k < stop; k++) to[k] = j >= right || (i < mid && from[i] <= from[j]) ? from[i++] : from[j++];
  }
}
