// A web-map tile request, `/tiles/{id}/{tileMatrixSetId}/{z}/{x}/{y}[@2x].{png|jpg|webp}` and its
// query, parsed and validated once (400 with a message) and written back canonically: the edge's
// cache key and the decoder's path both use the canonical form, so two spellings of one tile
// (`jpeg` and `jpg`, `bidx=1&bidx=2&bidx=3` and `bidx=1,2,3`, defaults spelled out or not) share
// one cache entry. The query follows titiler's names, which map users already know.
import { badRequest } from "../errors";
import { tileBounds, tileMatrixSet } from "./tile-matrix-sets";

export type TileFormat = "png" | "jpg" | "webp";
export type Resampling = "nearest" | "bilinear" | "cubic";

export const RESAMPLINGS: readonly Resampling[] = ["nearest", "bilinear", "cubic"];
export const DEFAULT_RESAMPLING: Resampling = "nearest";
/** Side of a tile in pixels at scale 1; `@2x` doubles it. */
export const TILE_SIZE = 256;
/** Band indexes a request may name (a GeoTIFF may hold more; the decoder checks the real count). */
export const MAX_BAND_INDEX = 65535;

export interface TileRequest {
  tileMatrixSet: string;
  z: number;
  x: number;
  y: number;
  /** 1: 256² pixels; 2 (`@2x`): 512², the same ground. */
  scale: 1 | 2;
  format: TileFormat;
  /** One-based bands to render: one (grey) or three (RGB). Absent: the source's own colour bands. */
  bidx?: number[];
  /**
   * [min, max] mapped linearly to 0–255, one pair per output band, or one pair for all. Absent:
   * 8-bit data as stored, other integer data over its type's range; float data needs it.
   */
  rescale?: [number, number][];
  /** Overrides the source's nodata value (NaN allowed). */
  nodata?: number;
  resampling: Resampling;
}

const FORMATS: Record<string, TileFormat> = { png: "png", jpg: "jpg", jpeg: "jpg", webp: "webp" };
export const CONTENT_TYPES: Record<TileFormat, string> = { png: "image/png", jpg: "image/jpeg", webp: "image/webp" };
const QUERY_KEYS = ["bidx", "rescale", "nodata", "resampling"];

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
  for (const key of new Set(query.keys())) {
    if (!QUERY_KEYS.includes(key)) throw badRequest(`unknown query parameter "${key}"; tiles take ${QUERY_KEYS.join(", ")}`);
  }
  const bidx = parseBidx(query.getAll("bidx"));
  const rescale = parseRescale(query.getAll("rescale"), bidx);
  return {
    tileMatrixSet: tms.id,
    z,
    x,
    y,
    scale: last[2] ? 2 : 1,
    format,
    ...(bidx && { bidx }),
    ...(rescale && { rescale }),
    ...optional("nodata", single(query, "nodata"), parseNodata),
    resampling: parseResampling(single(query, "resampling")),
  };
}

/** `{tileMatrixSet}/{z}/{x}/{y}[@2x].{ext}`: the tile's canonical path. */
export function tilePath(req: TileRequest): string {
  return `${req.tileMatrixSet}/${req.z}/${req.x}/${req.y}${req.scale === 2 ? "@2x" : ""}.${req.format}`;
}

/** The canonical query: only what differs from the defaults, in one order, numbers as JavaScript writes them. */
export function tileQuery(req: TileRequest): string {
  const parts: string[] = [];
  if (req.bidx) parts.push(`bidx=${req.bidx.join(",")}`);
  if (req.rescale) for (const [min, max] of req.rescale) parts.push(`rescale=${number(min)},${number(max)}`);
  if (req.nodata !== undefined) parts.push(`nodata=${number(req.nodata)}`);
  if (req.resampling !== DEFAULT_RESAMPLING) parts.push(`resampling=${req.resampling}`);
  return parts.join("&");
}

/** Path and query together, `path` or `path?query`: what names the tile's pixels. */
export function canonicalTile(req: TileRequest): string {
  const query = tileQuery(req);
  return query ? `${tilePath(req)}?${query}` : tilePath(req);
}

/** The tile's side in pixels. */
export const tileSide = (req: Pick<TileRequest, "scale">) => TILE_SIZE * req.scale;

const number = (n: number) => (Number.isNaN(n) ? "nan" : String(n));

function tileIndex(text: string, what: string): number {
  if (!/^\d{1,9}$/.test(text)) throw badRequest(`tile ${what} "${text}" must be a whole number`);
  return Number(text);
}

function single(query: URLSearchParams, key: string): string | undefined {
  const values = query.getAll(key);
  if (values.length > 1) throw badRequest(`query parameter "${key}" is given ${values.length} times; give it once`);
  return values[0];
}

function optional<K extends string, T>(key: K, text: string | undefined, parse: (text: string) => T): { [P in K]?: T } {
  return (text === undefined ? {} : { [key]: parse(text) }) as { [P in K]?: T };
}

function parseBidx(values: string[]): number[] | undefined {
  if (values.length === 0) return undefined;
  const bands = values.flatMap((v) => v.split(",")).map((text) => {
    if (!/^\d{1,5}$/.test(text) || Number(text) < 1 || Number(text) > MAX_BAND_INDEX) {
      throw badRequest(`bidx "${text}" must be a band number from 1`);
    }
    return Number(text);
  });
  if (bands.length !== 1 && bands.length !== 3) throw badRequest(`bidx names ${bands.length} bands; a tile has 1 (grey) or 3 (RGB)`);
  return bands;
}

function parseRescale(values: string[], bidx: number[] | undefined): [number, number][] | undefined {
  if (values.length === 0) return undefined;
  const pairs = values.map((text): [number, number] => {
    const parts = text.split(",");
    const [min, max] = parts.map(finite);
    if (parts.length !== 2 || min === undefined || max === undefined || !(min < max)) {
      throw badRequest(`rescale "${text}" must be min,max with min < max`);
    }
    return [min, max];
  });
  const bands = bidx?.length ?? 3;
  if (pairs.length !== 1 && pairs.length !== bands) {
    throw badRequest(`rescale gives ${pairs.length} ranges; give one for every band, or one for all ${bands}`);
  }
  return pairs;
}

function parseNodata(text: string): number {
  if (/^nan$/i.test(text)) return Number.NaN;
  const value = finite(text);
  if (value === undefined) throw badRequest(`nodata "${text}" must be a number or nan`);
  return value;
}

function parseResampling(text: string | undefined): Resampling {
  if (text === undefined) return DEFAULT_RESAMPLING;
  const found = RESAMPLINGS.find((r) => r === text);
  if (!found) throw badRequest(`resampling "${text}" is not one of ${RESAMPLINGS.join(", ")}`);
  return found;
}

/** A finite decimal number as written in a URL (no hex, no blanks), else undefined. */
function finite(text: string): number | undefined {
  if (!/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(text)) return undefined;
  const value = Number(text);
  return Number.isFinite(value) ? value : undefined;
}
