// An OGC Two Dimensional Tile Matrix Set 2.0 JSON document read into the grid Tessera tiles on:
// the registry's documents (tile-matrix-sets/) and an operator's own go through the same checks.
// The one place axis order is dealt with: a document writes its point of origin and bounding box
// in its CRS's axis order (northing first for EPSG:3035 or EPSG:2193, latitude first for
// EPSG:4326), as its orderedAxes say; everything after this file has x (easting, longitude)
// first, as proj4, gdalwarp's -te and the warp take them.
import { field, isObject } from "./json-fields";

/** One zoom's grid, x first: `origin` is its top-left corner. */
export interface TileMatrix {
  /** The zoom: the matrix's id, a whole number, as tile URLs name it. */
  zoom: number;
  scaleDenominator: number;
  /** CRS units a pixel. */
  cellSize: number;
  origin: [number, number];
  tileWidth: number;
  tileHeight: number;
  matrixWidth: number;
  matrixHeight: number;
}

export interface TileMatrixSet {
  id: string;
  title: string;
  uri?: string;
  /** The document's CRS URI, as gdalwarp's -t_srs takes it. */
  crs: string;
  /** "EPSG:{code}", the CRS the bundled EPSG tables resolve (CRS84 is EPSG:4326 with longitude first). */
  crsName: string;
  /** Whether the CRS's first axis is its northing or latitude: how WMTS writes a corner. */
  northingFirst: boolean;
  /** Where the set's tiles are, [minX, minY, maxX, maxY]: its bounding box, else its first matrix's. */
  extent: [number, number, number, number];
  /** Its matrices, one a zoom from the first to the last, in order; their cells shrink. */
  tileMatrices: TileMatrix[];
  /** The document as written, served at /tileMatrixSets/{id}. */
  document: Record<string, unknown>;
}

/** Tessera renders 256-pixel tiles (512 at @2x): a set of other tiles is refused. */
export const TILE_SIZE = 256;
/** Ids name a set in URLs and WMTS identifiers: letters, digits, "_", "-" and ".". */
const ID = /^[A-Za-z][A-Za-z0-9_.-]{0,63}$/;
/** Zooms a set may have (the registry's deepest reach 25). */
const MAX_ZOOM = 30;
/** Tiles a side a matrix may have: within 2^31, so that tile arithmetic stays exact. */
const MAX_MATRIX = 2 ** 31;

/** A document's mistake, naming the field: the decoder stops its start with it, the edge's build fails on it. */
export class TileMatrixSetError extends Error {}

const fail = (message: string): never => {
  throw new TileMatrixSetError(message);
};

/** The set `doc` defines; throws TileMatrixSetError naming the first field that is wrong. */
export function readTileMatrixSet(doc: unknown): TileMatrixSet {
  if (!isObject(doc)) return fail("the document must be a JSON object");
  const id = text(doc, "id");
  if (!ID.test(id)) fail(`id ${JSON.stringify(id)} must be 1 to 64 letters, digits, "_", "-" or "." (it names the set in URLs), starting with a letter`);
  const crs = crsUri(field(doc, "crs"));
  const crsName = epsgName(crs) ?? fail(`crs ${JSON.stringify(crs)} is not an EPSG or OGC CRS84 URI`);
  const northingFirst = axesNorthingFirst(field(doc, "orderedAxes"));
  if (field(doc, "variableMatrixWidths") !== undefined) fail("variableMatrixWidths is not supported");
  const list = field(doc, "tileMatrices");
  if (!Array.isArray(list) || list.length === 0) return fail("tileMatrices must be a non-empty array");
  const tileMatrices = list.map((m, i) => readMatrix(m, `tileMatrices[${i}]`, northingFirst));
  tileMatrices.forEach((m, i) => i > 0 && checkFollows(m, tileMatrices[i - 1], i));
  const box = field(doc, "boundingBox");
  const extent = box === undefined ? matrixExtent(tileMatrices[0]) : boxExtent(box, northingFirst);
  const uri = field(doc, "uri");
  const title = field(doc, "title");
  return {
    id,
    title: typeof title === "string" ? title : id,
    ...(typeof uri === "string" && { uri }),
    crs,
    crsName,
    northingFirst,
    extent,
    tileMatrices,
    document: doc,
  };
}

/** "EPSG:{code}" for an EPSG URI or URN (CRS84's URIs: EPSG:4326), else undefined. */
export function epsgName(uri: string): string | undefined {
  if (/^(https?:\/\/www\.opengis\.net\/def\/crs\/OGC\/1\.3\/CRS84|urn:ogc:def:crs:OGC:(1\.3|2):(CRS)?84|OGC:CRS84)$/i.test(uri)) return "EPSG:4326";
  const code = /^(?:https?:\/\/www\.opengis\.net\/def\/crs\/EPSG\/[\d.]+\/|urn:ogc:def:crs:EPSG:[\d.]*:|EPSG:)(\d{1,6})$/i.exec(uri)?.[1];
  return code && Number(code) > 0 ? `EPSG:${Number(code)}` : undefined;
}

/** TMS 2.0's crs is a URI, or an object with one (a WKT-only CRS has no code to resolve). */
function crsUri(crs: unknown): string {
  if (typeof crs === "string") return crs;
  if (isObject(crs) && typeof field(crs, "uri") === "string") return field(crs, "uri") as string;
  return fail("crs must be a CRS URI (http://www.opengis.net/def/crs/EPSG/0/{code}) or an object with one as uri");
}

/** Whether the first of the two axes is a northing or latitude (the CRS's y). */
function axesNorthingFirst(axes: unknown): boolean {
  if (!Array.isArray(axes) || axes.length !== 2 || !axes.every((a) => typeof a === "string")) {
    return fail('orderedAxes must be two axis names, such as ["E", "N"] or ["Lat", "Lon"]: they say which coordinate of pointOfOrigin comes first');
  }
  return /^(y|n|north|northing|lat|latitude)$/i.test(axes[0]);
}

function readMatrix(m: unknown, where: string, northingFirst: boolean): TileMatrix {
  if (!isObject(m)) return fail(`${where} must be an object`);
  const id = text(m, "id", where);
  if (!/^\d{1,2}$/.test(id) || Number(id) > MAX_ZOOM) fail(`${where}.id ${JSON.stringify(id)} must be a zoom from 0 to ${MAX_ZOOM} (tile URLs name the matrix by it)`);
  const corner = field(m, "cornerOfOrigin");
  if (corner !== undefined && corner !== "topLeft") fail(`${where}.cornerOfOrigin must be "topLeft" (the only corner Tessera tiles from)`);
  const tileWidth = count(m, "tileWidth", where, MAX_MATRIX);
  const tileHeight = count(m, "tileHeight", where, MAX_MATRIX);
  if (tileWidth !== TILE_SIZE || tileHeight !== TILE_SIZE) fail(`${where}: tiles must be ${TILE_SIZE} × ${TILE_SIZE} pixels (Tessera's tile size)`);
  return {
    zoom: Number(id),
    scaleDenominator: positive(m, "scaleDenominator", where),
    cellSize: positive(m, "cellSize", where),
    origin: xFirst(point(field(m, "pointOfOrigin"), `${where}.pointOfOrigin`), northingFirst),
    tileWidth,
    tileHeight,
    matrixWidth: count(m, "matrixWidth", where, MAX_MATRIX),
    matrixHeight: count(m, "matrixHeight", where, MAX_MATRIX),
  };
}

/** Zooms are consecutive and each matrix's cells are smaller than the one before (the zoom choice reads them so). */
function checkFollows(m: TileMatrix, previous: TileMatrix, i: number): void {
  if (m.zoom !== previous.zoom + 1) fail(`tileMatrices[${i}].id must be ${previous.zoom + 1}: the zooms are consecutive, in order`);
  if (!(m.cellSize < previous.cellSize)) fail(`tileMatrices[${i}].cellSize must be smaller than the matrix before's`);
}

function boxExtent(box: unknown, northingFirst: boolean): TileMatrixSet["extent"] {
  if (!isObject(box)) return fail("boundingBox must be an object with lowerLeft and upperRight");
  const [x0, y0] = xFirst(point(field(box, "lowerLeft"), "boundingBox.lowerLeft"), northingFirst);
  const [x1, y1] = xFirst(point(field(box, "upperRight"), "boundingBox.upperRight"), northingFirst);
  if (!(x0 < x1 && y0 < y1)) fail("boundingBox.lowerLeft must be below and left of upperRight");
  return [x0, y0, x1, y1];
}

function matrixExtent(m: TileMatrix): TileMatrixSet["extent"] {
  const [left, top] = m.origin;
  return [left, top - m.matrixHeight * m.tileHeight * m.cellSize, left + m.matrixWidth * m.tileWidth * m.cellSize, top];
}

const xFirst = ([a, b]: [number, number], northingFirst: boolean): [number, number] => (northingFirst ? [b, a] : [a, b]);

function point(p: unknown, where: string): [number, number] {
  if (!Array.isArray(p) || p.length !== 2 || !p.every((v) => typeof v === "number" && Number.isFinite(v))) return fail(`${where} must be two finite numbers`);
  return [p[0], p[1]];
}

function text(o: Record<string, unknown>, name: string, where = ""): string {
  const v = field(o, name);
  return typeof v === "string" ? v : fail(`${where ? `${where}.` : ""}${name} must be a string`);
}

function positive(o: Record<string, unknown>, name: string, where: string): number {
  const v = field(o, name);
  return typeof v === "number" && Number.isFinite(v) && v > 0 ? v : fail(`${where}.${name} must be a finite number above 0`);
}

function count(o: Record<string, unknown>, name: string, where: string, max: number): number {
  const v = field(o, name);
  return typeof v === "number" && Number.isInteger(v) && v >= 1 && v <= max ? v : fail(`${where}.${name} must be a whole number from 1 to ${max}`);
}
