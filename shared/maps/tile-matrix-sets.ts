// The OGC Two Dimensional Tile Matrix Set 2.0 definitions web-map clients know: WebMercatorQuad
// (EPSG:3857, the tiles of MapLibre, Leaflet and OpenLayers) and WorldCRS84Quad (lon/lat, two
// tiles wide at zoom 0). Each zoom halves the cell size of the one before; the constants are the
// standard's, so a tile here is the very tile every client and GDAL compute.
import { badRequest, notFound } from "../errors";

export interface TileMatrix {
  id: string;
  scaleDenominator: number;
  cellSize: number;
  cornerOfOrigin: "topLeft";
  pointOfOrigin: [number, number];
  tileWidth: number;
  tileHeight: number;
  matrixWidth: number;
  matrixHeight: number;
}

export interface TileMatrixSet {
  id: string;
  title: string;
  uri: string;
  crs: string;
  orderedAxes: [string, string];
  boundingBox: { lowerLeft: [number, number]; upperRight: [number, number]; crs: string };
  tileMatrices: TileMatrix[];
}

interface Definition {
  id: string;
  title: string;
  crs: string;
  orderedAxes: [string, string];
  /** lower-left x, lower-left y, upper-right x, upper-right y, in the CRS's units. */
  extent: [number, number, number, number];
  /** Scale denominator and cell size at zoom 0. */
  scale0: number;
  cell0: number;
  /** Tiles across at zoom 0 (the height is always one). */
  width0: number;
  maxZoom: number;
}

const HALF_EARTH = 20037508.3427892;
const DEFINITIONS: Definition[] = [
  {
    id: "WebMercatorQuad",
    title: "Google Maps Compatible for the World",
    crs: "http://www.opengis.net/def/crs/EPSG/0/3857",
    orderedAxes: ["X", "Y"],
    extent: [-HALF_EARTH, -HALF_EARTH, HALF_EARTH, HALF_EARTH],
    scale0: 559082264.0287178,
    cell0: 156543.03392804097,
    width0: 1,
    maxZoom: 24,
  },
  {
    id: "WorldCRS84Quad",
    title: "CRS84 for the World",
    crs: "http://www.opengis.net/def/crs/OGC/1.3/CRS84",
    orderedAxes: ["Lon", "Lat"],
    extent: [-180, -90, 180, 90],
    scale0: 279541132.0143589,
    cell0: 0.703125,
    width0: 2,
    maxZoom: 23,
  },
];

const TILE = 256;

function build(d: Definition): TileMatrixSet {
  const [minX, minY, maxX, maxY] = d.extent;
  return {
    id: d.id,
    title: d.title,
    uri: `http://www.opengis.net/def/tilematrixset/OGC/1.0/${d.id}`,
    crs: d.crs,
    orderedAxes: d.orderedAxes,
    boundingBox: { lowerLeft: [minX, minY], upperRight: [maxX, maxY], crs: d.crs },
    tileMatrices: Array.from({ length: d.maxZoom + 1 }, (_, z) => ({
      id: String(z),
      scaleDenominator: d.scale0 / 2 ** z,
      cellSize: d.cell0 / 2 ** z,
      cornerOfOrigin: "topLeft" as const,
      pointOfOrigin: [minX, maxY] as [number, number],
      tileWidth: TILE,
      tileHeight: TILE,
      matrixWidth: d.width0 * 2 ** z,
      matrixHeight: 2 ** z,
    })),
  };
}

export const TILE_MATRIX_SETS: ReadonlyMap<string, TileMatrixSet> = new Map(DEFINITIONS.map((d) => [d.id, build(d)]));

export function tileMatrixSet(id: string): TileMatrixSet {
  const tms = TILE_MATRIX_SETS.get(id);
  if (!tms) throw notFound(`unknown tile matrix set "${id}"; known: ${[...TILE_MATRIX_SETS.keys()].join(", ")}`);
  return tms;
}

/**
 * The bounds of tile (z, x, y), [minX, minY, maxX, maxY] in the set's CRS; 400 for a tile
 * outside the matrix (a client's arithmetic gone wrong, or a crawler guessing).
 */
export function tileBounds(tms: TileMatrixSet, z: number, x: number, y: number): [number, number, number, number] {
  const matrix = tms.tileMatrices[z];
  if (!Number.isInteger(z) || !matrix) throw badRequest(`zoom ${z} is outside ${tms.id} (0 to ${tms.tileMatrices.length - 1})`);
  if (!Number.isInteger(x) || !Number.isInteger(y) || x < 0 || y < 0 || x >= matrix.matrixWidth || y >= matrix.matrixHeight) {
    throw badRequest(`tile ${z}/${x}/${y} is outside ${tms.id}'s ${matrix.matrixWidth}×${matrix.matrixHeight} matrix at zoom ${z}`);
  }
  const span = matrix.cellSize * matrix.tileWidth;
  const [left, top] = matrix.pointOfOrigin;
  return [left + x * span, top - (y + 1) * span, left + (x + 1) * span, top - y * span];
}
