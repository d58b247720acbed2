// The edge ↔ decoder protocol: paths, the info document, and request signing.
// Runs in workerd and Node alike (WebCrypto only, no Node built-ins).

import { HttpError } from "./errors";
import type { Codec } from "./work";
import type { Restriction } from "./access";
import type { Description, LanguageMap } from "./description";

/** Where a georeferenced source lies: its CRS and the full image's bounds in it. */
export interface Georeference {
  /** "EPSG:<code>" as the source's GeoKeys name it, or the PROJ string of a user-defined CRS. */
  crs: string;
  /** [minX, minY, maxX, maxY] of the full image, in the CRS's units and axis order x, y. */
  bbox: [number, number, number, number];
  /**
   * The image's bounds in longitude and latitude (WGS 84): [west, south, east, north]; across
   * ±180°, unwrapped (west within −180…180, east past 180: documents give it west > east); around
   * a pole, every longitude up to ±90°.
   */
  lonLatBounds: [number, number, number, number];
  /** How the source lies on each tile matrix set it can be tiled in, by set id. */
  tiling: Record<string, SourceTiling>;
  /** The source goes past longitude ±180°, or round a pole: its bounds are unwrapped, and it has no control points. */
  crossesAntimeridian?: true;
  /**
   * A GRID_SIDE² grid of full-resolution pixel positions, corners and edges included, with their
   * longitude and latitude: the edge has no proj4, and the manifest's georeference annotation is
   * made of them. Absent when they cannot all be placed (the decoder logs why).
   */
  controlPoints?: ControlPoint[];
  /** The image's outline in longitude, latitude, clockwise from the top-left corner in pixels, FOOTPRINT_PER_SIDE points a side; absent with controlPoints. */
  footprint?: [number, number][];
}

/** A ground control point: a pixel position (x, y from the image's top-left corner) and its [longitude, latitude]. */
export interface ControlPoint {
  resource: [number, number];
  geo: [number, number];
}

/** Control points per side of the grid: 5² points, fixed, so a hostile file cannot swell a SourceInfo. */
export const GRID_SIDE = 5;
/** Outline points per side of the image, so a UTM or polar footprint follows its curved edges. */
export const FOOTPRINT_PER_SIDE = 8;

/** A georeferenced source on one tile matrix set: what TileJSON, WMTS and cost estimates need. */
export interface SourceTiling {
  /**
   * The image's bounds in the set's CRS, [minX, minY, maxX, maxY], within the set's; across ±180°
   * on a set that goes round the Earth, maxX passes the set's east edge (the part past it is on
   * the set's far west), and around a pole the bounds span the set's width.
   */
  bounds: [number, number, number, number];
  /** Zoom at which the smallest stored level fills tiles at its own resolution (TileJSON minzoom). */
  minZoom: number;
  /** Zoom whose cell size first matches the full resolution (TileJSON maxzoom). */
  maxZoom: number;
  /** Full-resolution pixel size in the set's CRS units (as gdalwarp would choose for it). */
  resolution: number;
}

/** What the decoder knows about one opened (pinned) source; the edge builds info.json from it. */
export interface SourceInfo {
  id: string;
  /** Opaque snapshot identity: S3 VersionId, or a local file's size+mtime validator. */
  version: string;
  width: number;
  height: number;
  tileWidth: number;
  tileHeight: number;
  /** Every stored resolution, full size first, then overviews in decreasing size. */
  levels: { width: number; height: number }[];
  /** Size in bytes of the source object. */
  bytes: number;
  /** The largest output area the decoder renders of it within its work budget (the edge bounds it by work too). */
  maxArea?: number;
  /** Channels a render of it has (1 grey … 4 RGBA); absent for a mosaic. */
  channels?: number;
  /** How its blocks are stored, for the cost of reading them; absent for a mosaic. */
  codec?: Codec;
  /** Absent for a source that is not georeferenced (or whose CRS no EPSG code names). */
  georeference?: Georeference;
  /** Present for a mosaic (MosaicJSON or STAC): a map only, no IIIF image. */
  mosaic?: MosaicSummary;
  /** Who may see it, from its catalog entry; absent: anyone. The edge enforces it. */
  access?: Restriction;
  /** What its publisher says of it for people (label, rights, metadata), from its catalog entry; absent: nothing. */
  description?: Description;
  /**
   * Its bands as the map /info route reports them (a COG's; absent for a mosaic, and in metadata
   * cached by a decoder older than the field: /info then answers what the rest tells).
   */
  bands?: BandInfo[];
  /** What marks a COG's pixels invalid, as rio-tiler names it; absent with `bands`. */
  nodataType?: "None" | "Nodata" | "Alpha" | "Mask";
}

/** One band of a COG, as GDAL describes it: a few short fields, so a SourceInfo stays small. */
export interface BandInfo {
  /** NumPy's name of the sample type: uint8, int16, float32… */
  dtype: string;
  /** The file's nodata value (GDAL_NODATA), "nan" for NaN; absent: none. */
  nodata?: number | "nan";
  scale: number;
  offset: number;
  /** GDAL's colour interpretation in lower case (red, green, blue, alpha, gray, undefined). */
  colorinterp: string;
  /** The band's description (GDAL metadata DESCRIPTION), at most 200 characters; "" when none. */
  description: string;
}

/**
 * One page of a catalog's image sources (no mosaics: they are maps only), in its order: by the
 * store key of each source's COG, `{id}.tif`. `next` is the last id of the page when more follow.
 */
export interface SourceListing {
  sources: { id: string; label?: LanguageMap }[];
  next?: string;
}

/** The most sources one listing page holds: it bounds the store calls and the page's size. */
export const MAX_SOURCE_PAGE = 100;

/** A mosaic's shape, as the edge needs it to cost a tile before any decode. */
export interface MosaicSummary {
  kind: "mosaic" | "stac";
  /** Distinct assets (MosaicJSON) or items (STAC) in all. */
  assets: number;
  /** The most assets one index quadkey lists (STAC: every item). */
  maxAssetsPerKey: number;
  /** The zoom the index's quadkeys are at (STAC: 0, one key for the world). */
  quadkeyZoom: number;
  /** How many quadkeys a MosaicJSON index lists (its /info's `quadkeys`); absent for STAC and in older cached metadata. */
  quadkeys?: number;
  /** A STAC source's first item's COG assets, by key, as its /info describes each (titiler's per-asset Info). */
  stacAssets?: Record<string, AssetDescription>;
}

/** What /info says of one COG: its levels, where it lies, its bands. */
export type AssetDescription = Pick<SourceInfo, "levels" | "bands" | "nodataType"> & { georeference: Pick<Georeference, "crs" | "bbox" | "tiling"> };

/** Every /file path starts so: transfers, not decodes, to the admission DO. */
export const DECODER_FILE_PREFIX = "/v1/file/";

/** Whether a decoder path decodes pixels (an image, a tile, an area, statistics, a point's values): what the admission DO coalesces. */
export const isDecodePath = (path: string) => DECODE_PREFIXES.some((prefix) => path.startsWith(prefix));
const DECODE_PREFIXES = ["/v1/image/", "/v1/tiles/", "/v1/areas/", "/v1/statistics/", "/v1/point/"];

/** The query parameter of a POST route's path that names its body: the SHA-256 (hex) of the canonical body. */
export const BODY_DIGEST_PARAM = "feature";

/** Decoder routes. The image path carries the canonical IIIF 3.0 parts of a resolved request. */
export const DECODER = {
  health: "/health",
  /** The current version's metadata, or that of `version`. */
  info: (id: string, version?: string) =>
    `/v1/info/${encodeURIComponent(id)}${version === undefined ? "" : `?version=${encodeURIComponent(version)}`}`,
  image: (id: string, canonical: string, version: string) =>
    `/v1/image/${encodeURIComponent(id)}/${canonical}?version=${encodeURIComponent(version)}`,
  /** A web-map tile; `canonical` is canonicalTile()'s `path` or `path?query`. */
  tile: (id: string, canonical: string, version: string) =>
    `/v1/tiles/${encodeURIComponent(id)}/${canonical}${canonical.includes("?") ? "&" : "?"}version=${encodeURIComponent(version)}`,
  /**
   * An area's statistics; `canonical` is `?{query}` or "" (canonicalStatistics), a POST's
   * naming its body's digest (BODY_DIGEST_PARAM).
   */
  statistics: (id: string, canonical: string, version: string) =>
    `/v1/statistics/${encodeURIComponent(id)}${canonical}${canonical.includes("?") ? "&" : "?"}version=${encodeURIComponent(version)}`,
  /** A crop or preview of a map; `canonical` is canonicalArea()'s. */
  area: (id: string, canonical: string, version: string) =>
    `/v1/areas/${encodeURIComponent(id)}/${canonical}${canonical.includes("?") ? "&" : "?"}version=${encodeURIComponent(version)}`,
  /** The values at a point; `canonical` is canonicalPoint()'s `{x},{y}` or `{x},{y}?query`. */
  point: (id: string, canonical: string, version: string) =>
    `/v1/point/${encodeURIComponent(id)}/${canonical}${canonical.includes("?") ? "&" : "?"}version=${encodeURIComponent(version)}`,
  /** A page of the catalog's image sources (SourceListing), after source `after` in the catalog's order. */
  sources: (after: string | undefined, limit: number) =>
    `/v1/sources?${after === undefined ? "" : `after=${encodeURIComponent(after)}&`}limit=${limit}`,
  /** A stored Raster Style document (`{prefix}{name}.style.json`): its text, once the schema accepts it. */
  style: (name: string) => `/v1/styles/${encodeURIComponent(name)}`,
  /** The source's stored bytes, unchanged. */
  file: (id: string, version: string) => `${DECODER_FILE_PREFIX}${encodeURIComponent(id)}?version=${encodeURIComponent(version)}`,
  /**
   * POST: forget every opened snapshot of the source; the next request opens the current one.
   * With `member`, forget that asset of the mosaic instead (invalidate_source(mosaic, member)).
   */
  invalidate: (id: string, member?: string) =>
    `/v1/invalidate/${encodeURIComponent(id)}${member === undefined ? "" : `?member=${encodeURIComponent(member)}`}`,
  /** POST: stop the I/O of the request with this REQUEST_ID_HEADER; its answer still ends it. */
  cancel: (requestId: string) => `/v1/cancel/${encodeURIComponent(requestId)}`,
};

/** Response header naming the snapshot an answer was made from. */
export const VERSION_HEADER = "x-tessera-version";
export const SIGNATURE_HEADER = "x-tessera-signature";
/**
 * Optional signed request headers: the limits the admission DO granted this request, which
 * replace the decoder's own defaults (its 30 s deadline, its work budget's refusal) instead of
 * stacking on them. The deadline is what is left of the DO's REQUEST_TIMEOUT, in ms; the memory
 * is the peak the DO admitted the decode with, in bytes.
 */
export const TIMEOUT_HEADER = "x-tessera-timeout-ms";

/**
 * The longest deadline a decoder sets, from a variable or TIMEOUT_HEADER: ten minutes is more
 * than any request deserves, and far below 2³¹ ms, past which Node's timers fire at once. The
 * edge's REQUEST_TIMEOUT is held to it, so it never signs a deadline a decoder refuses.
 */
export const MAX_DEADLINE_MS = 600_000;
export const GRANT_HEADER = "x-tessera-grant-bytes";
/** The work (units, ≈ ms of one core) the DO admitted the decode with: its partition's most. */
export const GRANT_WORK_HEADER = "x-tessera-grant-work";
/** The admission partition ("tile" or "full") the grant was taken from. */
export const GRANTED_PARTITION_HEADER = "x-tessera-granted-partition";
/**
 * On a decoder's 503: it is draining (shutting down) and did no work on the request, so the DO
 * sends the same request to another decoder.
 */
export const DRAINING_HEADER = "x-tessera-draining";
/**
 * On a decoder's 4xx: the refusal is about the edge's own signed headers (the signature, the
 * request id, a limit the decoder cannot read), not about the client's request. It is the
 * service's fault, so the DO answers it as a decoder fault (502), which nobody caches.
 */
export const SIGNED_HEADERS_REFUSED_HEADER = "x-tessera-signed-headers-refused";
/**
 * The id of one signed call, signed with it: a decoder takes each id once (a replay is refused),
 * and a later cancel names the forwarded request by it.
 */
export const REQUEST_ID_HEADER = "x-tessera-request-id";

/** The grant as sent: header values, absent (null or undefined) when not granted. */
export interface SignedLimits {
  timeoutMs?: string | null;
  grantBytes?: string | null;
  grantWork?: string | null;
  partition?: string | null;
  requestId?: string | null;
}
const NO_LIMITS: SignedLimits = {};

/** Each signed field's header, in signing order. */
const LIMIT_HEADERS: [keyof SignedLimits, string][] = [
  ["timeoutMs", TIMEOUT_HEADER],
  ["grantBytes", GRANT_HEADER],
  ["grantWork", GRANT_WORK_HEADER],
  ["partition", GRANTED_PARTITION_HEADER],
  ["requestId", REQUEST_ID_HEADER],
];

/** The headers that carry `limits` (sign them with the same values). */
export function limitHeaders(limits: SignedLimits): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [field, header] of LIMIT_HEADERS) {
    const value = limits[field];
    if (value !== null && value !== undefined) headers[header] = value;
  }
  return headers;
}

/** The signed fields of a received request, read from its headers. */
export function limitsFrom(header: (name: string) => string | null): SignedLimits {
  return Object.fromEntries(LIMIT_HEADERS.map(([field, name]) => [field, header(name)]));
}
/** How long a signature stays valid; bounds replay of a captured request. */
const SIGNATURE_TTL_MS = 60_000;
/**
 * How far a signer's clock may run ahead of its verifier's: an expiry up to this much past what a
 * signature made now would have is still taken. (A signer's clock behind only shortens the
 * signature's life, by as much.)
 */
const CLOCK_SKEW_MS = 10_000;
/** The longest a verifier takes a signature for: how long a decoder must remember its request id. */
export const SIGNATURE_LIFETIME_MS = SIGNATURE_TTL_MS + CLOCK_SKEW_MS;

const encoder = new TextEncoder();

/** Imported keys by secret: importing costs more than signing, and the secret rarely changes. */
const keys = new Map<string, ReturnType<typeof crypto.subtle.importKey>>();

function hmacKey(secret: string): ReturnType<typeof crypto.subtle.importKey> {
  let key = keys.get(secret);
  if (!key) {
    key = crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
    if (keys.size >= 8) keys.clear(); // a handful of secrets at most (rotation); never grows unbounded
    keys.set(secret, key);
    key.catch(() => keys.delete(secret));
  }
  return key;
}

/** Hex HMAC-SHA256 of `message`; a runtime may supply a faster one (the decoder uses node:crypto). */
export type Hmac = (secret: string, message: string) => Promise<string> | string;

async function hmac(secret: string, message: string): Promise<string> {
  const key = await hmacKey(secret);
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, encoder.encode(message)));
  return Array.from(mac, (b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * A decoder's name on the edge's /metrics: twelve hex digits of an HMAC of its URL under the
 * shared secret. The page may be open to anyone (METRICS_TOKEN unset), and must then name no
 * internal address; the decoder logs its own label at start, so an operator can tell which it is.
 */
export async function decoderLabel(secret: string, url: string): Promise<string> {
  return (await hmac(secret, `metrics label\n${url}`)).slice(0, 12);
}

// The limits are signed as sent, absent ones as "-": a changed, added or removed value fails. The
// grant of work, newer than the others, is signed after them and only when sent, so a decoder
// still verifies what the previous edge signed while a deploy rolls (decoders first).
const FIRST_LIMITS: (keyof SignedLimits)[] = ["timeoutMs", "grantBytes", "partition", "requestId"];
const signedText = (method: string, pathAndQuery: string, expires: number, limits: SignedLimits) =>
  [
    method,
    pathAndQuery,
    expires,
    ...FIRST_LIMITS.map((field) => limits[field] ?? "-"),
    ...(limits.grantWork == null ? [] : [`work=${limits.grantWork}`]),
  ].join("\n");

/** The signature header value for a request from the edge (or DO) to a decoder. */
export async function signRequest(
  secret: string,
  method: string,
  pathAndQuery: string,
  now = Date.now(),
  limits: SignedLimits = NO_LIMITS,
) {
  const expires = now + SIGNATURE_TTL_MS;
  return `${expires}.${await hmac(secret, signedText(method, pathAndQuery, expires, limits))}`;
}

/**
 * The headers of one signed call to a decoder: its signature, its limits, and its request id,
 * the limits' own or a fresh one. A decoder takes each id once, so a call sent again (a retry,
 * to the same decoder or the next) goes through here again.
 */
export async function signedHeaders(
  secret: string,
  method: string,
  pathAndQuery: string,
  limits: SignedLimits = NO_LIMITS,
  now = Date.now(),
): Promise<Record<string, string>> {
  const signed = { ...limits, requestId: limits.requestId ?? crypto.randomUUID() };
  return { [SIGNATURE_HEADER]: await signRequest(secret, method, pathAndQuery, now, signed), ...limitHeaders(signed) };
}

/**
 * The expiry of the header's signature, when it is a current signature of this method, path and
 * limits; 401 otherwise. Current: not expired, and expiring within SIGNATURE_LIFETIME_MS, so that
 * no signature, even one made with the secret by a clock far ahead, is taken for longer.
 */
export async function verifyRequest(
  secret: string,
  method: string,
  pathAndQuery: string,
  header: string | null,
  now = Date.now(),
  computeMac: Hmac = hmac,
  limits: SignedLimits = NO_LIMITS,
): Promise<number> {
  const [expiresText, mac] = (header ?? "").split(".");
  const expires = Number(expiresText);
  if (!mac || !Number.isFinite(expires) || expires < now) throw new HttpError("unauthorized", "missing or expired edge signature");
  if (expires > now + SIGNATURE_LIFETIME_MS) {
    throw new HttpError("unauthorized", `edge signature expires too far ahead (over ${SIGNATURE_LIFETIME_MS / 1000} s): is a clock wrong?`);
  }
  const expected = await computeMac(secret, signedText(method, pathAndQuery, expires, limits));
  if (!constantTimeEqual(mac, expected)) throw new HttpError("unauthorized", "bad edge signature");
  return expires;
}

/** Equal strings, in a time that does not depend on where they differ (only on their length). */
export function constantTimeEqual(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}
