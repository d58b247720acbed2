// The sources at the world's edges the map tests read, made with GDAL like the map fixtures
// (map-fixtures.ts, same folder, made once): two across longitude ±180° (lon/lat from 170° to
// 190°, and PDC Mercator straddling 180° near Fiji) and two around a pole (NSIDC's Arctic
// and the Antarctic polar stereographic, each pole in the middle). One 8-bit band: a gradient
// with hard-edged squares, so a shift, a mirror or a seam shows.
import { MAP_FIXTURE_DIR, cogOptions, mapFixture, type MapFixture } from "./map-fixtures.ts";

const SQUARE = 32;
const pattern = (width: number, height: number) => (col: number, row: number) =>
  (Math.floor(col / SQUARE) + Math.floor(row / SQUARE)) % 2 ? 40 + (150 * col) / width : 230 - (150 * row) / height;

/** One 8-bit band of the pattern, `width` × `height` pixels placed by `geoTransform` in `crs`, DEFLATE, with overviews. */
const fixture = (id: string, crs: string, [width, height]: [number, number], geoTransform: MapFixture["geoTransform"]): MapFixture => ({
  id,
  crs,
  width,
  height,
  geoTransform,
  dataType: "Byte",
  bands: 1,
  cog: cogOptions("COMPRESS=DEFLATE"),
  value: pattern(width, height),
  places: {},
});

/** 180°E in PDC Mercator (EPSG:3832, central meridian 150°E): a sixth of the Earth's circumference. */
const PDC_180 = (6378137 * Math.PI) / 6;

/** A polar stereographic square of 4 km pixels, 4096 km a side, centred on its CRS's pole. */
const polar = (id: string, crs: string) => fixture(id, crs, [1024, 1024], [-2048000, 4000, 0, 2048000, 0, -4000]);

export const WORLD_EDGE_FIXTURES = {
  /** EPSG:4326 from 170°E to 190°E (170°W), 5°S to 5°N: longitudes past 180°, as GDAL writes them. */
  lonLatAcross: fixture("across-lonlat", "EPSG:4326", [1000, 500], [170, 0.02, 0, 5, 0, -0.02]),
  /** EPSG:3832, 1024 km square of 1 km pixels centred on 180° at about 17°S: 175.4°E to 175.4°W. */
  mercatorAcross: fixture("across-mercator", "EPSG:3832", [1024, 1024], [PDC_180 - 512000, 1000, 0, -1408825, 0, -1000]),
  arctic: polar("arctic", "EPSG:3413"),
  antarctic: polar("antarctic", "EPSG:3031"),
} as const;

/** Every fixture made; returns the folder a LocalCatalog serves them from. */
export function worldEdgeFixtures(): string {
  for (const fixture of Object.values(WORLD_EDGE_FIXTURES)) mapFixture(fixture);
  return MAP_FIXTURE_DIR;
}
