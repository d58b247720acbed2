// The sources at the world's edges the map tests read, made with GDAL like the map fixtures
// (map-fixtures.ts, same folder, made once): two across longitude ±180° (lon/lat from 170° to
// 190°, and PDC Mercator straddling 180° near Fiji) and two around a pole (NSIDC's Arctic
// and the Antarctic polar stereographic, each pole in the middle). One 8-bit band: a gradient
// with hard-edged squares, so a shift, a mirror or a seam shows.
import { MAP_FIXTURE_DIR, cogOptions, mapFixture, type MapFixture } from "./map-fixtures";

const SQUARE = 32;
const pattern = (width: number, height: number) => (col: number, row: number) =>
  (Math.floor(col / SQUARE) + Math.floor(row / SQUARE)) % 2 ? 40 + (150 * col) / width : 230 - (150 * row) / height;

/** EPSG:4326 from 170°E to 190°E (170°W), 5°S to 5°N: longitudes past 180°, as GDAL writes them. */
const lonLatAcross: MapFixture = {
  id: "across-lonlat",
  crs: "EPSG:4326",
  width: 1000,
  height: 500,
  geoTransform: [170, 0.02, 0, 5, 0, -0.02],
  dataType: "Byte",
  bands: 1,
  cog: cogOptions("COMPRESS=DEFLATE"),
  value: pattern(1000, 500),
  places: {},
};

/** 180°E in PDC Mercator (EPSG:3832, central meridian 150°E): a sixth of the Earth's circumference. */
const PDC_180 = (6378137 * Math.PI) / 6;

/** EPSG:3832, 1024 km square of 1 km pixels centred on 180° at about 17°S: 175.4°E to 175.4°W. */
const mercatorAcross: MapFixture = {
  id: "across-mercator",
  crs: "EPSG:3832",
  width: 1024,
  height: 1024,
  geoTransform: [PDC_180 - 512000, 1000, 0, -1408825, 0, -1000],
  dataType: "Byte",
  bands: 1,
  cog: cogOptions("COMPRESS=DEFLATE"),
  value: pattern(1024, 1024),
  places: {},
};

/** A polar stereographic square of 4 km pixels, 4096 km a side, centred on its CRS's pole. */
const polar = (id: string, crs: string): MapFixture => ({
  id,
  crs,
  width: 1024,
  height: 1024,
  geoTransform: [-2048000, 4000, 0, 2048000, 0, -4000],
  dataType: "Byte",
  bands: 1,
  cog: cogOptions("COMPRESS=DEFLATE"),
  value: pattern(1024, 1024),
  places: {},
});

export const WORLD_EDGE_FIXTURES = {
  lonLatAcross,
  mercatorAcross,
  arctic: polar("arctic", "EPSG:3413"),
  antarctic: polar("antarctic", "EPSG:3031"),
} as const;

/** Every fixture made; returns the folder a LocalCatalog serves them from. */
export function worldEdgeFixtures(): string {
  for (const fixture of Object.values(WORLD_EDGE_FIXTURES)) mapFixture(fixture);
  return MAP_FIXTURE_DIR;
}
