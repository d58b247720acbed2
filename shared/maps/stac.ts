// STAC documents as mosaic sources: an Item, an ItemCollection, or a static Catalog or
// Collection whose item and child links lead to Items, read into the few facts a mosaic needs
// (each Item's footprint, its assets' files and band counts, its EPSG code). Both tiers read it.
// The documents come from a publisher's bucket or an HTTP server, so every field is checked
// before it is trusted and the walk through a catalog is bounded: each failure is a 400 naming
// the document and the JSON path of the bad field, never a crash or an unbounded amount of work.
import { badRequest } from "../errors";
import { unwrappedBox } from "./antimeridian";
import { field, hasControlCharacter, isObject, parseJsonObject, quoted } from "./json-fields";

export interface StacItem {
  id: string;
  /** [west, south, east, north] in degrees (the Item's bbox; 3D bboxes reduced). */
  bbox: [number, number, number, number];
  /**
   * Asset key → its href resolved against the document that named it, and its band count when
   * the Item says (`bands`, `raster:bands` or `eo:bands` length; else undefined).
   */
  assets: Record<string, { href: string; bands?: number }>;
  /** From proj:epsg, or proj:code "EPSG:n" (Item properties, or the assets' own), when present. */
  epsg?: number;
}

/** How much a STAC source may ask of a tier; the caller may lower any of them. */
export interface StacLimits {
  /** UTF-8 bytes of one document's text. */
  maxBytes: number;
  /** Items in all the documents together. */
  maxItems: number;
  /** Links followed from the first document to the deepest one. */
  maxDepth: number;
  /** Assets of one Item. */
  maxAssets: number;
  /** Documents loaded through links in all (catalogs as well as Items). */
  maxDocuments: number;
}

export const DEFAULT_STAC_LIMITS: StacLimits = {
  maxBytes: 8 * 1024 * 1024,
  maxItems: 1000,
  maxDepth: 4,
  maxAssets: 64,
  maxDocuments: 2000,
};

/** Characters of a resolved href; longer ones are refused before anything is read with them. */
const MAX_HREF_LENGTH = 2048;

// ---------------------------------------------------------------------------------------------
// Loading: one document, or a catalog walked depth-first.

/**
 * The Items of a STAC document, in document order (depth-first through a catalog's links, in
 * the order each catalog lists them). `location` is where `text` came from (a store key or a
 * URL): relative hrefs are resolved against it. `load` fetches a linked document by its
 * resolved href; what it may fetch is its own policy.
 */
export async function loadStac(
  text: string,
  location: string,
  load: (href: string) => Promise<string>,
  limits: Partial<StacLimits> = {},
): Promise<StacItem[]> {
  const walk: Walk = { max: { ...DEFAULT_STAC_LIMITS, ...limits }, load, items: [], loaded: new Set([location]), documents: 0 };
  await readDocument(walk, text, location, [location]);
  return walk.items;
}

interface Walk {
  max: StacLimits;
  load: (href: string) => Promise<string>;
  items: StacItem[];
  /** Every document location read so far: one reached again by another path is not read twice. */
  loaded: Set<string>;
  documents: number;
}

/** Reads one document found through the links in `trail` (its own location last). */
async function readDocument(walk: Walk, text: string, location: string, trail: string[]): Promise<void> {
  // The first document's messages name only the path; a linked one's name the document too.
  const at = trail.length === 1 ? "" : `${location}: `;
  const root = parseJson(text, walk.max.maxBytes, at);
  const type = field(root, "type");
  if (type === "Feature") {
    addItem(walk, parseItem(root, "", location, walk.max.maxAssets, at));
  } else if (type === "FeatureCollection") {
    const features = field(root, "features");
    if (!Array.isArray(features)) throw badRequest(`${at}features must be a list of Items`);
    if (walk.items.length + features.length > walk.max.maxItems) throw tooManyItems(walk.max);
    features.forEach((feature, i) => {
      const path = `features[${i}]`;
      if (!isObject(feature) || field(feature, "type") !== "Feature") throw badRequest(`${at}${path}.type must be "Feature"`);
      addItem(walk, parseItem(feature, `${path}.`, location, walk.max.maxAssets, at));
    });
  } else if (type === "Catalog" || type === "Collection") {
    stringField(root, "id", "", at);
    // self, root, parent and the rest describe the catalog; following them would go round.
    for (const [i, link] of parseLinks(root, "", at).entries()) {
      if (link.rel === "item" || link.rel === "child") await follow(walk, resolved(location, link.href, `${at}links[${i}].href`), trail, at);
    }
  } else {
    throw badRequest(`${at}type must be "Feature", "FeatureCollection", "Catalog" or "Collection"`);
  }
}

/** Loads and reads the document a catalog links to, unless the walk would go round or too far. */
async function follow(walk: Walk, href: string, trail: string[], at: string): Promise<void> {
  if (trail.includes(href)) throw badRequest(`${at}links lead back to ${quoted(href)}: a catalog cycle`);
  // A document two catalogs link to (not a cycle) gives its Items once, where first reached.
  if (walk.loaded.has(href)) return;
  if (trail.length > walk.max.maxDepth) {
    throw badRequest(`${at}links to ${quoted(href)} go deeper than the ${walk.max.maxDepth} links allowed from the first document`);
  }
  if (++walk.documents > walk.max.maxDocuments) throw badRequest(`catalog links to more than the ${walk.max.maxDocuments} documents allowed`);
  walk.loaded.add(href);
  await readDocument(walk, await walk.load(href), href, [...trail, href]);
}

function addItem(walk: Walk, item: StacItem): void {
  if (walk.items.length >= walk.max.maxItems) throw tooManyItems(walk.max);
  walk.items.push(item);
}

const tooManyItems = (max: StacLimits) => badRequest(`STAC source has more than the ${max.maxItems} Items allowed`);

/** The `links` of the object at JSON path `path`, as listed (hrefs as written: only those followed are resolved). */
function parseLinks(o: Record<string, unknown>, path: string, at: string): { rel: string; href: string }[] {
  const links = field(o, "links");
  if (links === undefined) return [];
  if (!Array.isArray(links)) throw badRequest(`${at}${path}links must be a list`);
  return links.map((link, i) => {
    const linkPath = `${path}links[${i}]`;
    if (!isObject(link)) throw badRequest(`${at}${linkPath} must be an object`);
    const rel = stringField(link, "rel", `${linkPath}.`, at);
    return { rel, href: hrefField(link, `${linkPath}.`, at) };
  });
}

function parseJson(text: string, maxBytes: number, at: string): Record<string, unknown> {
  // Characters first: no more UTF-8 bytes than characters is possible, and counting is skipped.
  if (text.length > maxBytes || utf8Length(text) > maxBytes) throw badRequest(`${at}STAC document is more than the ${maxBytes} bytes allowed`);
  return parseJsonObject(text, `${at}STAC document`);
}

function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    // A surrogate pair is 4 bytes: 2 counted for each half.
    bytes += unit < 0x80 ? 1 : unit < 0x800 || (unit >= 0xd800 && unit <= 0xdfff) ? 2 : 3;
  }
  return bytes;
}

// ---------------------------------------------------------------------------------------------
// An Item.

/** An Item (a GeoJSON Feature) at JSON path `path` ("" or "features[3].") of the document at `location`. */
function parseItem(item: Record<string, unknown>, path: string, location: string, maxAssets: number, at: string): StacItem {
  stringField(item, "stac_version", path, at);
  const id = stringField(item, "id", path, at);
  const bbox = parseBbox(field(item, "bbox"), `${path}bbox`, at);
  const properties = field(item, "properties");
  if (properties !== undefined && properties !== null && !isObject(properties)) throw badRequest(`${at}${path}properties must be an object`);
  const assets = parseAssets(field(item, "assets"), `${path}assets`, location, maxAssets, at);
  // An Item's links are not followed, but they are checked as a catalog's are.
  parseLinks(item, path, at);
  const epsg = (isObject(properties) ? epsgOf(properties, `${path}properties`, at) : undefined) ?? commonAssetEpsg(field(item, "assets") as Record<string, unknown>, path, at);
  return { id, bbox, assets, ...(epsg === undefined ? {} : { epsg }) };
}

function parseBbox(bbox: unknown, path: string, at: string): [number, number, number, number] {
  if (!Array.isArray(bbox) || (bbox.length !== 4 && bbox.length !== 6)) throw badRequest(`${at}${path} must be 4 or 6 numbers`);
  bbox.forEach((v, i) => {
    if (typeof v !== "number" || !Number.isFinite(v)) throw badRequest(`${at}${path}[${i}] must be a finite number`);
  });
  // A 3D bbox is [west, south, min height, east, north, max height].
  const [west, south, east, north] = (bbox.length === 4 ? bbox : [bbox[0], bbox[1], bbox[3], bbox[4]]) as number[];
  if (Math.abs(west) > 180 || Math.abs(east) > 180) throw badRequest(`${at}${path} longitudes must be within ±180`);
  if (Math.abs(south) > 90 || Math.abs(north) > 90) throw badRequest(`${at}${path} latitudes must be within ±90`);
  if (!(south < north)) throw badRequest(`${at}${path} must have south < north`);
  // West > east: the item crosses 180° (RFC 7946), kept as one box whose east edge is past 180°.
  if (west === east) throw badRequest(`${at}${path} must have west ≠ east`);
  return unwrappedBox([west, south, east, north]);
}

function parseAssets(assets: unknown, path: string, location: string, maxAssets: number, at: string): StacItem["assets"] {
  if (!isObject(assets)) throw badRequest(`${at}${path} must be an object of assets`);
  const keys = Object.keys(assets);
  if (keys.length > maxAssets) throw badRequest(`${at}${path} has ${keys.length} assets, more than the ${maxAssets} allowed`);
  // A null prototype: an asset named `constructor` or `__proto__` is an asset like any other,
  // and a key the Item lacks finds nothing.
  const out: StacItem["assets"] = Object.create(null);
  for (const key of keys) {
    const assetPath = `${path}${member(key)}`;
    const asset = assets[key];
    if (!isObject(asset)) throw badRequest(`${at}${assetPath} must be an object`);
    const href = resolved(location, hrefField(asset, `${assetPath}.`, at), `${at}${assetPath}.href`);
    const bands = bandCount(asset, assetPath, at);
    out[key] = bands === undefined ? { href } : { href, bands };
  }
  return out;
}

/** The length of the asset's band list (STAC 1.1 `bands`, or the `raster:` or `eo:` extension's). */
function bandCount(asset: Record<string, unknown>, path: string, at: string): number | undefined {
  for (const name of ["bands", "raster:bands", "eo:bands"]) {
    const list = field(asset, name);
    if (list === undefined) continue;
    if (!Array.isArray(list) || list.length === 0) throw badRequest(`${at}${path}${member(name)} must be a non-empty list`);
    return list.length;
  }
  return undefined;
}

/** The EPSG code `proj:epsg` or `proj:code` gives in `o`; undefined for none, null or another authority's code. */
function epsgOf(o: Record<string, unknown>, path: string, at: string): number | undefined {
  const epsg = field(o, "proj:epsg");
  if (epsg !== undefined && epsg !== null) {
    if (!isEpsgCode(epsg)) throw badRequest(`${at}${path}["proj:epsg"] must be a positive whole number or null`);
    return epsg;
  }
  const code = field(o, "proj:code");
  if (code === undefined || code === null) return undefined;
  if (typeof code !== "string") throw badRequest(`${at}${path}["proj:code"] must be a string or null`);
  const match = /^EPSG:(\d{1,9})$/.exec(code);
  return match && isEpsgCode(Number(match[1])) ? Number(match[1]) : undefined;
}

const isEpsgCode = (v: unknown): v is number => Number.isInteger(v) && (v as number) > 0 && (v as number) < 2 ** 31;

/** The EPSG code the assets give, when every asset that gives one gives the same. */
function commonAssetEpsg(assets: Record<string, unknown>, path: string, at: string): number | undefined {
  const codes = new Set(Object.keys(assets).map((key) => epsgOf(assets[key] as Record<string, unknown>, `${path}assets${member(key)}`, at)));
  codes.delete(undefined);
  return codes.size === 1 ? [...codes][0] : undefined;
}

// ---------------------------------------------------------------------------------------------
// Hrefs.

/**
 * `href` resolved against `base`, the location of the document that holds it. Resolving is not
 * permission: an href may name another bucket (`s3://`), a local file (`file:///etc/passwd`) or
 * any key of the store, and the caller's access policy decides what may be read.
 * - An href with a scheme (`https://…`, `s3://…`) stays as it is.
 * - Against a URL base, a relative href is resolved as a browser would (`new URL`).
 * - Against a store key, it is joined to the key's folder POSIX-style, `.` and empty segments
 *   dropped; a leading `/` starts from the store's root (as it does a URL's), and a `..` that
 *   would climb above the root is 400.
 */
export function resolveHref(base: string, href: string): string {
  if (hasScheme(href)) return href;
  if (hasScheme(base)) {
    try {
      return new URL(href, base).href;
    } catch {
      throw badRequest(`href ${quoted(href)} cannot be resolved against ${quoted(base)}`);
    }
  }
  if (/(^|\/)\.{0,2}$/.test(href)) throw badRequest(`href ${quoted(href)} names a folder, not a file`);
  const folder = href.startsWith("/") ? [] : base.split("/").slice(0, -1);
  const segments: string[] = [];
  for (const segment of [...folder, ...href.split("/")]) {
    if (segment === "" || segment === ".") continue;
    if (segment !== "..") segments.push(segment);
    else if (segments.pop() === undefined) throw badRequest(`href ${quoted(href)} climbs above the store's root from ${quoted(base)}`);
  }
  return segments.join("/");
}

const hasScheme = (s: string) => /^[A-Za-z][A-Za-z0-9+.-]*:/.test(s);

/** resolveHref's answer for the field at `path`, its 400 saying which field. */
function resolved(base: string, href: string, path: string): string {
  let out: string;
  try {
    out = resolveHref(base, href);
  } catch (e) {
    throw badRequest(`${path}: ${(e as Error).message}`);
  }
  if (out.length > MAX_HREF_LENGTH) throw badRequest(`${path} is more than ${MAX_HREF_LENGTH} characters resolved`);
  return out;
}

/** The non-empty href at `path` + "href", without control characters (which would reach logs). */
function hrefField(o: Record<string, unknown>, path: string, at: string): string {
  const href = stringField(o, "href", path, at);
  if (hasControlCharacter(href)) throw badRequest(`${at}${path}href holds a control character`);
  return href;
}

// ---------------------------------------------------------------------------------------------
// Choosing assets and naming their bands for a request.

/** The Item's assets chosen by `assets=`, in the order given: 400 when none are given, a key repeats or the Item lacks one. */
export function selectAssets(item: StacItem, keys: readonly string[] | undefined): { key: string; href: string }[] {
  if (keys === undefined || keys.length === 0) throw badRequest("a STAC source needs assets=… (the asset keys to read, such as assets=B04,B03,B02)");
  const seen = new Set<string>();
  return keys.map((key) => {
    if (seen.has(key)) throw badRequest(`assets names ${quoted(key)} twice`);
    seen.add(key);
    if (!Object.hasOwn(item.assets, key)) throw badRequest(`item ${quoted(item.id)} has no asset ${quoted(key)}`);
    return { key, href: item.assets[key].href };
  });
}

/** A band a request reads: its name in expressions, its asset, and its one-based band in that asset's file. */
export interface AssetBand {
  name: string;
  key: string;
  href: string;
  band: number;
}

/**
 * The bands `assets=` (and `asset_bidx`, an asset key → its one-based bands) select, in order,
 * with the names expressions call them by:
 * - a single-band asset (the Item says one band, or says nothing and `asset_bidx` does not name
 *   it) is one band named by its key: `B04`;
 * - any other asset's bands are `{key}_b1`, `{key}_b2`… (its `asset_bidx` bands, else all the
 *   Item says it has): `visual_b1`.
 * 400 for a band past the Item's count, an `asset_bidx` of an asset not selected, a band listed
 * twice, or two bands of one name.
 */
export function assetBandNames(item: StacItem, keys: readonly string[] | undefined, assetBidx: Readonly<Record<string, readonly number[]>> = {}): AssetBand[] {
  const selected = selectAssets(item, keys);
  for (const key of Object.keys(assetBidx)) {
    if (!selected.some((asset) => asset.key === key)) throw badRequest(`asset_bidx names ${quoted(key)}, which assets= does not select`);
  }
  const names = new Set<string>();
  return selected.flatMap(({ key, href }) => {
    const count = item.assets[key].bands;
    const bidx = Object.hasOwn(assetBidx, key) ? assetBidx[key] : undefined;
    const bands = bidx ?? Array.from({ length: count ?? 1 }, (_, i) => i + 1);
    const single = bidx === undefined ? (count ?? 1) === 1 : count === 1;
    return checkedBands(bands, count, key).map((band) => {
      const name = single ? key : `${key}_b${band}`;
      if (names.has(name)) throw badRequest(`band name ${quoted(name)} is given by two assets`);
      names.add(name);
      return { name, key, href, band };
    });
  });
}

function checkedBands(bands: readonly number[], count: number | undefined, key: string): readonly number[] {
  if (bands.length === 0) throw badRequest(`asset_bidx for ${quoted(key)} lists no band`);
  bands.forEach((band, i) => {
    if (!Number.isInteger(band) || band < 1 || (count !== undefined && band > count)) {
      throw badRequest(`asset_bidx for ${quoted(key)}: band ${band} is not one of the asset's bands (1–${count ?? "…"})`);
    }
    if (bands.indexOf(band) !== i) throw badRequest(`asset_bidx for ${quoted(key)} lists band ${band} twice`);
  });
  return bands;
}

// ---------------------------------------------------------------------------------------------
// Reading fields.

function stringField(o: Record<string, unknown>, name: string, path: string, at: string): string {
  const value = field(o, name);
  if (typeof value !== "string") throw badRequest(`${at}${path}${name} must be a string`);
  if (value === "") throw badRequest(`${at}${path}${name} is empty`);
  return value;
}

/** `.key` for a short plain name, `["a b"]` (cut short) for any other, as a JSON path writes a member. */
const member = (key: string) => (/^[A-Za-z_][A-Za-z0-9_]{0,39}$/.test(key) ? `.${key}` : `[${quoted(key)}]`);

