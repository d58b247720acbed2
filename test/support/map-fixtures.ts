// The georeferenced COGs the map tests and bench:maps read, made with GDAL from synthetic but
// structured pixels (gradients for smooth areas, hard-edged shapes so that a resampling or a
// half-pixel error shows), into a git-ignored folder, once: a later call finds them there.
// MAP_FIXTURES are the four held against GDAL's warps (map-*-vs-gdal, bench:maps);
// mapUnitFixtures() makes the smaller ones the decoder's map unit tests read.
//
// Most fixtures' pixels are computed here and written raw; a VRT gives GDAL their type, CRS,
// geotransform and nodata value, and `gdal_translate -of COG` writes the COG with its overviews.
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, linkSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { TileMatrixSet } from "../../shared/maps/tile-matrix-sets";
import { gdalTransform } from "./gdal-reference.ts";

/** Where the fixtures live; a new version of the pixels or options gets a new folder. */
export const MAP_FIXTURE_DIR = fileURLToPath(new URL("../../.tmp/map-fixtures-v2/", import.meta.url));

export type DataType = "Byte" | "UInt16" | "Float32";

export interface MapFixture {
  /** The catalog id: the file is `{id}.tif` in MAP_FIXTURE_DIR. */
  id: string;
  crs: string;
  width: number;
  height: number;
  /** GDAL's geotransform: origin x, pixel width, 0, origin y, 0, −pixel height. */
  geoTransform: [number, number, 0, number, 0, number];
  dataType: DataType;
  bands: number;
  nodata?: number;
  /** gdal_translate's COG creation options. */
  cog: string[];
  /** Band `band`'s (from 0) value at pixel (col, row). */
  value(col: number, row: number, band: number): number;
  /** Where the file's internal mask says the pixel is valid; absent: no mask. */
  mask?(col: number, row: number): boolean;
  /** Named pixel positions [col, row] that tests pick tiles around. */
  places: Record<string, [number, number]>;
}

/** gdal_translate's `-co` arguments for a COG of 256 px blocks with overviews, and `options`. */
export const cogOptions = (...options: string[]) => [...options, "BLOCKSIZE=256", "OVERVIEWS=AUTO"].flatMap((option) => ["-co", option]);
/** Web Mercator cell size at zoom 12 (the OGC WebMercatorQuad constant halved 12 times). */
const MERCATOR_Z12_CELL = 156543.03392804097 / 2 ** 12;
const HALF_EARTH = 20037508.3427892;

/** A hard-edged checkerboard of `size`-pixel squares: 0 or 1. */
const checker = (col: number, row: number, size: number) => (Math.floor(col / size) + Math.floor(row / size)) % 2;
const inDisc = (col: number, row: number, [cx, cy]: [number, number], r: number) => (col - cx) ** 2 + (row - cy) ** 2 <= r * r;

/**
 * (a) RGB imagery in UTM 33N (EPSG:32633), a JPEG COG (YCbCr, q90) with overviews 1024, 512 and
 * 256 px: 10 m pixels west of the zone's central meridian, so north on the map is turned from
 * the grid's (the warp is not a shift). Red and green are gradients across and down; a quadrant
 * is a checkerboard, and a white ring and a black bar cross the gradients with hard edges. An
 * internal mask (JPEG has no nodata) keeps a scene's footprint, a square turned by 8°: the
 * image's corners and the middle of its edges are masked.
 */
const utmRgb: MapFixture = {
  id: "utm-rgb",
  crs: "EPSG:32633",
  width: 2048,
  height: 2048,
  geoTransform: [440000, 10, 0, 5045000, 0, -10],
  dataType: "Byte",
  bands: 3,
  cog: cogOptions("COMPRESS=JPEG", "QUALITY=90"),
  value(col, row, band) {
    if (col >= 1024 && row < 1024) return checker(col, row, 48) ? 230 : 25;
    if (Math.abs(Math.hypot(col - 700, row - 1300) - 420) < 12) return 255;
    if (Math.abs(col - row - 300) < 20 && col > 1100) return 0;
    return [(col / 2047) * 255, (row / 2047) * 255, 128 + 100 * Math.sin(col / 37) * Math.cos(row / 53)][band];
  },
  mask(col, row) {
    const [x, y] = [col - 1024, row - 1024];
    const turn = (8 * Math.PI) / 180;
    return Math.abs(x * Math.cos(turn) + y * Math.sin(turn)) < 1000 && Math.abs(y * Math.cos(turn) - x * Math.sin(turn)) < 1000;
  },
  places: { centre: [1024, 1024], westEdge: [0, 1024], northEdge: [1024, 0], southEdge: [1024, 2047], checkerboard: [1536, 512] },
};

/**
 * (b) A float32 elevation model in UTM 33N with nodata −9999, DEFLATE: non-square 30 × 20 m
 * pixels, smooth hills with a 250 m cliff, nodata lakes inside, a nodata strip along the west
 * edge and a notch in the north edge (as a clipped survey has).
 */
const LAKES: [[number, number], number][] = [
  [[500, 700], 60],
  [[300, 300], 35],
  [[760, 1150], 90],
];
const utmDem: MapFixture = {
  id: "utm-dem",
  crs: "EPSG:32633",
  width: 1000,
  height: 1500,
  geoTransform: [600000, 30, 0, 5100000, 0, -20],
  dataType: "Float32",
  bands: 1,
  nodata: -9999,
  cog: cogOptions("COMPRESS=DEFLATE"),
  value(col, row) {
    if ((col < 40 && row > 700) || (row < 30 && col > 400 && col < 620)) return -9999;
    if (LAKES.some(([centre, r]) => inDisc(col, row, centre, r))) return -9999;
    const hill = (cx: number, cy: number, s: number, h: number) => h * Math.exp(-((col - cx) ** 2 + (row - cy) ** 2) / (2 * s * s));
    const cliff = col + 0.3 * row > 750 ? 250 : 0;
    return 180 + 0.2 * row + hill(250, 500, 150, 900) + hill(700, 300, 90, 600) + hill(600, 1200, 200, 400) + cliff;
  },
  places: { centre: [500, 750], lake: [500, 700], westStrip: [40, 1100], northNotch: [510, 20], cliff: [600, 500] },
};

/**
 * (c) A 4-band uint16 image in longitude/latitude (EPSG:4326), DEFLATE, no nodata: pixels of
 * 0.0005° × 0.0004° (non-square on the ground too). Band 1 a gradient across with stripes,
 * band 2 one down, band 3 rings, band 4 a checkerboard: each band differs, so a band mix-up shows.
 */
const wgs84Uint16: MapFixture = {
  id: "wgs84-uint16",
  crs: "EPSG:4326",
  width: 1200,
  height: 800,
  geoTransform: [10.2, 0.0005, 0, 49.6, 0, -0.0004],
  dataType: "UInt16",
  bands: 4,
  cog: cogOptions("COMPRESS=DEFLATE"),
  value(col, row, band) {
    switch (band) {
      case 0:
        return Math.floor(col / 60) % 3 === 0 ? 60000 : (col / 1199) * 40000;
      case 1:
        return (row / 799) * 65535;
      case 2:
        return 32768 + 30000 * Math.sin(Math.hypot(col - 600, row - 400) / 25);
      default:
        return checker(col, row, 40) ? 60000 : 5000;
    }
  },
  places: { centre: [600, 400], northWest: [0, 0], southEast: [1199, 799] },
};

/**
 * (d) 8-bit grey already on the WebMercatorQuad grid: EPSG:3857, pixels of zoom 12's cell size,
 * its corner on the corner of z12 tile (2177, 1421) (near Munich), 4 × 4 tiles of 256 px, so a
 * z12 tile is a window of its full level and a z11 tile one of its first overview: the warp is
 * skipped there. The corner is odd, so z11 and z10 tiles hang over its edges. Nodata 0 in a
 * triangle at the north-west corner (a scene's collar); hard-edged squares over a gradient.
 */
const mercatorGrey: MapFixture = {
  id: "mercator-grey",
  crs: "EPSG:3857",
  width: 1024,
  height: 1024,
  geoTransform: [-HALF_EARTH + 2177 * 256 * MERCATOR_Z12_CELL, MERCATOR_Z12_CELL, 0, HALF_EARTH - 1421 * 256 * MERCATOR_Z12_CELL, 0, -MERCATOR_Z12_CELL],
  dataType: "Byte",
  bands: 1,
  nodata: 0,
  cog: cogOptions("COMPRESS=DEFLATE"),
  value(col, row) {
    if (col + row < 300) return 0;
    if (checker(col, row, 64) && col > 512 && row > 512) return 250;
    if (inDisc(col, row, [300, 700], 150)) return 20;
    return 40 + ((col + row) / 2046) * 180;
  },
  places: { centre: [512, 512], collar: [150, 150], southEast: [1023, 1023] },
};

export const MAP_FIXTURES = { utmRgb, utmDem, wgs84Uint16, mercatorGrey } as const;

/**
 * A 512² 8-bit grey fixture in `crs`, 256 px blocks and one overview, DEFLATE: a gradient under
 * hard-edged squares and a dark disc, nodata 0 in a triangle at its north-west corner. The
 * other tile matrix sets' fixtures (map-tile-matrix-sets-vs-gdal) are this pattern in their CRSs.
 */
function greyIn(id: string, crs: string, [x, y]: [number, number], pixel: number): MapFixture {
  return {
    id,
    crs,
    width: 512,
    height: 512,
    geoTransform: [x, pixel, 0, y, 0, -pixel],
    dataType: "Byte",
    bands: 1,
    nodata: 0,
    cog: cogOptions("COMPRESS=DEFLATE"),
    value(col, row) {
      if (col + row < 120) return 0;
      if (checker(col, row, 32) && col > 256 && row > 256) return 245;
      if (inDisc(col, row, [150, 350], 80)) return 15;
      return 30 + ((col + row) / 1022) * 190;
    },
    places: { centre: [256, 256], northWest: [60, 60], southEast: [500, 500] },
  };
}

/** Sources in the CRSs of the other sets: each set's tiles are held against gdalwarp's on them. */
export const SET_FIXTURES = {
  /** Wellington, New Zealand Transverse Mercator 2000 (EPSG:2193), 20 m. */
  nztm: greyIn("nztm-grey", "EPSG:2193", [1740000, 5435000], 20),
  /** Bavaria, ETRS89 / LAEA Europe (EPSG:3035, northing first in EPSG's order), 25 m. */
  laea: greyIn("laea-grey", "EPSG:3035", [4420000, 2830000], 25),
  /** Svalbard, NSIDC polar stereographic north (EPSG:3413), 50 m: clear of the pole. */
  arctic: greyIn("arctic-grey", "EPSG:3413", [1070000, -610000], 50),
  /** The Antarctic Peninsula, Antarctic polar stereographic (EPSG:3031), 50 m. */
  antarctic: greyIn("antarctic-grey", "EPSG:3031", [-2500000, 1450000], 50),
  /** Ottawa in UTM 18N (EPSG:32618), 30 m: for Canada's LCC and the UTM 18 and 17 quads. */
  ottawa: greyIn("ottawa-grey", "EPSG:32618", [440000, 5035000], 30),
} as const;

/** The fixture's file path, made first if missing. Safe to call from test files running at once. */
export function mapFixture(fixture: MapFixture): string {
  return cached(fixture.id, (out, scratch) => writeCog(fixture, out, scratch));
}

/** Writes the fixture's pixels as a COG at `out`, through a raw file and a VRT in `scratch`. */
export function writeCog(fixture: MapFixture, out: string, scratch: string): void {
  const raw = path.join(scratch, "pixels.raw");
  writeFileSync(raw, rawPixels(fixture));
  writeFileSync(path.join(scratch, "pixels.vrt"), vrt(fixture, raw));
  gdal("gdal_translate", "-of", "COG", ...fixture.cog, path.join(scratch, "pixels.vrt"), out);
}

/** `{id}.tif` in MAP_FIXTURE_DIR, written by `make(out, scratch)` if missing (see `cachedFile`). */
const cached = (id: string, make: (out: string, scratch: string) => void) => cachedFile(path.join(MAP_FIXTURE_DIR, `${id}.tif`), make);

/**
 * `file`, written by `make(out, scratch)` if missing, in a private folder beside it and linked
 * into place at the end: test files making the same fixture at once each write their own copy,
 * none sees a half-written one, and the first in place stays (a file replaced under a test is a
 * new version to LocalCatalog, which answers the old one 410).
 */
export function cachedFile(file: string, make: (out: string, scratch: string) => void): string {
  if (existsSync(file)) return file;
  const folder = path.dirname(file);
  mkdirSync(folder, { recursive: true });
  const scratch = mkdtempSync(path.join(folder, `.${path.basename(file)}-`));
  try {
    const out = path.join(scratch, path.basename(file));
    make(out, scratch);
    try {
      linkSync(out, file);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e; // another test file's copy is in place
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  return file;
}

const gdal = (tool: string, ...args: string[]) => execFileSync(tool, ["-q", ...args]);

/** The tile of `tms` at zoom `z` that holds the fixture's place (the centre of that pixel), as GDAL projects it. */
export async function tileHolding(fixture: MapFixture, place: string, tms: TileMatrixSet, z: number): Promise<{ x: number; y: number }> {
  const [col, row] = fixture.places[place];
  const [originX, pixelWidth, , originY, , pixelHeight] = fixture.geoTransform;
  const [[x, y]] = await gdalTransform([[originX + (col + 0.5) * pixelWidth, originY + (row + 0.5) * pixelHeight]], fixture.crs, tms.crs);
  // The set's matrix by its zoom (a type import only: the workers' set-up loads this file under Node).
  const matrix = tms.tileMatrices.find((m) => m.zoom === z)!;
  return { x: Math.floor((x - matrix.origin[0]) / (matrix.cellSize * matrix.tileWidth)), y: Math.floor((matrix.origin[1] - y) / (matrix.cellSize * matrix.tileHeight)) };
}

/** Every fixture made; returns the folder a LocalCatalog serves them from. */
export function mapFixtures(): string {
  for (const fixture of Object.values(MAP_FIXTURES)) mapFixture(fixture);
  return MAP_FIXTURE_DIR;
}

// The decoder's map unit tests (map-bands, map-warp, map-tile-route) read these by id; their
// assertions depend on these pixels and places (windows across the mask's edge, values inside a
// rescale range), so they stay as they were when each test made them in a temp folder.

/** A float32 DEM in UTM 33N, 30 m pixels, values ~20–300: a nodata (−9999) block and west strip. */
const demUnit: MapFixture = {
  id: "dem",
  crs: "EPSG:32633",
  width: 600,
  height: 500,
  geoTransform: [500000, 30, 0, 5000000, 0, -30],
  dataType: "Float32",
  bands: 1,
  nodata: -9999,
  cog: cogOptions("COMPRESS=DEFLATE", "PREDICTOR=YES"),
  value(col, row) {
    if (col < 20 || (row >= 100 && row < 160 && col >= 200 && col < 300)) return -9999;
    return 100 + 50 * Math.sin(col / 40) + 30 * Math.cos(row / 25) + col * 0.2;
  },
  places: {},
};

/** A 4-band uint16 image in lon/lat, 0.001° pixels, each band its own ramp (most values past 255). */
const u16Unit: MapFixture = {
  id: "u16",
  crs: "EPSG:4326",
  width: 400,
  height: 300,
  geoTransform: [10, 0.001, 0, 50, 0, -0.001],
  dataType: "UInt16",
  bands: 4,
  cog: cogOptions("COMPRESS=DEFLATE"),
  value: (col, row, band) => (col * (band + 1) * 37 + row * 11) % 65536,
  places: {},
};

const SAMPLES = fileURLToPath(new URL("../../samples/", import.meta.url));
const TEST_PATTERN = path.join(SAMPLES, "test-pattern.tif");

/**
 * The unit tests' fixtures, made if missing, in MAP_FIXTURE_DIR (returned, for a LocalCatalog):
 * - `rgb-utm`: the test pattern placed on 14°–15°E, 45°–46°N and warped to UTM 33N (bilinear),
 *   a JPEG COG whose internal mask (from the warp's alpha) leaves the curved edges out;
 * - `dem`, `u16`: above;
 * - `no-overviews`: the test pattern as a 3000² RGB COG over 0°–60°E, 0°–60°N without overviews,
 *   so a zoom-0 tile reads every block of it;
 * - `test-pattern`: the bundled sample, not georeferenced.
 */
export function mapUnitFixtures(): string {
  cached("rgb-utm", (out, scratch) => {
    const [lonLat, alpha] = [path.join(scratch, "lonlat.tif"), path.join(scratch, "alpha.tif")];
    gdal("gdal_translate", "-a_srs", "EPSG:4326", "-a_ullr", "14", "46", "15", "45", TEST_PATTERN, lonLat);
    gdal("gdalwarp", "-t_srs", "EPSG:32633", "-dstalpha", "-r", "bilinear", lonLat, alpha);
    gdal("gdal_translate", "-of", "COG", ...cogOptions("COMPRESS=JPEG"), alpha, out);
  });
  mapFixture(demUnit);
  mapFixture(u16Unit);
  cached("no-overviews", (out) =>
    gdal("gdal_translate", "-of", "COG", "-outsize", "3000", "3000", "-co", "OVERVIEWS=NONE", "-co", "COMPRESS=DEFLATE", "-a_srs", "EPSG:4326", "-a_ullr", "0", "60", "60", "0", TEST_PATTERN, out),
  );
  cached("test-pattern", (out) => copyFileSync(TEST_PATTERN, out));
  return MAP_FIXTURE_DIR;
}

const SAMPLE: Record<DataType, { bytes: number; write(view: DataView, offset: number, v: number): void }> = {
  Byte: { bytes: 1, write: (d, o, v) => d.setUint8(o, Math.max(0, Math.min(255, Math.round(v)))) },
  UInt16: { bytes: 2, write: (d, o, v) => d.setUint16(o, Math.max(0, Math.min(65535, Math.round(v))), true) },
  Float32: { bytes: 4, write: (d, o, v) => d.setFloat32(o, v, true) },
};

/** Band-sequential little-endian samples, then the mask's bytes (255 valid, 0 not) if there is one. */
function rawPixels(f: MapFixture): Uint8Array {
  const { bytes, write } = SAMPLE[f.dataType];
  const plane = f.width * f.height;
  const out = new Uint8Array(plane * f.bands * bytes + (f.mask ? plane : 0));
  const view = new DataView(out.buffer);
  let offset = 0;
  for (let band = 0; band < f.bands; band++) {
    for (let row = 0; row < f.height; row++) {
      for (let col = 0; col < f.width; col++, offset += bytes) write(view, offset, f.value(col, row, band));
    }
  }
  if (f.mask) for (let row = 0; row < f.height; row++) for (let col = 0; col < f.width; col++) out[offset++] = f.mask(col, row) ? 255 : 0;
  return out;
}

function vrt(f: MapFixture, raw: string): string {
  const { bytes } = SAMPLE[f.dataType];
  const plane = f.width * f.height * bytes;
  const colours = f.bands === 3 && f.dataType === "Byte" ? ["Red", "Green", "Blue"] : [];
  /** A band that is the plane at `offset` in the raw file, `size` bytes a sample; `inner`: its other elements. */
  const rawBand = (attributes: string, offset: number, size: number, inner = "") =>
    `<VRTRasterBand ${attributes} subClass="VRTRawRasterBand">${inner}<SourceFilename relativeToVRT="0">${raw}</SourceFilename>` +
    `<ImageOffset>${offset}</ImageOffset><PixelOffset>${size}</PixelOffset><LineOffset>${f.width * size}</LineOffset><ByteOrder>LSB</ByteOrder></VRTRasterBand>`;
  const bands = Array.from({ length: f.bands }, (_, b) =>
    rawBand(
      `dataType="${f.dataType}" band="${b + 1}"`,
      b * plane,
      bytes,
      (colours[b] ? `<ColorInterp>${colours[b]}</ColorInterp>` : "") + (f.nodata === undefined ? "" : `<NoDataValue>${f.nodata}</NoDataValue>`),
    ),
  );
  // The mask follows the bands in the raw file; the COG driver writes it as an internal mask.
  const mask = f.mask ? `<MaskBand>${rawBand('dataType="Byte"', f.bands * plane, 1)}</MaskBand>` : "";
  return (
    `<VRTDataset rasterXSize="${f.width}" rasterYSize="${f.height}">` +
    `<SRS>${f.crs}</SRS><GeoTransform>${f.geoTransform.join(", ")}</GeoTransform>` +
    `${bands.join("")}${mask}</VRTDataset>`
  );
}
