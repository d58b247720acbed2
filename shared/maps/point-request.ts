// A point request, `/point/{id}/{x},{y}` and its query, parsed and validated once (400 with a
// message) and written back canonically, as tile-request.ts does for tiles: the edge's cache key
// and the decoder's path are the canonical form, so `10.50,49` and `10.5,49.0` share one entry.
// The query takes titiler's names: the style fields that choose what is read (no colouring: a
// point answers values) and `coord_crs`.
import { badRequest } from "../errors";
import { checkBandList, checkSelectionRules, FIELD_NAMES, type StyleFields } from "./style";
import { checkQueryKeys, decimal, queryStyle, single, styleQueryParts, wholeNumber } from "./tile-request";

/** What a point reads: the fields that choose bands and assets and reduce them. */
export type PointFields = Pick<StyleFields, "bidx" | "expression" | "assets" | "assetBidx" | "nodata" | "pixelSelection" | "stage" | "rankChannel">;

export interface PointRequest extends PointFields {
  /** The point in `coordCrs`: longitude and latitude for EPSG:4326 (x first, as titiler's always_xy). */
  x: number;
  y: number;
  /** "EPSG:<code>", the default DEFAULT_COORD_CRS. */
  coordCrs: string;
}

export const DEFAULT_COORD_CRS = "EPSG:4326";
const POINT_FIELDS: (keyof PointFields)[] = ["bidx", "expression", "assets", "assetBidx", "nodata", "pixelSelection", "stage", "rankChannel"];
const QUERY_KEYS = [...POINT_FIELDS.map((field) => FIELD_NAMES[field]), "coord_crs"];
/** A coordinate's text: a decimal number (no hex, exponent past 3 digits, blanks), at most this long. */
const MAX_COORDINATE_TEXT = 40;
/** The most bands bidx may name for a point: its answer stays a few kilobytes. */
const MAX_POINT_BANDS = 256;

/** Parses and validates `{x},{y}` (URL-decoded) and the query; throws 400. */
export function parsePointRequest(coords: string, query: URLSearchParams): PointRequest {
  const comma = coords.indexOf(",");
  if (comma < 0) throw badRequest(`point "${coords.slice(0, 80)}" must be {x},{y}: two decimal numbers and a comma`);
  checkQueryKeys(query, QUERY_KEYS, "points");
  const coordCrs = coordinateCrs(single(query, "coord_crs"));
  const x = coordinate(coords.slice(0, comma), "x");
  const y = coordinate(coords.slice(comma + 1), "y");
  if (coordCrs === DEFAULT_COORD_CRS) {
    if (Math.abs(x) > 180) throw badRequest(`longitude ${x} is outside -180…180`);
    if (Math.abs(y) > 90) throw badRequest(`latitude ${y} is outside -90…90`);
  }
  // bidx of a point names any number of bands (a tile's renders 1 or 3): checked here, not by the style's schema.
  const rest = new URLSearchParams(query);
  rest.delete("bidx");
  const bidx = query.has("bidx") ? pointBands(query.getAll("bidx")) : undefined;
  const req: PointRequest = { x, y, coordCrs, ...queryStyle(rest), ...(bidx && { bidx }) };
  checkSelectionRules(req);
  return req;
}

function coordinate(text: string, axis: string): number {
  const value = text.length <= MAX_COORDINATE_TEXT ? decimal(text) : text;
  if (typeof value !== "number" || !Number.isFinite(value)) {
    throw badRequest(`point ${axis} "${text.slice(0, 80)}" must be a finite decimal number of at most ${MAX_COORDINATE_TEXT} characters`);
  }
  return value === 0 ? 0 : value; // -0 is 0: one spelling
}

function pointBands(texts: string[]): number[] {
  const bands = checkBandList(texts.flatMap((text) => text.split(",").map(wholeNumber)));
  if (bands.length > MAX_POINT_BANDS) throw badRequest(`bidx names ${bands.length} bands; a point reads at most ${MAX_POINT_BANDS}`);
  return bands;
}

/** `EPSG:{code}` in any case, written upper-case; absent: the default. */
function coordinateCrs(text: string | undefined): string {
  if (text === undefined) return DEFAULT_COORD_CRS;
  const m = /^epsg:(\d{1,6})$/i.exec(text);
  if (!m) throw badRequest(`coord_crs "${text.slice(0, 80)}" must be EPSG:{code}`);
  return `EPSG:${Number(m[1])}`;
}

/** `{x},{y}` with coord_crs (when not the default) and the style fields, canonically. */
export function canonicalPoint(req: PointRequest): string {
  const parts = req.coordCrs === DEFAULT_COORD_CRS ? [] : [`coord_crs=${req.coordCrs}`];
  parts.push(...styleQueryParts(req));
  const path = `${req.x},${req.y}`;
  return parts.length ? `${path}?${parts.join("&")}` : path;
}
