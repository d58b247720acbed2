// GeoJSON areas posted by map clients (POST /statistics, POST /feature): a Feature or a
// FeatureCollection of Polygon and MultiPolygon features, as titiler takes them. The edge
// reads, validates and canonicalises the body once; the decoder receives only the canonical
// text, and the SHA-256 of that text names the answer (cache key, coalescing, signed path).
//
// Validation is bounded before it walks anything: the body's bytes, the features, and the
// vertices in all (a ring's length is read before its positions), so a million-vertex polygon
// is refused in microseconds. Self-intersecting rings are not refused: the decoder fills each
// polygon's rings by the even-odd rule at pixel centres, as GDAL's rasterizer (gdal_rasterize,
// a -cutline's mask) does, so a bow-tie covers its two lobes; a MultiPolygon is its parts' union.
import { badRequest, HttpError } from "../errors";

/** The largest body a feature route reads: 1 MiB holds ~50 000 vertices at six decimals. */
export const MAX_FEATURE_BODY_BYTES = 1024 * 1024;
/** Features one request may name: each is an area read of its own. */
export const MAX_FEATURES = 256;
/** Vertices in all features together: what the mask's rasterization grows with. */
export const MAX_FEATURE_VERTICES = 50_000;
/** Nesting allowed inside a feature's `properties` (they are echoed back, canonically). */
const MAX_PROPERTY_DEPTH = 32;

/** [x, y] (lon, lat in WGS84), or with a third number (kept, unused). */
export type Position = number[];
/** A closed ring: first and last positions equal, at least four positions. */
export type Ring = Position[];
export type Geometry = { type: "Polygon"; coordinates: Ring[] } | { type: "MultiPolygon"; coordinates: Ring[][] };

export interface Feature {
  type: "Feature";
  id?: string | number;
  geometry: Geometry;
  /** Echoed back in the answer (with what the route adds); null when the client sent none. */
  properties: Record<string, unknown> | null;
}

/** A parsed body: one Feature, or a FeatureCollection of them (the answer takes the same shape). */
export interface FeatureBody {
  kind: "Feature" | "FeatureCollection";
  features: Feature[];
  /** The canonical JSON text: the same geometry and properties in any key order or spacing give the same text. */
  canonical: string;
  /** SHA-256 hex of `canonical` (UTF-8). */
  digest: string;
  /** Vertices in all, for the mask's cost. */
  vertices: number;
}

/**
 * Parses a posted body: 413 past MAX_FEATURE_BODY_BYTES (UTF-8), 400 for anything that is not
 * a valid Feature or FeatureCollection of polygons within the limits, the message naming where.
 */
export async function parseFeatureBody(text: string): Promise<FeatureBody> {
  const bytes = new TextEncoder().encode(text);
  if (bytes.byteLength > MAX_FEATURE_BODY_BYTES) throw tooLarge(bytes.byteLength);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw badRequest("the body is not JSON: send a GeoJSON Feature or FeatureCollection");
  }
  const { kind, features } = featuresOf(json);
  const canonical = canonicalText(kind, features);
  return { kind, features, canonical, digest: await sha256Hex(canonical), vertices: features.reduce((n, f) => n + vertexCount(f.geometry), 0) };
}

export const tooLarge = (bytes: number) =>
  new HttpError("too_large", `the body is ${bytes} bytes, more than ${MAX_FEATURE_BODY_BYTES}: send fewer or simpler features`);

/** The features of a parsed JSON value; 400 naming the first problem. */
export function featuresOf(json: unknown): { kind: FeatureBody["kind"]; features: Feature[] } {
  if (!isObject(json)) throw badRequest("the body must be a GeoJSON Feature or FeatureCollection object");
  const budget = { vertices: MAX_FEATURE_VERTICES };
  if (json.type === "Feature") return { kind: "Feature", features: [feature(json, "feature", budget)] };
  if (json.type !== "FeatureCollection") throw badRequest(`the body's type must be Feature or FeatureCollection, not ${describe(json.type)}`);
  const list = json.features;
  if (!Array.isArray(list)) throw badRequest("features must be an array of Features");
  if (list.length === 0) throw badRequest("features is empty: send at least one Feature");
  if (list.length > MAX_FEATURES) throw badRequest(`features has ${list.length} Features, more than ${MAX_FEATURES}`);
  return { kind: "FeatureCollection", features: list.map((f, i) => feature(f, `features[${i}]`, budget)) };
}

function feature(value: unknown, where: string, budget: { vertices: number }): Feature {
  if (!isObject(value) || value.type !== "Feature") throw badRequest(`${where} must be a GeoJSON Feature`);
  const { id, properties } = value;
  if (id !== undefined && typeof id !== "string" && !(typeof id === "number" && Number.isFinite(id))) throw badRequest(`${where}.id must be a string or a number`);
  if (properties !== undefined && properties !== null && !isObject(properties)) throw badRequest(`${where}.properties must be an object or null`);
  if (properties) checkDepth(properties, `${where}.properties`, 1);
  return {
    type: "Feature",
    ...(id !== undefined && { id }),
    geometry: geometry(value.geometry, `${where}.geometry`, budget),
    properties: (properties as Record<string, unknown> | null | undefined) ?? null,
  };
}

function geometry(value: unknown, where: string, budget: { vertices: number }): Geometry {
  if (!isObject(value)) throw badRequest(`${where} must be a Polygon or MultiPolygon`);
  const { type, coordinates } = value;
  if (type === "Polygon") return { type, coordinates: polygon(coordinates, `${where}.coordinates`, budget) };
  if (type === "MultiPolygon") {
    if (!Array.isArray(coordinates) || coordinates.length === 0) throw badRequest(`${where}.coordinates must be a non-empty array of polygons`);
    return { type, coordinates: coordinates.map((p, i) => polygon(p, `${where}.coordinates[${i}]`, budget)) };
  }
  throw badRequest(`${where}.type must be Polygon or MultiPolygon, not ${describe(type)}: an area needs one`);
}

function polygon(value: unknown, where: string, budget: { vertices: number }): Ring[] {
  if (!Array.isArray(value) || value.length === 0) throw badRequest(`${where} must be a non-empty array of rings`);
  return value.map((ring, i) => linearRing(ring, `${where}[${i}]`, budget));
}

/** A ring's length is charged before any position is read: a huge ring costs nothing to refuse. */
function linearRing(value: unknown, where: string, budget: { vertices: number }): Ring {
  if (!Array.isArray(value)) throw badRequest(`${where} must be an array of positions`);
  budget.vertices -= value.length;
  if (budget.vertices < 0) throw badRequest(`the features have more than ${MAX_FEATURE_VERTICES} vertices in all; simplify them`);
  if (value.length < 4) throw badRequest(`${where} has ${value.length} positions; a closed ring has at least 4`);
  const ring = value.map((p, i) => position(p, `${where}[${i}]`));
  const first = ring[0];
  const last = ring[ring.length - 1];
  if (first[0] !== last[0] || first[1] !== last[1]) throw badRequest(`${where} is not closed: its last position must equal its first`);
  return ring;
}

/** Longitude and latitude (WGS84, GeoJSON's CRS), finite and in range. */
function position(value: unknown, where: string): Position {
  if (!Array.isArray(value) || value.length < 2 || value.length > 3) throw badRequest(`${where} must be a position [longitude, latitude]`);
  if (!value.every((n) => typeof n === "number" && Number.isFinite(n))) throw badRequest(`${where} must hold finite numbers`);
  const [lon, lat] = value as number[];
  if (lon < -180 || lon > 180) throw badRequest(`${where} has longitude ${lon}, outside -180..180`);
  if (lat < -90 || lat > 90) throw badRequest(`${where} has latitude ${lat}, outside -90..90`);
  return value as number[];
}

function checkDepth(value: unknown, where: string, depth: number): void {
  if (depth > MAX_PROPERTY_DEPTH) throw badRequest(`${where} nests deeper than ${MAX_PROPERTY_DEPTH} levels`);
  if (Array.isArray(value)) for (const item of value) checkDepth(item, where, depth + 1);
  else if (isObject(value)) for (const item of Object.values(value)) checkDepth(item, where, depth + 1);
}

/** The geometry's polygons, each its rings (outer first). */
export const polygonsOf = (g: Geometry): Ring[][] => (g.type === "Polygon" ? [g.coordinates] : g.coordinates);

/** Every ring of a geometry, whichever polygon it belongs to. */
export const ringsOf = (g: Geometry): Ring[] => polygonsOf(g).flat();

export const vertexCount = (g: Geometry) => ringsOf(g).reduce((n, r) => n + r.length, 0);

/** The geometry's bounds [minX, minY, maxX, maxY]. */
export function boundsOf(g: Geometry): [number, number, number, number] {
  let [x0, y0, x1, y1] = [Infinity, Infinity, -Infinity, -Infinity];
  for (const ring of ringsOf(g)) {
    for (const [x, y] of ring) {
      x0 = Math.min(x0, x);
      y0 = Math.min(y0, y);
      x1 = Math.max(x1, x);
      y1 = Math.max(y1, y);
    }
  }
  return [x0, y0, x1, y1];
}

/** The box around every geometry, at least 1e-9° wide and tall: a feature along a parallel or a meridian still has an area to read. */
export function boundsOfAll(geometries: Geometry[]): [number, number, number, number] {
  const all = geometries.map(boundsOf);
  const [x0, y0] = [Math.min(...all.map((b) => b[0])), Math.min(...all.map((b) => b[1]))];
  return [x0, y0, Math.max(x0 + 1e-9, ...all.map((b) => b[2])), Math.max(y0 + 1e-9, ...all.map((b) => b[3]))];
}

/** The body as one text: members in one order, objects' keys sorted, numbers as JavaScript writes them. */
function canonicalText(kind: FeatureBody["kind"], features: Feature[]): string {
  if (kind === "Feature") return sortedJson(features[0]);
  return sortedJson({ type: "FeatureCollection", features });
}

/** JSON with every object's keys in sorted order (depth is bounded by the checks above). */
export function sortedJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(sortedJson).join(",")}]`;
  if (isObject(value)) {
    const keys = Object.keys(value).filter((k) => value[k] !== undefined).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${sortedJson(value[k])}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/** SHA-256 of the text's UTF-8 bytes, in hex (WebCrypto: workerd and Node alike). */
export async function sha256Hex(text: string | Uint8Array): Promise<string> {
  const bytes = typeof text === "string" ? new TextEncoder().encode(text) : text;
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** The answer's body: the features as sent (canonically), each with its properties extended by `add(i)`. */
export function answerBody(body: Pick<FeatureBody, "kind" | "features">, add: (index: number) => Record<string, unknown>): unknown {
  const features = body.features.map((f, i) => ({ ...f, properties: { ...(f.properties ?? {}), ...add(i) } }));
  return body.kind === "Feature" ? features[0] : { type: "FeatureCollection", features };
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

const describe = (v: unknown) => (typeof v === "string" ? JSON.stringify(v.slice(0, 40)) : typeof v);
