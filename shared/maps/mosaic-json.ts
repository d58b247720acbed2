// MosaicJSON 0.0.3: a document naming, for each web-mercator quadkey at one zoom (the index's),
// the assets (COGs) to paint there, first listed painted first. Both tiers read it: the decoder
// to choose a tile's assets, the edge to count them for admission. The document comes from a
// publisher's bucket, so it is validated as an attacker might write it: every failure is a 400
// naming the field, never a crash or an unbounded amount of work.
import { badRequest, notFound } from "../errors";
import { unwrappedBox } from "./antimeridian";
import { field, hasControlCharacter, isObject, parseJsonObject, quoted } from "./json-fields";
import { tileBounds, tileMatrixSet } from "./tile-matrix-sets";

/** The one tile matrix set mosaics are served on: the grid of MosaicJSON's quadkeys. */
export const MOSAIC_TMS = "WebMercatorQuad";

/** A mosaic asked for what only a single image has (an IIIF image, its file). */
export const mosaicIsMapOnly = (id: string) =>
  notFound(`source "${id}" is a mosaic: it is served as map tiles only, under /tiles/${id}/${MOSAIC_TMS}/…`);

/** The finest zoom a MosaicJSON document may name (quadkeys of at most 30 digits). */
export const MAX_MOSAIC_ZOOM = 30;

// ---------------------------------------------------------------------------------------------
// Quadkeys (Bing Maps Tile System): one digit a zoom, coarsest first, each digit 2·(y bit) + (x bit).
// A tile's descendants are exactly the quadkeys it prefixes, which is what makes the index sortable.

/** The quadkey of web-mercator tile z/x/y; 400 outside the matrix. */
export function tileToQuadkey(z: number, x: number, y: number): string {
  if (!Number.isInteger(z) || z < 0 || z > MAX_MOSAIC_ZOOM) throw badRequest(`tile zoom ${z} is not a whole number in 0–${MAX_MOSAIC_ZOOM}`);
  const size = 2 ** z;
  if (!Number.isInteger(x) || x < 0 || x >= size) throw badRequest(`tile x ${x} is outside zoom ${z} (0–${size - 1})`);
  if (!Number.isInteger(y) || y < 0 || y >= size) throw badRequest(`tile y ${y} is outside zoom ${z} (0–${size - 1})`);
  let key = "";
  // Arithmetic, not bit operators: x and y reach 2^30 - 1, past which 32-bit operators go wrong.
  for (let bit = size / 2; bit >= 1; bit /= 2) {
    key += String((Math.floor(y / bit) % 2) * 2 + (Math.floor(x / bit) % 2));
  }
  return key;
}

/** The tile a quadkey names; 400 for a key of other digits than 0–3 or longer than 30. */
export function quadkeyToTile(quadkey: string): { z: number; x: number; y: number } {
  if (!isQuadkey(quadkey)) throw badRequest(`quadkey ${quoted(quadkey)} is not 0–${MAX_MOSAIC_ZOOM} digits of 0–3`);
  let x = 0;
  let y = 0;
  for (const digit of quadkey) {
    const d = Number(digit);
    x = x * 2 + (d % 2);
    y = y * 2 + Math.floor(d / 2);
  }
  return { z: quadkey.length, x, y };
}

const isQuadkey = (s: string) => s.length <= MAX_MOSAIC_ZOOM && /^[0-3]*$/.test(s);

// ---------------------------------------------------------------------------------------------
// The document.

/** How much a document may ask of a tier; the caller may lower any of them. */
export interface MosaicLimits {
  /** Characters of JSON text, checked before parsing. */
  maxDocumentLength: number;
  maxQuadkeys: number;
  maxAssetsPerQuadkey: number;
  /** Asset entries over all quadkeys: what the index holds in memory. */
  maxTotalAssets: number;
  /** Characters of an asset, `asset_prefix` included. */
  maxAssetLength: number;
}

export const DEFAULT_MOSAIC_LIMITS: MosaicLimits = {
  maxDocumentLength: 32 * 1024 * 1024,
  maxQuadkeys: 100_000,
  maxAssetsPerQuadkey: 1000,
  maxTotalAssets: 1_000_000,
  maxAssetLength: 2048,
};

export interface MosaicJson {
  minzoom: number;
  maxzoom: number;
  /** The zoom of every quadkey in the index (`quadkey_zoom`, else `minzoom`). */
  quadkeyZoom: number;
  /** West, south, east, north in degrees. */
  bounds: [number, number, number, number];
  /** Put before every asset when it is looked up ("" when the document has none). */
  assetPrefix: string;
  /** The index's quadkeys in lexical order, which puts a tile's descendants next to each other. */
  quadkeys: readonly string[];
  /** Each quadkey's assets in paint order, a repeat within a list dropped. */
  assets: ReadonlyMap<string, readonly string[]>;
}

/**
 * Parses a MosaicJSON 0.0.3 document's text. Unknown fields are ignored, as the format asks;
 * every missing, mistyped or out-of-range field we use, and every limit passed, is a 400.
 */
export function parseMosaicJson(text: string, limits: Partial<MosaicLimits> = {}): MosaicJson {
  const max = { ...DEFAULT_MOSAIC_LIMITS, ...limits };
  if (text.length > max.maxDocumentLength) {
    throw badRequest(`mosaic document is ${text.length} characters, more than the ${max.maxDocumentLength} allowed`);
  }
  const root = parseJsonObject(text, "mosaic document");
  if (field(root, "mosaicjson") !== "0.0.3") throw badRequest(`mosaicjson must be "0.0.3"`);
  // The index is read as WebMercatorQuad quadkeys: another grid's would name other ground.
  const tms = field(root, "tilematrixset");
  if (tms !== undefined && !(isObject(tms) && field(tms, "id") === "WebMercatorQuad")) {
    throw badRequest("tilematrixset: only WebMercatorQuad quadkeys are read");
  }
  const minzoom = zoom(root, "minzoom", 0, MAX_MOSAIC_ZOOM);
  const maxzoom = zoom(root, "maxzoom", minzoom, MAX_MOSAIC_ZOOM);
  const quadkeyZoom = field(root, "quadkey_zoom") === undefined ? minzoom : zoom(root, "quadkey_zoom", minzoom, maxzoom);
  const prefix = field(root, "asset_prefix") ?? "";
  if (typeof prefix !== "string") throw badRequest("asset_prefix must be a string");
  const tiles = field(root, "tiles");
  if (!isObject(tiles)) throw badRequest("tiles must be an object of quadkeys to asset lists");
  return {
    minzoom,
    maxzoom,
    quadkeyZoom,
    bounds: parseBounds(field(root, "bounds")),
    assetPrefix: prefix,
    ...parseIndex(tiles, quadkeyZoom, prefix.length, max),
  };
}

/**
 * The assets to paint on web-mercator tile z/x/y, first painted first, each asset once: at the
 * index's zoom, its quadkey's list; finer, its ancestor's list at the index's zoom; coarser, the
 * lists of every index quadkey under it, in lexical order, each asset where it first appears.
 * Empty outside minzoom–maxzoom or where the index has nothing: the caller's transparent tile.
 */
export function mosaicAssets(mosaic: MosaicJson, z: number, x: number, y: number): string[] {
  const quadkey = tileToQuadkey(z, x, y);
  if (z < mosaic.minzoom || z > mosaic.maxzoom) return [];
  const found = new Set<string>();
  if (z >= mosaic.quadkeyZoom) {
    for (const asset of mosaic.assets.get(quadkey.slice(0, mosaic.quadkeyZoom)) ?? []) found.add(asset);
  } else {
    // The descendants are the sorted keys from the first one at or after the prefix, as long as
    // they start with it: a binary search and a walk over the keys present, however sparse.
    const keys = mosaic.quadkeys;
    for (let i = firstAtOrAfter(keys, quadkey); i < keys.length && keys[i].startsWith(quadkey); i++) {
      // A Set keeps insertion order, so each asset stays where it first appeared.
      for (const asset of mosaic.assets.get(keys[i])!) found.add(asset);
    }
  }
  return [...found].map((asset) => mosaic.assetPrefix + asset);
}

/**
 * The assets whose quadkeys' tiles meet `bounds` (Web Mercator metres), in the order of the keys
 * and then of each key's list, each once: what an area (a crop, statistics) paints.
 */
export function mosaicAssetsIn(mosaic: MosaicJson, bounds: readonly [number, number, number, number]): string[] {
  const tms = tileMatrixSet(MOSAIC_TMS);
  const found = new Set<string>();
  for (const key of mosaic.quadkeys) {
    const { z, x, y } = quadkeyToTile(key);
    const [x0, y0, x1, y1] = tileBounds(tms, z, x, y);
    if (x0 < bounds[2] && x1 > bounds[0] && y0 < bounds[3] && y1 > bounds[1]) for (const asset of mosaic.assets.get(key)!) found.add(asset);
  }
  return [...found].map((asset) => mosaic.assetPrefix + asset);
}

/** The index of the first of the sorted `keys` that is not before `key`. */
function firstAtOrAfter(keys: readonly string[], key: string): number {
  let low = 0;
  let high = keys.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (keys[mid] < key) low = mid + 1;
    else high = mid;
  }
  return low;
}

function parseIndex(tiles: Record<string, unknown>, quadkeyZoom: number, prefixLength: number, max: MosaicLimits) {
  const keys = Object.keys(tiles);
  if (keys.length > max.maxQuadkeys) throw badRequest(`tiles has ${keys.length} quadkeys, more than the ${max.maxQuadkeys} allowed`);
  // Sorted before validation as well as for lookups, so the first bad key reported is always the same.
  keys.sort();
  const assets = new Map<string, readonly string[]>();
  let total = 0;
  for (const key of keys) {
    const path = `tiles[${quoted(key)}]`;
    if (!isQuadkey(key)) throw badRequest(`${path} is not a quadkey (digits 0–3)`);
    if (key.length !== quadkeyZoom) throw badRequest(`${path} is a quadkey of zoom ${key.length}, not the index's zoom ${quadkeyZoom}`);
    const list = tiles[key];
    if (!Array.isArray(list)) throw badRequest(`${path} must be a list of assets`);
    if (list.length > max.maxAssetsPerQuadkey) {
      throw badRequest(`${path} lists ${list.length} assets, more than the ${max.maxAssetsPerQuadkey} allowed`);
    }
    total += list.length;
    if (total > max.maxTotalAssets) throw badRequest(`${path} takes tiles past the ${max.maxTotalAssets} assets allowed in all`);
    list.forEach((asset, i) => checkAsset(asset, `${path}[${i}]`, prefixLength, max.maxAssetLength));
    assets.set(key, [...new Set<string>(list)]);
  }
  return { quadkeys: keys, assets };
}

function checkAsset(asset: unknown, path: string, prefixLength: number, maxLength: number): void {
  if (typeof asset !== "string") throw badRequest(`${path} must be a string`);
  if (asset === "") throw badRequest(`${path} is empty`);
  if (prefixLength + asset.length > maxLength) {
    throw badRequest(`${path} is ${prefixLength + asset.length} characters with asset_prefix, more than the ${maxLength} allowed`);
  }
  if (hasControlCharacter(asset)) throw badRequest(`${path} holds a control character`);
}

function parseBounds(bounds: unknown): [number, number, number, number] {
  if (!Array.isArray(bounds) || bounds.length !== 4) throw badRequest("bounds must be [west, south, east, north]");
  const limits = [180, 90, 180, 90];
  bounds.forEach((v, i) => {
    if (typeof v !== "number" || !Number.isFinite(v) || Math.abs(v) > limits[i]) {
      throw badRequest(`bounds[${i}] must be a number of degrees within ±${limits[i]}`);
    }
  });
  const [west, south, east, north] = bounds as number[];
  // West > east: the mosaic crosses 180°, kept as one box whose east edge is past 180°.
  if (!(west !== east && south < north)) throw badRequest("bounds must have west ≠ east and south < north");
  return unwrappedBox([west, south, east, north]);
}

function zoom(root: Record<string, unknown>, name: string, min: number, max: number): number {
  const value = field(root, name);
  if (!Number.isInteger(value) || (value as number) < min || (value as number) > max) {
    throw badRequest(`${name} must be a whole number in ${min}–${max}`);
  }
  return value as number;
}
