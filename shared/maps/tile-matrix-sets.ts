// The OGC Two Dimensional Tile Matrix Sets Tessera tiles in: the standard's registry (WebMercatorQuad,
// WorldCRS84Quad, WorldMercatorWGS84Quad, the 60 UTM quads, the polar UPS quads, European LAEA,
// Canadian LCC) and LINZ's NZTM2000Quad, from the documents in tile-matrix-sets/, bundled at build
// time; plus any an operator adds (addTileMatrixSets) before serving. A tile here is the very tile
// every client and GDAL compute from the same document.
import { badRequest, notFound } from "../errors";
import { readTileMatrixSet, TileMatrixSetError, type TileMatrix, type TileMatrixSet } from "./tile-matrix-set-document";
import { REGISTRY_DOCUMENTS } from "./tile-matrix-sets/registry";

export type { TileMatrix, TileMatrixSet } from "./tile-matrix-set-document";

const sets = new Map<string, TileMatrixSet>();

/** Every set, the registry's first, in the order they were added. */
export const TILE_MATRIX_SETS: ReadonlyMap<string, TileMatrixSet> = sets;

/** A document and where it comes from (a file, an entry of one), as an error names it. */
export interface PlacedDocument {
  document: unknown;
  where: string;
}

/**
 * The sets `documents` define, checked as the registry's are and against the sets there are:
 * a document that is not a valid set, or whose id is already taken, throws TileMatrixSetError
 * naming where it comes from.
 */
export function checkTileMatrixSets(documents: PlacedDocument[]): TileMatrixSet[] {
  const read = documents.map(({ document, where }) => {
    try {
      return readTileMatrixSet(document);
    } catch (e) {
      throw new TileMatrixSetError(`${where}: ${(e as Error).message}`);
    }
  });
  const ids = read.map((s) => s.id);
  read.forEach((s, i) => {
    if (sets.has(s.id) || ids.indexOf(s.id) !== i) throw new TileMatrixSetError(`${documents[i].where}: id "${s.id}" is already a tile matrix set's`);
  });
  return read;
}

/** Adds the sets `documents` define (checkTileMatrixSets), all or none. */
export function addTileMatrixSets(documents: PlacedDocument[]): TileMatrixSet[] {
  const added = checkTileMatrixSets(documents);
  for (const s of added) sets.set(s.id, s);
  return added;
}

/** The documents a JSON file holds: one document, or an array of them (each named `{where}[i]`). */
export const documentsIn = (json: unknown, where: string): PlacedDocument[] =>
  Array.isArray(json) ? json.map((document, i) => ({ document, where: `${where}[${i}]` })) : [{ document: json, where }];

addTileMatrixSets(documentsIn(REGISTRY_DOCUMENTS, "the registry"));

export function tileMatrixSet(id: string): TileMatrixSet {
  const tms = sets.get(id);
  if (!tms) throw notFound(`unknown tile matrix set "${id.slice(0, 64)}"; see /tileMatrixSets for the known ones (WebMercatorQuad, WorldCRS84Quad, …)`);
  return tms;
}

/** The set's matrix at zoom `z`, or undefined when it has none there. */
export function tileMatrix(tms: TileMatrixSet, z: number): TileMatrix | undefined {
  return Number.isInteger(z) ? tms.tileMatrices[z - tms.tileMatrices[0].zoom] : undefined;
}

/** The set's first and last zooms. */
export const zoomRange = (tms: TileMatrixSet): [number, number] => [tms.tileMatrices[0].zoom, tms.tileMatrices[tms.tileMatrices.length - 1].zoom];

/**
 * The bounds of tile (z, x, y), [minX, minY, maxX, maxY] in the set's CRS (x first); 400 for a
 * tile outside the matrix (a client's arithmetic gone wrong, or a crawler guessing).
 */
export function tileBounds(tms: TileMatrixSet, z: number, x: number, y: number): [number, number, number, number] {
  const matrix = tileMatrix(tms, z);
  if (!matrix) throw badRequest(`zoom ${z} is outside ${tms.id} (${zoomRange(tms).join(" to ")})`);
  if (!Number.isInteger(x) || !Number.isInteger(y) || x < 0 || y < 0 || x >= matrix.matrixWidth || y >= matrix.matrixHeight) {
    throw badRequest(`tile ${z}/${x}/${y} is outside ${tms.id}'s ${matrix.matrixWidth}×${matrix.matrixHeight} matrix at zoom ${z}`);
  }
  const [width, height] = tileSpan(matrix);
  const [left, top] = matrix.origin;
  return [left + x * width, top - (y + 1) * height, left + (x + 1) * width, top - y * height];
}

/** A tile's width and height in CRS units. */
export const tileSpan = (m: TileMatrix): [number, number] => [m.cellSize * m.tileWidth, m.cellSize * m.tileHeight];

/** The columns and rows of `m` ([first, last] each) whose tiles overlap `bounds` (x first); a tile that only touches it does not. */
export function tilesCovering(m: TileMatrix, bounds: readonly number[]): { cols: [number, number]; rows: [number, number] } {
  const [width, height] = tileSpan(m);
  const [left, top] = m.origin;
  const [minX, minY, maxX, maxY] = bounds;
  const clamp = (i: number, size: number) => Math.min(Math.max(i, 0), size - 1);
  return {
    cols: [clamp(Math.floor((minX - left) / width), m.matrixWidth), clamp(Math.ceil((maxX - left) / width) - 1, m.matrixWidth)],
    rows: [clamp(Math.floor((top - maxY) / height), m.matrixHeight), clamp(Math.ceil((top - minY) / height) - 1, m.matrixHeight)],
  };
}

/** The column and row of `m` whose tile holds point (x, y); undefined outside the matrix (or for NaN). */
export function tileAt(m: TileMatrix, x: number, y: number): { x: number; y: number } | undefined {
  const [width, height] = tileSpan(m);
  const column = Math.floor((x - m.origin[0]) / width);
  const row = Math.floor((m.origin[1] - y) / height);
  return column >= 0 && row >= 0 && column < m.matrixWidth && row < m.matrixHeight ? { x: column, y: row } : undefined;
}

/** The sets every web map knows: a source's documents always link to its tiles on these. */
const WEB_SETS = ["WebMercatorQuad", "WorldCRS84Quad"];

/**
 * The sets info.json and the manifest link a source's TileJSON on: of those it lies on, the web
 * maps' two and those in its own CRS (a UTM 33N scan on UTM33WGS84Quad). It lies on many more
 * (every UTM zone, say); /tileMatrixSets lists them, and their routes answer all the same.
 */
export function linkedSets(georeference: { crs: string; tiling: Record<string, unknown> } | undefined): string[] {
  if (!georeference) return [];
  return [...sets.values()].filter((s) => georeference.tiling[s.id] && (WEB_SETS.includes(s.id) || s.crsName === georeference.crs)).map((s) => s.id);
}

/**
 * The WebMercatorQuad zoom at or above matrix `z` of `tms` in scale (its scale denominator, which
 * the standard ties to ground size whatever the CRS's units): how a tile of another set compares
 * with a mosaic's quadkey zooms, written on WebMercatorQuad. Rounded down, so a mosaic tile's
 * estimated asset count is never below the index's.
 */
export function webMercatorZoom(tms: TileMatrixSet, z: number): number {
  if (tms.id === "WebMercatorQuad") return z;
  const web = tileMatrixSet("WebMercatorQuad").tileMatrices[0].scaleDenominator;
  return Math.max(0, Math.floor(Math.log2(web / tileMatrix(tms, z)!.scaleDenominator) + 1e-6));
}
