// GET /statistics/{id} and POST /statistics/{id}: titiler's query, parsed once (400 naming the
// bad parameter) and written back canonically, so every spelling shares one cache entry and one
// decode. The pixels are read as a crop is (area-request.ts): GET the whole source, its longest
// side max_size (1024 by default); POST each feature's bounds, in dst_crs (default the source's
// own CRS), at max_size or, without it, the source's full resolution there.
import { badRequest } from "../errors";
import type { Cost } from "../cost";
import { crsName, LON_LAT_NAME, type AreaRequest } from "./area-request";
import { DEFAULT_RESAMPLING, MAX_BAND_INDEX, type StyleFields, type Resampling } from "./style";
import { decimal, number, queryStyle, single, styleQueryParts } from "./tile-request";

/** titiler's default size of GET's read. */
export const DEFAULT_STATISTICS_SIZE = 1024;
/** The largest max_size: the work and memory bounds refuse most sizes below it anyway (413). */
export const MAX_STATISTICS_SIDE = 65536;
/**
 * The most histogram bins: a histogram is answered as JSON, one count and one edge a bin per
 * band, so 1e9 bins would be gigabytes of answer for a URL of a few bytes.
 */
export const MAX_HISTOGRAM_BINS = 1024;
/** The most categories `c=` may list. */
export const MAX_CATEGORY_LIST = 1024;
export const DEFAULT_PERCENTILES = [2, 98];
/** What helps a statistics request that is too large to be admitted (413). */
export const STATISTICS_WORK_HELP = "use max_size to compute the statistics at a lower resolution, or send smaller features";
export const DEFAULT_HISTOGRAM_BINS = 10;

export interface StatisticsRequest extends StyleFields {
  method: "GET" | "POST";
  resampling: Resampling;
  /** The longest side read; absent (POST only): the source's full resolution. */
  maxSize?: number;
  /** `EPSG:{code}` the features are read in (POST only); absent: the source's own CRS. */
  dstCrs?: string;
  categorical: boolean;
  categories?: number[];
  percentiles: number[];
  /** A bin count, or bin edges (non-decreasing). */
  bins: number | number[];
  range?: [number, number];
}

/** The style fields statistics take: what selects and combines bands, not what colours them. */
const STYLE_KEYS = ["bidx", "expression", "assets", "asset_bidx", "nodata", "resampling", "pixel_selection", "stage", "rank_channel"];
const STATISTICS_KEYS = ["max_size", "dst_crs", "categorical", "c", "p", "histogram_bins", "histogram_range"];
const QUERY_KEYS = [...STYLE_KEYS, ...STATISTICS_KEYS];

export function parseStatisticsRequest(method: "GET" | "POST", query: URLSearchParams): StatisticsRequest {
  for (const key of new Set(query.keys())) {
    if (!QUERY_KEYS.includes(key)) throw badRequest(`unknown query parameter "${key}"; statistics take ${QUERY_KEYS.join(", ")}`);
  }
  // bidx is parsed here: statistics take any number of bands, where a tile takes 1 or 3.
  const styleOnly = new URLSearchParams([...query].filter(([key]) => STYLE_KEYS.includes(key) && key !== "bidx"));
  const style = queryStyle(styleOnly);
  const bidx = bandList(query.getAll("bidx"));
  if (bidx && style.expression !== undefined) throw badRequest("expression and bidx cannot be given together: an expression names its bands");
  const req: StatisticsRequest = {
    method,
    ...style,
    ...(bidx && { bidx }),
    resampling: style.resampling ?? DEFAULT_RESAMPLING,
    categorical: flag(single(query, "categorical"), "categorical"),
    percentiles: percentiles(query.getAll("p")),
    bins: bins(single(query, "histogram_bins")),
  };
  const maxSize = single(query, "max_size");
  if (maxSize !== undefined) req.maxSize = whole(maxSize, "max_size", 1, MAX_STATISTICS_SIDE);
  else if (method === "GET") req.maxSize = DEFAULT_STATISTICS_SIZE;
  const dst = single(query, "dst_crs");
  if (dst !== undefined) {
    if (method === "GET") throw badRequest("dst_crs applies to POST (features); GET reads the source on its own grid");
    req.dstCrs = crsName(dst, "dst_crs");
  }
  const categories = query.getAll("c");
  if (categories.length > 0) {
    if (!req.categorical) throw badRequest("c lists categories of categorical=true");
    req.categories = decimals(categories.flatMap((text) => text.split(",")), "c", MAX_CATEGORY_LIST);
  }
  const range = single(query, "histogram_range");
  if (range !== undefined) {
    const pair = decimals(range.split(","), "histogram_range", 2);
    if (pair.length !== 2 || pair[0] > pair[1]) throw badRequest(`histogram_range "${range.slice(0, 80)}" must be min,max with min <= max`);
    req.range = [pair[0], pair[1]];
  }
  return req;
}

/** `?{query}` or "" : the canonical form, defaults left out; a POST's adds `&feature={digest}` itself. */
export function canonicalStatistics(req: StatisticsRequest): string {
  const parts = styleQueryParts({ ...req, bidx: undefined });
  if (req.bidx) parts.push(`bidx=${req.bidx.join(",")}`);
  const defaultSize = req.method === "GET" ? DEFAULT_STATISTICS_SIZE : undefined;
  if (req.maxSize !== defaultSize) parts.push(`max_size=${req.maxSize}`);
  if (req.dstCrs !== undefined) parts.push(`dst_crs=${req.dstCrs}`);
  if (req.categorical) parts.push("categorical=true");
  if (req.categories) parts.push(`c=${req.categories.map(number).join(",")}`);
  if (req.percentiles.join(",") !== DEFAULT_PERCENTILES.join(",")) parts.push(`p=${req.percentiles.join(",")}`);
  if (req.bins !== DEFAULT_HISTOGRAM_BINS) parts.push(`histogram_bins=${typeof req.bins === "number" ? req.bins : req.bins.map(number).join(",")}`);
  if (req.range) parts.push(`histogram_range=${req.range.map(number).join(",")}`);
  return parts.length > 0 ? `?${parts.join("&")}` : "";
}

/**
 * The crop the statistics read, as the area routes lay it out: GET the whole source (a preview
 * at max_size); POST a feature's bounds in lon/lat, painted in dst_crs. Its format is only for
 * the shared types and costs: statistics answer values, never an image.
 */
export function statisticsArea(req: StatisticsRequest, featureBounds?: [number, number, number, number]): AreaRequest {
  const { method: _method, categorical: _c, categories: _cs, percentiles: _p, bins: _b, range: _r, maxSize, dstCrs, ...style } = req;
  const area: AreaRequest = { ...style, kind: featureBounds ? "bbox" : "preview", coordCrs: LON_LAT_NAME, format: "tif", ...(maxSize !== undefined && { maxSize }) };
  if (featureBounds) {
    // A feature of one point or line along a parallel still has an area to read.
    const [x0, y0, x1, y1] = featureBounds;
    area.bbox = [x0, y0, Math.max(x1, x0 + 1e-9), Math.max(y1, y0 + 1e-9)];
    if (dstCrs !== undefined) area.dstCrs = dstCrs;
  }
  return area;
}

/** Units per million samples of the statistics' passes: the scans, and each merge pass of the sort. */
export const STATISTICS_WORK_PER_MEGASAMPLE = { scan: 60, sortPass: 25 };
/** Values a sort chunk holds (sorted natively, then merged pass by pass). */
export const SORT_CHUNK = 1 << 15;

/** The statistics' own cost over `pixels` of `bands`: a band's kept values and the sort's buffer (bands go one by one), the passes. */
export function statisticsCost(pixels: number, bands: number): Cost {
  const passes = Math.max(1, Math.ceil(Math.log2(Math.max(1, pixels / SORT_CHUNK))));
  const { scan, sortPass } = STATISTICS_WORK_PER_MEGASAMPLE;
  return { bytes: pixels * 8, work: ((pixels * bands) / 1e6) * (scan + sortPass * passes) };
}

function bandList(values: string[]): number[] | undefined {
  if (values.length === 0) return undefined;
  const bands = values.flatMap((text) => text.split(","));
  if (bands.length > 256) throw badRequest("bidx names more than 256 bands");
  return bands.map((text) => whole(text, "bidx", 1, MAX_BAND_INDEX));
}

function flag(text: string | undefined, what: string): boolean {
  if (text === undefined || /^(false|0)$/i.test(text)) return false;
  if (/^(true|1)$/i.test(text)) return true;
  throw badRequest(`${what} must be true or false, not "${text.slice(0, 80)}"`);
}

/** `p=2&p=98` or `p=2,98`: whole percentiles 0–100, each once, in the order given. */
function percentiles(values: string[]): number[] {
  if (values.length === 0) return DEFAULT_PERCENTILES;
  const list = values.flatMap((text) => text.split(",")).map((text) => whole(text, "p", 0, 100));
  return [...new Set(list)];
}

/** A bin count 1–MAX_HISTOGRAM_BINS, or at least two non-decreasing edges. */
function bins(text: string | undefined): number | number[] {
  if (text === undefined) return DEFAULT_HISTOGRAM_BINS;
  if (!text.includes(",")) return whole(text, "histogram_bins", 1, MAX_HISTOGRAM_BINS);
  const edges = decimals(text.split(","), "histogram_bins", MAX_HISTOGRAM_BINS + 1);
  if (edges.length < 2 || edges.some((e, i) => i > 0 && e < edges[i - 1])) throw badRequest("histogram_bins edges must be at least two numbers, in increasing order");
  return edges;
}

function whole(text: string, what: string, min: number, max: number): number {
  const n = /^\d{1,9}$/.test(text) ? Number(text) : Number.NaN;
  if (!(n >= min && n <= max)) throw badRequest(`${what} "${text.slice(0, 80)}" must be a whole number from ${min} to ${max}`);
  return n;
}

function decimals(texts: string[], what: string, most: number): number[] {
  if (texts.length > most) throw badRequest(`${what} gives more than ${most} numbers`);
  return texts.map((text) => {
    const n = decimal(text);
    if (typeof n !== "number" || !Number.isFinite(n)) throw badRequest(`${what} "${text.slice(0, 80)}" must be a finite decimal number`);
    return n;
  });
}
