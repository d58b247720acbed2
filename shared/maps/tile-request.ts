// A web-map tile request, `/tiles/{id}/{tileMatrixSetId}/{z}/{x}/{y}[@2x].{png|jpg|webp}` and its
// query, parsed and validated once (400 with a message) and written back canonically: the edge's
// cache key and the decoder's path both use the canonical form, so two spellings of one tile
// (`jpeg` and `jpg`, `bidx=1&bidx=2&bidx=3` and `bidx=1,2,3`, defaults spelled out or not) share
// one cache entry. The query follows titiler's names, which map users already know.
import { badRequest } from "../errors";
import {
  checkField,
  checkStyleRules,
  DEFAULT_PIXEL_SELECTION,
  DEFAULT_RESAMPLING,
  DEFAULT_STAGE,
  FIELD_NAMES,
  type Colormap,
  type Resampling,
  type StyleFields,
} from "./style";
import { algorithmParamsText, checkAlgorithmParams } from "./algorithms";
import { tileBounds, tileMatrixSet } from "./tile-matrix-sets";

export { DEFAULT_RESAMPLING, MAX_BAND_INDEX, RESAMPLINGS, type Resampling } from "./style";

export type TileFormat = "png" | "jpg" | "webp";

/** Side of a tile in pixels at scale 1; `@2x` doubles it. */
export const TILE_SIZE = 256;

export interface TileRequest extends StyleFields {
  tileMatrixSet: string;
  z: number;
  x: number;
  y: number;
  /** 1: 256² pixels; 2 (`@2x`): 512², the same ground. */
  scale: 1 | 2;
  format: TileFormat;
  resampling: Resampling;
  /**
   * `style={name}`: a stored style document the edge must apply (`withStyleDocument`) before the
   * request is canonical; `styleQuery` then holds the fields the query gave, which win over the
   * document's.
   */
  styleName?: string;
  styleQuery?: StyleFields;
}

const FORMATS: Record<string, TileFormat> = { png: "png", jpg: "jpg", jpeg: "jpg", webp: "webp" };
export const CONTENT_TYPES: Record<TileFormat, string> = { png: "image/png", jpg: "image/jpeg", webp: "image/webp" };
const STYLE_KEY = "style";
const CALIBRATION_KEY = "calibration";
const QUERY_KEYS = [...Object.values(FIELD_NAMES), STYLE_KEY, CALIBRATION_KEY];

/** Path parameters as routed: the tile matrix set id, z, x, and `{y}[@2x].{ext}`, URL-decoded. */
export interface TilePathParams {
  tileMatrixSet: string;
  z: string;
  x: string;
  y: string;
}

/** Parses and validates a tile request; throws 400 (404 for an unknown tile matrix set). */
export function parseTileRequest(path: TilePathParams, query: URLSearchParams): TileRequest {
  const tms = tileMatrixSet(path.tileMatrixSet);
  const last = /^(\d{1,9})(@2x)?\.([a-z]+)$/.exec(path.y);
  if (!last) throw badRequest(`tile "${path.y}" must be {y}.{png|jpg|webp} or {y}@2x.{ext}`);
  const format = Object.hasOwn(FORMATS, last[3]) ? FORMATS[last[3]] : undefined;
  if (!format) throw badRequest(`tile format "${last[3]}" is not one of png, jpg, webp`);
  const z = tileIndex(path.z, "zoom");
  const x = tileIndex(path.x, "column");
  const y = Number(last[1]);
  tileBounds(tms, z, x, y); // 400 outside the matrix
  checkQueryKeys(query, QUERY_KEYS, "tiles");
  const calibration = single(query, CALIBRATION_KEY);
  if (calibration !== undefined && calibration !== "none") throw badRequest(`calibration other than none is not supported, not "${calibration}"`);
  const styleName = single(query, STYLE_KEY);
  if (styleName !== undefined && !/^[A-Za-z0-9_-]{1,64}$/.test(styleName)) {
    throw badRequest(`style "${styleName.slice(0, 80)}" must be a name of 1 to 64 letters, digits, _ or -`);
  }
  const style = queryStyle(query);
  const req: TileRequest = { tileMatrixSet: tms.id, z, x, y, scale: last[2] ? 2 : 1, format, ...style, resampling: style.resampling ?? DEFAULT_RESAMPLING };
  if (styleName !== undefined) return { ...req, styleName, styleQuery: style }; // the rules apply to the merge
  checkStyleRules(req);
  return req;
}

/** 400 for a query key that is not one of `known`, which `what` (tiles, points) take. */
export function checkQueryKeys(query: URLSearchParams, known: readonly string[], what: string): void {
  for (const key of new Set(query.keys())) {
    if (key === "unscale") throw badRequest("unscale was removed; apply a source's scale and offset with an expression");
    if (!known.includes(key)) throw badRequest(`unknown query parameter "${key}"; ${what} take ${known.join(", ")}`);
  }
}

/** The style fields the query gives, each converted from its text and checked by the field's schema. */
export function queryStyle(query: URLSearchParams): StyleFields {
  const fields: StyleFields = {};
  const set = <K extends keyof StyleFields>(key: K, value: unknown) => {
    if (value !== undefined) fields[key] = checkField(key, value);
  };
  const listed = (key: string) => {
    const values = query.getAll(key);
    return values.length > 0 ? values : undefined;
  };
  set("bidx", listed("bidx")?.flatMap((text) => text.split(",").map(wholeNumber)));
  set("rescale", listed("rescale")?.map((text) => text.split(",").map(decimal)));
  set("nodata", mapText(single(query, "nodata"), (text) => (/^nan$/i.test(text) ? "nan" : decimal(text))));
  set("resampling", single(query, "resampling"));
  set("expression", single(query, "expression"));
  set("assets", listed("assets")?.flatMap((text) => text.split(",")));
  set("assetBidx", mapText(listed("asset_bidx"), assetBands));
  set("pixelSelection", single(query, "pixel_selection"));
  set("stage", single(query, "stage"));
  set("rankChannel", mapText(single(query, "rank_channel"), wholeNumber));
  set("colormapName", single(query, "colormap_name"));
  set("colormap", mapText(single(query, "colormap"), colormapJson));
  set("gamma", mapText(single(query, "gamma"), decimal));
  set("opacity", mapText(single(query, "opacity"), decimal));
  set("algorithm", single(query, "algorithm"));
  set("algorithmParams", mapText(single(query, "algorithm_params"), (text) => jsonOf(text, "algorithm_params must be a JSON object: {\"azimuth\": 315}")));
  return fields;
}

const mapText = <T, U>(value: T | undefined, convert: (value: T) => U) => (value === undefined ? undefined : convert(value));

/** `asset_bidx=visual|1,2,3` (repeatable) as the document's object of asset keys to bands. */
function assetBands(values: string[]): Record<string, unknown> {
  const pairs = values.map((text) => {
    const bar = text.indexOf("|");
    if (bar < 0) throw badRequest(`asset_bidx "${text.slice(0, 80)}" must be {asset}|{band},{band}…`);
    return [text.slice(0, bar), text.slice(bar + 1).split(",").map(wholeNumber)] as const;
  });
  const keys = pairs.map(([key]) => key);
  const twice = keys.find((key, i) => keys.indexOf(key) !== i);
  if (twice !== undefined) throw badRequest(`asset_bidx names asset "${twice}" twice`);
  return Object.fromEntries(pairs);
}

const colormapJson = (text: string) => jsonOf(text, "colormap must be JSON: {\"value\": [r, g, b, a], …} or [[[min, max], [r, g, b, a]], …]");

/** A query value that is JSON, bounded by the URL's own length; 400 with `help` otherwise. */
function jsonOf(text: string, help: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw badRequest(help);
  }
}

/** `{tileMatrixSet}/{z}/{x}/{y}[@2x].{ext}`: the tile's canonical path. */
export function tilePath(req: TileRequest): string {
  return `${req.tileMatrixSet}/${req.z}/${req.x}/${req.y}${req.scale === 2 ? "@2x" : ""}.${req.format}`;
}

/**
 * The canonical query: only what differs from the defaults, in one order, numbers as JavaScript
 * writes them. A style name must be resolved first (`withStyleDocument`): a programming error.
 */
export function tileQuery(req: TileRequest): string {
  if (req.styleName !== undefined) throw new Error(`style "${req.styleName}" must be resolved (withStyleDocument) before the tile is canonical`);
  return styleQueryParts(req).join("&");
}

/**
 * The style fields as canonical query parts: only what differs from the defaults, in one order,
 * numbers as JavaScript writes them (a tile's and a point's query alike).
 */
export function styleQueryParts(req: StyleFields): string[] {
  const parts: string[] = [];
  // Escaped for a query, but commas and bars kept: `bidx=1,2,3`, `asset_bidx=visual|1,2,3`.
  const put = (key: string, value: string) => parts.push(`${key}=${encodeURIComponent(value).replace(/%2C/g, ",").replace(/%7C/g, "|")}`);
  if (req.assets) put("assets", req.assets.join(","));
  for (const key of req.assets ?? []) {
    const bands = req.assetBidx?.find(([asset]) => asset === key)?.[1];
    if (bands) put("asset_bidx", `${key}|${bands.join(",")}`);
  }
  if (req.bidx) put("bidx", req.bidx.join(","));
  if (req.expression !== undefined) put("expression", req.expression);
  if (req.pixelSelection && req.pixelSelection !== DEFAULT_PIXEL_SELECTION) put("pixel_selection", req.pixelSelection);
  if (req.stage && req.stage !== DEFAULT_STAGE) put("stage", req.stage);
  if (req.rankChannel !== undefined && req.rankChannel !== 1) put("rank_channel", String(req.rankChannel));
  if (req.rescale) for (const [min, max] of req.rescale) put("rescale", `${number(min)},${number(max)}`);
  if (req.nodata !== undefined) put("nodata", number(req.nodata));
  if (req.resampling !== undefined && req.resampling !== DEFAULT_RESAMPLING) put("resampling", req.resampling);
  if (req.gamma !== undefined && req.gamma !== 1) put("gamma", number(req.gamma));
  if (req.colormapName) put("colormap_name", req.colormapName);
  if (req.colormap) put("colormap", colormapText(req.colormap));
  if (req.opacity !== undefined && req.opacity !== 1) put("opacity", number(req.opacity));
  if (req.algorithm) {
    put("algorithm", req.algorithm);
    const params = checkAlgorithmParams(req.algorithm, req.algorithmParams ?? {});
    if (Object.keys(params).length > 0) put("algorithm_params", algorithmParamsText(params));
  }
  return parts;
}

/** A colour map in titiler's JSON forms, keys in ascending order, four components a colour. */
function colormapText(colormap: Colormap): string {
  if (colormap.kind === "intervals") return JSON.stringify(colormap.entries);
  return `{${colormap.entries.map(([value, rgba]) => `"${value}":${JSON.stringify(rgba)}`).join(",")}}`;
}

/** Path and query together, `path` or `path?query`: what names the tile's pixels. */
export function canonicalTile(req: TileRequest): string {
  const query = tileQuery(req);
  return query ? `${tilePath(req)}?${query}` : tilePath(req);
}

/** The tile's side in pixels. */
export const tileSide = (req: Pick<TileRequest, "scale">) => TILE_SIZE * req.scale;

export const number = (n: number) => (Number.isNaN(n) ? "nan" : String(n));

function tileIndex(text: string, what: string): number {
  if (!/^\d{1,9}$/.test(text)) throw badRequest(`tile ${what} "${text}" must be a whole number`);
  return Number(text);
}

export function single(query: URLSearchParams, key: string): string | undefined {
  const values = query.getAll(key);
  if (values.length > 1) throw badRequest(`query parameter "${key}" is given ${values.length} times; give it once`);
  return values[0];
}

/**
 * A decimal number as written in a URL (no hex, no blanks, no Infinity); anything else is kept
 * as text, which the field's schema then refuses as not a number.
 */
export function decimal(text: string): number | string {
  return /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(text) ? Number(text) : text;
}

/** A whole decimal number of at most 9 digits (no sign, point or exponent), else the text. */
export function wholeNumber(text: string): number | string {
  return /^\d{1,9}$/.test(text) ? Number(text) : text;
}
