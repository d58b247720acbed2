// An area of a source as a picture or a GeoTIFF, titiler's crops: `/bbox/{id}/{minx},{miny},{maxx},
// {maxy}[/{width}x{height}].{format}` (the box in `coord_crs`, painted in `dst_crs`, default the
// source's own), `POST /feature/{id}[/{width}x{height}].{format}` (a GeoJSON body's polygons, in
// longitude and latitude, masked outside them) and `/preview/{id}[/{width}x{height}].{format}`
// (the whole source, small), with the tiles' style fields. Parsed once (400 with a message) and written back canonically, as a
// tile is, so every spelling of one area shares one cache entry and one decode.
import { badRequest } from "../errors";
import { checkStyleRules, DEFAULT_RESAMPLING, FIELD_NAMES, type Resampling, type StyleFields } from "./style";
import { decimal, number, queryStyle, single, styleQueryParts } from "./tile-request";
import type { OutputFormat } from "./tile-cost";

/** The largest side an area may ask for: beyond it no render is affordable, whatever the source. */
export const MAX_AREA_SIDE = 8192;
/** titiler's preview size: the longest side, when no size is given. */
export const DEFAULT_PREVIEW_SIZE = 1024;
/** The CRS a box's coordinates are in unless `coord_crs` says otherwise: longitude, latitude. */
export const LON_LAT_NAME = "EPSG:4326";

export interface AreaRequest extends StyleFields {
  kind: "bbox" | "feature" | "preview";
  /** minx, miny, maxx, maxy in `coordCrs`: a bbox's own, a feature's bounds (set from its body). */
  bbox?: [number, number, number, number];
  /** `EPSG:{code}`: the box's coordinates. */
  coordCrs: string;
  /** `EPSG:{code}` to paint in; absent: the source's own CRS. */
  dstCrs?: string;
  /** Both or neither: the output's exact size. */
  width?: number;
  height?: number;
  /** The longest side when no size is given (absent for bbox: the source's own resolution). */
  maxSize?: number;
  format: OutputFormat;
  resampling: Resampling;
}

const FORMATS: Record<string, OutputFormat> = { png: "png", jpg: "jpg", jpeg: "jpg", webp: "webp", tif: "tif", tiff: "tif" };
export const AREA_CONTENT_TYPES: Record<OutputFormat, string> = { png: "image/png", jpg: "image/jpeg", webp: "image/webp", tif: "image/tiff; application=geotiff" };
const AREA_KEYS = ["coord_crs", "dst_crs", "max_size"];
const QUERY_KEYS = [...Object.values(FIELD_NAMES), ...AREA_KEYS];

/** The path's last segments as routed, URL-decoded: the box (bbox only), and `[{w}x{h}].{format}`. */
export interface AreaPathParams {
  bbox?: string;
  /** `{width}x{height}.{format}`, or `.{format}` alone when the path gives no size. */
  file: string;
}

/** Parses and validates an area request; throws 400. */
export function parseAreaRequest(kind: AreaRequest["kind"], path: AreaPathParams, query: URLSearchParams): AreaRequest {
  const file = /^(?:(\d{1,9})x(\d{1,9}))?\.([a-z]+)$/.exec(path.file);
  if (!file) throw badRequest(`"${path.file.slice(0, 80)}" must be .{format} or {width}x{height}.{format}`);
  const format = Object.hasOwn(FORMATS, file[3]) ? FORMATS[file[3]] : undefined;
  if (!format) throw badRequest(`format "${file[3]}" is not one of png, jpg, webp, tif`);
  // A feature's coordinates are GeoJSON's: longitude and latitude.
  const keys = kind === "feature" ? QUERY_KEYS.filter((key) => key !== "coord_crs") : QUERY_KEYS;
  for (const key of new Set(query.keys())) {
    if (!keys.includes(key)) throw badRequest(`unknown query parameter "${key}"; ${kind} takes ${keys.join(", ")}`);
  }
  const style = queryStyle(query);
  const coordCrs = crsName(single(query, "coord_crs") ?? LON_LAT_NAME, "coord_crs");
  const dstText = single(query, "dst_crs");
  const req: AreaRequest = { kind, coordCrs, format, ...style, resampling: style.resampling ?? DEFAULT_RESAMPLING };
  if (dstText !== undefined) req.dstCrs = crsName(dstText, "dst_crs");
  if (file[1] !== undefined) {
    req.width = side(file[1], "width");
    req.height = side(file[2], "height");
  } else {
    const maxSize = single(query, "max_size");
    if (maxSize !== undefined) req.maxSize = side(maxSize, "max_size");
    else if (kind === "preview") req.maxSize = DEFAULT_PREVIEW_SIZE;
  }
  if (kind === "bbox") req.bbox = box(path.bbox ?? "", coordCrs);
  checkStyleRules(req);
  return req;
}

/**
 * `bbox/{box}[/{w}x{h}].{format}`, `feature[/{w}x{h}].{format}` or `preview[/{w}x{h}].{format}`,
 * and the canonical query: what names the area's pixels (a feature's with its body's digest).
 */
export function canonicalArea(req: AreaRequest): string {
  return withQuery(req.kind === "bbox" ? `bbox/${boxText(req)}${sizeText(req)}` : `${req.kind}${sizeText(req)}`, req);
}

/** The area's public path for source `pathId` (already URL-encoded), as canonical: `bbox/{id}/…` or `preview/{id}…`. */
export function publicArea(pathId: string, req: AreaRequest): string {
  return withQuery(req.kind === "bbox" ? `bbox/${pathId}/${boxText(req)}${sizeText(req)}` : `${req.kind}/${pathId}${sizeText(req)}`, req);
}

const boxText = (req: AreaRequest) => req.bbox!.map(number).join(",");
const sizeText = (req: AreaRequest) => `${req.width !== undefined ? `/${req.width}x${req.height}` : ""}.${req.format}`;

/** `path` with the canonical query: only what differs from the defaults, in one order. */
function withQuery(path: string, req: AreaRequest): string {
  const parts: string[] = [];
  if (req.kind === "bbox" && req.coordCrs !== LON_LAT_NAME) parts.push(`coord_crs=${req.coordCrs}`);
  if (req.dstCrs !== undefined) parts.push(`dst_crs=${req.dstCrs}`);
  const defaultSize = req.kind === "preview" ? DEFAULT_PREVIEW_SIZE : undefined;
  if (req.width === undefined && req.maxSize !== defaultSize) parts.push(`max_size=${req.maxSize}`);
  parts.push(...styleQueryParts(req));
  return parts.length > 0 ? `${path}?${parts.join("&")}` : path;
}

/** `EPSG:{code}` in one spelling; anything else is refused here (whether the code is known, the decoder says). */
export function crsName(text: string, what: string): string {
  const match = /^epsg:(\d{1,6})$/i.exec(text);
  if (!match || Number(match[1]) === 0) throw badRequest(`${what} "${text.slice(0, 80)}" must be EPSG:{code}`);
  return `EPSG:${Number(match[1])}`;
}

function side(text: string, what: string): number {
  const n = /^\d{1,9}$/.test(text) ? Number(text) : Number.NaN;
  if (!(n >= 1 && n <= MAX_AREA_SIDE)) throw badRequest(`${what} "${text.slice(0, 80)}" must be a whole number of pixels from 1 to ${MAX_AREA_SIDE}`);
  return n;
}

/** `minx,miny,maxx,maxy`: four decimals, a box that is not empty; longitudes and latitudes in range in EPSG:4326. */
function box(text: string, crs: string): [number, number, number, number] {
  const values = text.split(",").map(decimal);
  if (values.length !== 4 || !values.every((v): v is number => typeof v === "number" && Number.isFinite(v))) {
    throw badRequest(`bbox "${text.slice(0, 80)}" must be minx,miny,maxx,maxy: four decimal numbers`);
  }
  const [minx, miny, maxx, maxy] = values;
  if (!(minx < maxx && miny < maxy)) throw badRequest(`bbox "${text.slice(0, 80)}" is empty: minx must be below maxx and miny below maxy`);
  if (crs === LON_LAT_NAME && (minx < -180 || maxx > 180 || miny < -90 || maxy > 90)) {
    throw badRequest(`bbox "${text.slice(0, 80)}" is not longitude -180…180, latitude -90…90 (coord_crs EPSG:4326)`);
  }
  return [minx, miny, maxx, maxy];
}

/**
 * A path's last segment split at its last dot: `{head}.{format}` → [head, ".{format}"]. A box's
 * decimals have dots of their own; a format has none.
 */
export function splitFormat(segment: string): [string, string] {
  const dot = segment.lastIndexOf(".");
  if (dot < 0) throw badRequest(`"${segment.slice(0, 80)}" must end in .{format}: png, jpg, webp or tif`);
  return [segment.slice(0, dot), segment.slice(dot)];
}
