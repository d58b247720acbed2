// `npm run build:tile-matrix-sets`: writes the OGC Two Dimensional Tile Matrix Set 2.0 documents
// Tessera tiles in, shared/maps/tile-matrix-sets/{id}.json, from the parameters that define each
// set (OGC 17-083r4 Annex D, and LINZ's NZTM2000Quad): CRS, axis order, point of origin and
// bounding box as the standard prints them (in the CRS's own axis order), the cell size of the
// first matrix and the zooms. Each zoom halves the cell of the one before, except the Canadian
// set's, which follow its map scales. The scale denominator is the cell size over the
// standard's 0.28 mm pixel (in metres: degrees count 2π·6378137/360 m), as WMTS clients derive
// the cell size back from it. It also writes registry.ts, the documents' list both tiers import.
// Run it after changing a parameter here; the documents are committed (a unit test checks they
// are what it writes).
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** Where the documents go: the repository's folder, or the one named first on the command line. */
const OUT = process.argv[2] ? `${process.argv[2].replace(/\/$/, "")}/` : fileURLToPath(new URL("../../shared/maps/tile-matrix-sets/", import.meta.url));
const PIXEL_METRES = 0.00028;
const DEGREE_METRES = (2 * Math.PI * 6378137) / 360;
const TILE = 256;

interface Definition {
  id: string;
  title: string;
  uri?: string;
  crs: string;
  orderedAxes: [string, string];
  wellKnownScaleSet?: string;
  /** In the CRS's axis order, as the standard prints them. */
  pointOfOrigin: [number, number];
  boundingBox?: { lowerLeft: [number, number]; upperRight: [number, number] };
  /** Metres in one unit of the CRS. */
  unitMetres?: number;
  /** The matrices: each zoom's cell size and size in tiles. */
  matrices: { zoom: number; cellSize: number; matrixWidth: number; matrixHeight: number }[];
}

const ogc = (id: string) => `http://www.opengis.net/def/tilematrixset/OGC/1.0/${id}`;
const epsg = (code: number) => `http://www.opengis.net/def/crs/EPSG/0/${code}`;

/** Zooms `first` to `last`, halving `cell` (the first's) and doubling `width` × `height` each time. */
function quad(first: number, last: number, cell: number, width = 1, height = 1): Definition["matrices"] {
  return Array.from({ length: last - first + 1 }, (_, i) => ({ zoom: first + i, cellSize: cell / 2 ** i, matrixWidth: width * 2 ** i, matrixHeight: height * 2 ** i }));
}

const HALF_EARTH = 20037508.3427892;
const MERCATOR_CELL = (2 * Math.PI * 6378137) / TILE;

const mercator = (id: string, title: string, code: number, orderedAxes: [string, string], wkss: string): Definition => ({
  id,
  title,
  uri: ogc(id),
  crs: epsg(code),
  orderedAxes,
  wellKnownScaleSet: `http://www.opengis.net/def/wkss/OGC/1.0/${wkss}`,
  pointOfOrigin: [-HALF_EARTH, HALF_EARTH],
  boundingBox: { lowerLeft: [-HALF_EARTH, -HALF_EARTH], upperRight: [HALF_EARTH, HALF_EARTH] },
  matrices: quad(0, 24, MERCATOR_CELL),
});

/** UTM zone `zone` north (EPSG:326zz): one family of 60 sets, zooms 1 to 24, 1 × 2 tiles at zoom 1. */
const utm = (zone: number): Definition => {
  const id = `UTM${String(zone).padStart(2, "0")}WGS84Quad`;
  return {
    id,
    title: `Universal Transverse Mercator Zone ${String(zone).padStart(2, "0")} WGS84 Quad`,
    uri: ogc(id),
    crs: epsg(32600 + zone),
    orderedAxes: ["E", "N"],
    pointOfOrigin: [-9501965.72931276, 20003931.4586255],
    boundingBox: { lowerLeft: [-9501965.72931276, -20003931.4586255], upperRight: [10501965.7293128, 20003931.4586255] },
    matrices: quad(1, 24, 78140.3572602559, 1, 2),
  };
};

/** Universal Polar Stereographic, north (EPSG:5041) or south (EPSG:5042): the NGA's grid. */
const ups = (id: string, title: string, code: number): Definition => ({
  id,
  title,
  uri: ogc(id),
  crs: epsg(code),
  orderedAxes: ["E", "N"],
  pointOfOrigin: [-14440759.350252, 18440759.350252],
  boundingBox: { lowerLeft: [-14440759.350252, -14440759.350252], upperRight: [18440759.350252, 18440759.350252] },
  matrices: quad(0, 24, 128443.4324),
});

/** The Canadian atlas scales, 1:145 M to 1:250; a cell is the scale times a 96 dpi pixel. */
const CANADIAN_SCALES = [
  145e6, 85e6, 50e6, 30e6, 17.5e6, 10e6, 6e6, 3.5e6, 2e6, 1.2e6, 700e3, 420e3, 250e3, 145e3, 85e3, 50e3, 30e3, 17.5e3, 10e3, 6e3, 3.5e3, 2e3, 1.2e3, 700, 420, 250,
];
const CANADIAN_PIXEL = PIXEL_METRES / 1.0582656;

/** NAD83 / Canada Atlas Lambert: the scales do not halve, and each matrix covers the bounding box. */
function canadian(): Definition {
  const origin: [number, number] = [-34655800, 39310000];
  const boundingBox: Definition["boundingBox"] = { lowerLeft: [-7786476.885838887, -5153821.09213678], upperRight: [7148753.233541353, 7928343.534071138] };
  return {
    id: "CanadianNAD83_LCC",
    title: "Lambert conformal conic NAD83 for Canada",
    uri: ogc("CanadianNAD83_LCC"),
    crs: epsg(3978),
    orderedAxes: ["E", "N"],
    pointOfOrigin: origin,
    boundingBox,
    matrices: CANADIAN_SCALES.map((scale, zoom) => {
      const cellSize = scale * CANADIAN_PIXEL;
      const span = cellSize * TILE;
      return {
        zoom,
        cellSize,
        matrixWidth: Math.ceil((boundingBox.upperRight[0] - origin[0]) / span),
        matrixHeight: Math.ceil((origin[1] - boundingBox.lowerLeft[1]) / span),
      };
    }),
  };
}

const DEFINITIONS: Definition[] = [
  mercator("WebMercatorQuad", "Google Maps Compatible for the World", 3857, ["X", "Y"], "GoogleMapsCompatible"),
  {
    id: "WorldCRS84Quad",
    title: "CRS84 for the World",
    uri: ogc("WorldCRS84Quad"),
    crs: "http://www.opengis.net/def/crs/OGC/1.3/CRS84",
    orderedAxes: ["Lon", "Lat"],
    wellKnownScaleSet: "http://www.opengis.net/def/wkss/OGC/1.0/GoogleCRS84Quad",
    pointOfOrigin: [-180, 90],
    boundingBox: { lowerLeft: [-180, -90], upperRight: [180, 90] },
    unitMetres: DEGREE_METRES,
    matrices: quad(0, 23, 0.703125, 2, 1),
  },
  mercator("WorldMercatorWGS84Quad", "World Mercator WGS84 (ellipsoid)", 3395, ["E", "N"], "WorldMercatorWGS84"),
  ...Array.from({ length: 60 }, (_, i) => utm(i + 1)),
  ups("UPSArcticWGS84Quad", "Universal Polar Stereographic WGS 84 Quad for Arctic", 5041),
  ups("UPSAntarcticWGS84Quad", "Universal Polar Stereographic WGS 84 Quad for Antarctic", 5042),
  {
    id: "EuropeanETRS89_LAEAQuad",
    title: "Lambert Azimuthal Equal Area ETRS89 for Europe",
    uri: ogc("EuropeanETRS89_LAEAQuad"),
    crs: epsg(3035),
    // EPSG:3035's axes are northing, easting: the origin and box are written so.
    orderedAxes: ["Y", "X"],
    pointOfOrigin: [5500000, 2000000],
    boundingBox: { lowerLeft: [1000000, 2000000], upperRight: [5500000, 6500000] },
    matrices: quad(0, 15, 17578.125),
  },
  canadian(),
  {
    id: "NZTM2000Quad",
    title: "LINZ NZTM2000 Map Tile Grid V2",
    crs: epsg(2193),
    // EPSG:2193's axes are northing, easting; the cells are WebMercatorQuad's from its zoom 2.
    orderedAxes: ["Y", "X"],
    pointOfOrigin: [10438190.1652, -3260586.7284],
    matrices: quad(0, 21, MERCATOR_CELL / 4),
  },
];

/** The document, one matrix a line (60 UTM zones of 24 matrices stay readable in a diff). */
function document(d: Definition): string {
  const head = {
    id: d.id,
    title: d.title,
    ...(d.uri && { uri: d.uri }),
    crs: d.crs,
    orderedAxes: d.orderedAxes,
    ...(d.wellKnownScaleSet && { wellKnownScaleSet: d.wellKnownScaleSet }),
    ...(d.boundingBox && { boundingBox: { ...d.boundingBox, crs: d.crs, orderedAxes: d.orderedAxes } }),
  };
  const matrices = d.matrices.map((m) =>
    JSON.stringify({
      id: String(m.zoom),
      scaleDenominator: (m.cellSize * (d.unitMetres ?? 1)) / PIXEL_METRES,
      cellSize: m.cellSize,
      cornerOfOrigin: "topLeft",
      pointOfOrigin: d.pointOfOrigin,
      tileWidth: TILE,
      tileHeight: TILE,
      matrixWidth: m.matrixWidth,
      matrixHeight: m.matrixHeight,
    }),
  );
  const fields = Object.entries(head).map(([k, v]) => `  ${JSON.stringify(k)}: ${JSON.stringify(v)}`);
  return `{\n${fields.join(",\n")},\n  "tileMatrices": [\n    ${matrices.join(",\n    ")}\n  ]\n}\n`;
}

function registry(ids: string[]): string {
  const name = (id: string) => id.replace(/\W/g, "_");
  return [
    "// Made by `npm run build:tile-matrix-sets` (infra/build/tile-matrix-sets.ts) with the documents beside it: do not edit.",
    "// Plain JSON imports, so that the edge's bundle carries the documents (the Worker has no files).",
    ...ids.map((id) => `import ${name(id)} from "./${id}.json";`),
    "",
    "/** The OGC registry's tile matrix sets (and LINZ's NZTM2000Quad), as their documents. */",
    `export const REGISTRY_DOCUMENTS: readonly unknown[] = [${ids.map(name).join(", ")}];`,
    "",
  ].join("\n");
}

for (const d of DEFINITIONS) writeFileSync(`${OUT}${d.id}.json`, document(d));
writeFileSync(`${OUT}registry.ts`, registry(DEFINITIONS.map((d) => d.id)));
console.log(`${DEFINITIONS.length} tile matrix sets written to ${OUT}`);
