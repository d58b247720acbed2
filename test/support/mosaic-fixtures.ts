// The sources every mosaic test reads, made with GDAL once into a git-ignored folder that is also
// a local data directory: overlapping single-band and RGB COGs on the WebMercatorQuad grid, the
// MosaicJSON documents over them, and Sentinel-2-like STAC scenes of one COG a band in UTM.
// Each COG's pixels are a function of (col, row, band) exported with it, so a test computes the
// pixel a mosaic tile must hold (which assets are valid there, which one wins) on its own,
// independently of the decoder; the values are chosen so every pixel-selection mode gives a
// different answer, with ties at known pixels and invalid pixels of every kind where all overlap.
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { quadkeyToTile, tileToQuadkey } from "../../shared/maps/mosaic-json";
import { tileMatrixSet } from "../../shared/maps/tile-matrix-sets";
import { cachedFile, cogOptions, type MapFixture, writeCog } from "./map-fixtures";

/** Where the fixtures live (a local data directory); a new version of the pixels or documents gets a new folder. */
export const MOSAIC_FIXTURE_DIR = fileURLToPath(new URL("../../.tmp/mosaic-fixtures-v1/", import.meta.url));

/** The WebMercatorQuad zoom whose grid the mercator fixtures lie on, pixel for pixel: each is 2 × 2 tiles of it. */
export const MOSAIC_Z = 14;
const WEB_MERCATOR = tileMatrixSet("WebMercatorQuad");
const GRID = WEB_MERCATOR.tileMatrices[MOSAIC_Z];
const TILE = GRID.tileWidth;

/**
 * The zoom Z−1 tile (near Vienna) the mercator fixtures gather round.
 */
export const MOSAIC_PARENT = { z: MOSAIC_Z - 1, x: 4468, y: 2840 };
const [P, Q] = [2 * MOSAIC_PARENT.x, 2 * MOSAIC_PARENT.y];
/** MOSAIC_PARENT's children at Z in quadkey order, q0 to q3: north-west, north-east, south-west, south-east. */
export const MOSAIC_CHILDREN = [0, 1, 2, 3].map((i) => ({ z: MOSAIC_Z, x: P + (i % 2), y: Q + Math.floor(i / 2) }));

export interface MosaicFixture extends MapFixture {
  /** The file's store key in MOSAIC_FIXTURE_DIR: `{id}.tif`. */
  key: string;
  /** Whether band `band` (from 0) is valid at (col, row): not the nodata value, not masked. */
  valid(col: number, row: number, band: number): boolean;
}

/** A fixture with its key and validity derived from its pixels, nodata value and mask. */
function fixture(f: Omit<MapFixture, "places"> & { places?: MapFixture["places"] }): MosaicFixture {
  return {
    places: {},
    ...f,
    key: `${f.id}.tif`,
    valid: (col, row, band) => (f.mask ? f.mask(col, row) : true) && f.value(col, row, band) !== f.nodata,
  };
}

/**
 * DEFLATE, blocks of one tile (a tile at Z reads exactly one block of each asset), and overviews
 * by nearest neighbour: their pixels are stored values, not blends across a nodata edge or
 * between patterns. (Which full-level pixel an overview pixel takes near nodata is GDAL's
 * choice; only tiles at Z and finer are computed from the value functions.)
 */
const MOSAIC_COG = cogOptions("COMPRESS=DEFLATE", "RESAMPLING=NEAREST");

/** A 512² single-band Byte COG on the Z grid with its north-west corner on the corner of tile (x, y) at Z. */
function onGrid(x: number, y: number): Pick<MapFixture, "crs" | "width" | "height" | "geoTransform" | "dataType" | "bands" | "cog"> {
  const [originX, originY] = GRID.origin;
  const cell = GRID.cellSize;
  return {
    crs: "EPSG:3857",
    width: 2 * TILE,
    height: 2 * TILE,
    geoTransform: [originX + x * TILE * cell, cell, 0, originY - y * TILE * cell, 0, -cell],
    dataType: "Byte",
    bands: 1,
    cog: MOSAIC_COG,
  };
}

// The three single-band fixtures overlap on tile q2 (P, Q+1), each with its own kind of invalid
// pixel there: A's square hole, B's anti-diagonal band, C's masked disc, partly on top of each
// other. Their values differ (A 100–149 across, B 120–159 down, C 110 or 130) and meet at known
// pixels (A = B where 100 + col mod 50 = 120 + row mod 40), so a tie's winner shows.

/** `mono-a`: tiles (P−1…P, Q…Q+1); 100 + (col mod 50), nodata 0 in the square cols and rows 320–383. */
const monoA = fixture({
  id: "mono-a",
  ...onGrid(P - 1, Q),
  nodata: 0,
  value: (col, row) => (col >= 320 && col < 384 && row >= 320 && row < 384 ? 0 : 100 + (col % 50)),
  places: { hole: [350, 350] },
});

/** `mono-b`: tiles (P…P+1, Q…Q+1); 120 + (row mod 40), nodata 0 on the anti-diagonal |col + row − 511| < 8. */
const monoB = fixture({
  id: "mono-b",
  ...onGrid(P, Q),
  nodata: 0,
  value: (col, row) => (Math.abs(col + row - 511) < 8 ? 0 : 120 + (row % 40)),
  places: { band: [100, 411] },
});

/** `mono-c`: tiles (P…P+1, Q+1…Q+2); 110, or 130 on stripes 16 columns wide every 64, no nodata; an internal mask hides the disc of radius 40 about (100, 100). */
const monoC = fixture({
  id: "mono-c",
  ...onGrid(P, Q + 1),
  value: (col) => (Math.floor(col / 16) % 4 === 0 ? 130 : 110),
  mask: (col, row) => (col - 100) ** 2 + (row - 100) ** 2 > 40 * 40,
  places: { disc: [100, 100] },
});

// The RGB fixtures overlap on tiles (P+1, Q…Q+1). Each has pixels where one band only is nodata
// (the asset takes no part there, its other bands valid as they are), and rgb-a a square where all are.

/** `rgb-a`: tiles (P…P+1, Q…Q+1); R 10 + (col mod 200), G 20 + (row mod 200), B 200 − (col mod 100); nodata 0: G on rows 300–315, every band in the square cols 400–449, rows 100–149. */
const rgbA = fixture({
  id: "rgb-a",
  ...onGrid(P, Q),
  bands: 3,
  nodata: 0,
  value(col, row, band) {
    if (col >= 400 && col < 450 && row >= 100 && row < 150) return 0;
    if (band === 1 && row >= 300 && row < 316) return 0;
    return [10 + (col % 200), 20 + (row % 200), 200 - (col % 100)][band];
  },
  places: { greenless: [300, 305], empty: [420, 120] },
});

/** `rgb-b`: tiles (P+1…P+2, Q…Q+1); R 250 − (col mod 200), G 30 + ((col + row) mod 150), B 40 + (row mod 150); nodata 0: R on cols 100–115. */
const rgbB = fixture({
  id: "rgb-b",
  ...onGrid(P + 1, Q),
  bands: 3,
  nodata: 0,
  value(col, row, band) {
    if (band === 0 && col >= 100 && col < 116) return 0;
    return [250 - (col % 200), 30 + ((col + row) % 150), 40 + (row % 150)][band];
  },
  places: { redless: [105, 200] },
});

export const MOSAIC_FIXTURES = { monoA, monoB, monoC, rgbA, rgbB } as const;

// ---------------------------------------------------------------------------------------------
// STAC scenes: one UInt16 COG a band (B02, B03, B04, B08) in UTM 33N, 10 m pixels, 1024².

export const SCENE_BANDS = ["B02", "B03", "B04", "B08"] as const;
type SceneBand = (typeof SCENE_BANDS)[number];

/**
 * A scene's four band files, `{folder}{band}.tif`, its north-west corner at (east, north) in
 * EPSG:32633, its values those of the first scene plus `add`. B08 has nodata 0 in the square
 * cols 600–699, rows 200–299 (the others have no nodata).
 */
function scene(folder: string, east: number, add: number): Record<SceneBand, MosaicFixture> {
  const values: Record<SceneBand, (col: number, row: number) => number> = {
    B02: (col) => 400 + col,
    B03: (_col, row) => 500 + row,
    B04: (col, row) => 600 + ((col + row) % 256) * 4,
    B08: (col, row) => (col >= 600 && col < 700 && row >= 200 && row < 300 ? 0 : 3000 + 2 * col - row),
  };
  const band = (name: SceneBand) =>
    fixture({
      id: `${folder}${name}`,
      crs: "EPSG:32633",
      width: 1024,
      height: 1024,
      geoTransform: [east, 10, 0, 5345000, 0, -10],
      dataType: "UInt16",
      bands: 1,
      ...(name === "B08" ? { nodata: 0 } : {}),
      cog: MOSAIC_COG,
      value: (col, row) => {
        const v = values[name](col, row);
        return v === 0 ? 0 : v + add;
      },
    });
  return Object.fromEntries(SCENE_BANDS.map((name) => [name, band(name)])) as Record<SceneBand, MosaicFixture>;
}

/** `scene.stac.json`'s files (`scene-B02.tif`…) and the second scene's of `scenes.stac.json`, 5 120 m east (half a scene), in `scene-2/`. */
export const SCENE_FIXTURES = { scene: scene("scene-", 600000, 0), scene2: scene("scene-2/", 605120, 50) } as const;

// ---------------------------------------------------------------------------------------------
// Mapping tile pixels to fixture pixels.

/**
 * The fixture pixel [col, row] that WebMercatorQuad tile z/x/y's pixel (px, py) reads with
 * nearest resampling, or undefined outside the fixture: the pixel its centre falls in. Only for
 * the fixtures on the grid and zooms at or finer than MOSAIC_Z, where a tile reads the full
 * level (a coarser tile reads an overview).
 */
export function gridPixel(f: MosaicFixture, z: number, x: number, y: number, px: number, py: number): [number, number] | undefined {
  if (f.crs !== "EPSG:3857") throw new Error(`${f.id} is not on the WebMercatorQuad grid`);
  if (!Number.isInteger(z) || z < MOSAIC_Z) throw new Error(`gridPixel maps zoom ${MOSAIC_Z} or finer, not ${z}`);
  // In units of a Z pixel, counted from the grid's origin: exact in binary (powers of two).
  const scale = 2 ** (z - MOSAIC_Z);
  const [originX, cell, , originY] = f.geoTransform;
  const [fx, fy] = [Math.round((originX - GRID.origin[0]) / cell), Math.round((GRID.origin[1] - originY) / cell)];
  const col = Math.floor((x * TILE + px + 0.5) / scale) - fx;
  const row = Math.floor((y * TILE + py + 0.5) / scale) - fy;
  return col >= 0 && col < f.width && row >= 0 && row < f.height ? [col, row] : undefined;
}

// ---------------------------------------------------------------------------------------------
// The documents.

/** The quadkey of tile (x, y) at MOSAIC_Z. */
const quadkey = (x: number, y: number) => tileToQuadkey(MOSAIC_Z, x, y);

/**
 * `mono-mosaic.mosaic.json`: the three single-band fixtures, indexed at Z, served at Z−2…Z+1.
 * Each tile lists the fixtures over it, an asset under several quadkeys; q2 lists its three out
 * of alphabetical order (c, a, b) and the keys are written out of lexical order. At Z−1, the
 * parent's lookup is then b, a, c: q0's list (b, a), q1's (b), q2's c, q3's nothing new.
 */
export const MONO_MOSAIC_TILES: Record<string, string[]> = {
  [quadkey(P, Q + 1)]: ["mono-c.tif", "mono-a.tif", "mono-b.tif"],
  [quadkey(P, Q)]: ["mono-b.tif", "mono-a.tif"],
  [quadkey(P + 1, Q)]: ["mono-b.tif"],
  [quadkey(P + 1, Q + 1)]: ["mono-b.tif", "mono-c.tif"],
  [quadkey(P - 1, Q)]: ["mono-a.tif"],
  [quadkey(P - 1, Q + 1)]: ["mono-a.tif"],
  [quadkey(P, Q + 2)]: ["mono-c.tif"],
  [quadkey(P + 1, Q + 2)]: ["mono-c.tif"],
};

/** `rgb-mosaic.mosaic.json`: the two RGB fixtures; where both lie, b before a on the northern tile and a before b on the southern. */
export const RGB_MOSAIC_TILES: Record<string, string[]> = {
  [quadkey(P, Q)]: ["rgb-a.tif"],
  [quadkey(P, Q + 1)]: ["rgb-a.tif"],
  [quadkey(P + 1, Q)]: ["rgb-b.tif", "rgb-a.tif"],
  [quadkey(P + 1, Q + 1)]: ["rgb-a.tif", "rgb-b.tif"],
  [quadkey(P + 2, Q)]: ["rgb-b.tif"],
  [quadkey(P + 2, Q + 1)]: ["rgb-b.tif"],
};

/** A MosaicJSON 0.0.3 document over `tiles`, bounds those of the tiles. */
function mosaicDocument(name: string, tiles: Record<string, string[]>): object {
  const corners = Object.keys(tiles).map((key) => tileToLonLat(key));
  return {
    mosaicjson: "0.0.3",
    name,
    version: "1.0.0",
    minzoom: MOSAIC_Z - 2,
    maxzoom: MOSAIC_Z + 1,
    quadkey_zoom: MOSAIC_Z,
    bounds: [Math.min(...corners.map((c) => c[0])), Math.min(...corners.map((c) => c[1])), Math.max(...corners.map((c) => c[2])), Math.max(...corners.map((c) => c[3]))],
    tiles,
  };
}

/** A quadkey's tile bounds [west, south, east, north] in degrees. */
function tileToLonLat(key: string): [number, number, number, number] {
  const { z, x, y } = quadkeyToTile(key);
  const n = 2 ** z;
  const lon = (i: number) => (i / n) * 360 - 180;
  const lat = (j: number) => (Math.atan(Math.sinh(Math.PI * (1 - (2 * j) / n))) * 180) / Math.PI;
  return [lon(x), lat(y + 1), lon(x + 1), lat(y)];
}

/**
 * The fixture's bounding box in longitude and latitude, as GDAL projects its outline densified
 * with 21 points an edge (the corners alone would cut a UTM scene's curved edges).
 */
function lonLatBbox(f: MapFixture): [number, number, number, number] {
  const [x0, dx, , y0, , dy] = f.geoTransform;
  const steps = Array.from({ length: 21 }, (_, i) => i / 20);
  const outline = steps.flatMap((t) => [[t, 0], [t, 1], [0, t], [1, t]]).map(([u, v]) => `${x0 + u * f.width * dx} ${y0 + v * f.height * dy}`);
  const out = execFileSync("gdaltransform", ["-s_srs", f.crs, "-t_srs", "OGC:CRS84", "-output_xy"], { input: outline.join("\n"), encoding: "utf8" });
  const points = out.trim().split("\n").map((line) => line.split(" ").map(Number));
  const [xs, ys] = [points.map((p) => p[0]), points.map((p) => p[1])];
  return [Math.min(...xs), Math.min(...ys), Math.max(...xs), Math.max(...ys)];
}

/** GDAL's geotransform as STAC's proj:transform, the affine's rows: [a, b, c, d, e, f]. */
const stacTransform = ([x0, dx, rx, y0, ry, dy]: MapFixture["geoTransform"]) => [dx, rx, x0, ry, dy, y0];

const COMMON_NAMES: Record<SceneBand, string> = { B02: "blue", B03: "green", B04: "red", B08: "nir" };

/** A STAC 1.0 Item over a scene's band files (its geometry the bbox, which is all a mosaic reads), hrefs relative to the document (which is at the directory's root). */
function stacItem(id: string, files: Record<SceneBand, MosaicFixture>): object {
  const b02 = files.B02;
  const [west, south, east, north] = lonLatBbox(b02);
  return {
    type: "Feature",
    stac_version: "1.0.0",
    stac_extensions: ["https://stac-extensions.github.io/eo/v1.1.0/schema.json", "https://stac-extensions.github.io/projection/v1.1.0/schema.json"],
    id,
    bbox: [west, south, east, north],
    geometry: { type: "Polygon", coordinates: [[[west, south], [east, south], [east, north], [west, north], [west, south]]] },
    properties: { datetime: "2026-06-01T10:00:00Z", "proj:epsg": 32633, "proj:shape": [b02.height, b02.width], "proj:transform": stacTransform(b02.geoTransform) },
    links: [],
    assets: Object.fromEntries(
      SCENE_BANDS.map((band) => [
        band,
        {
          href: `./${files[band].key}`,
          type: "image/tiff; application=geotiff; profile=cloud-optimized",
          roles: ["data"],
          "eo:bands": [{ name: band, common_name: COMMON_NAMES[band] }],
          ...(files[band].nodata === undefined ? {} : { "raster:bands": [{ nodata: files[band].nodata, data_type: "uint16" }] }),
        },
      ]),
    ),
  };
}

/** `{name}` in MOSAIC_FIXTURE_DIR holding `document` as JSON, written if missing. */
function jsonFixture(name: string, document: () => object): string {
  return cachedFile(path.join(MOSAIC_FIXTURE_DIR, name), (out) => writeFileSync(out, `${JSON.stringify(document(), null, 2)}\n`));
}

/** The documents' names in MOSAIC_FIXTURE_DIR. */
export const MOSAIC_DOCUMENTS = {
  monoMosaic: "mono-mosaic.mosaic.json",
  rgbMosaic: "rgb-mosaic.mosaic.json",
  scene: "scene.stac.json",
  scenes: "scenes.stac.json",
} as const;

/**
 * Every mosaic fixture and document made, if missing; returns MOSAIC_FIXTURE_DIR. Safe to call
 * from test files running at once.
 */
export function mosaicFixtures(): string {
  const cogs = [...Object.values(MOSAIC_FIXTURES), ...Object.values(SCENE_FIXTURES).flatMap((files) => Object.values(files))];
  for (const f of cogs) cachedFile(path.join(MOSAIC_FIXTURE_DIR, f.key), (out, scratch) => writeCog(f, out, scratch));
  jsonFixture(MOSAIC_DOCUMENTS.monoMosaic, () => mosaicDocument("mono-mosaic", MONO_MOSAIC_TILES));
  jsonFixture(MOSAIC_DOCUMENTS.rgbMosaic, () => mosaicDocument("rgb-mosaic", RGB_MOSAIC_TILES));
  const { scene: first, scene2: second } = SCENE_FIXTURES;
  jsonFixture(MOSAIC_DOCUMENTS.scene, () => stacItem("scene", first));
  jsonFixture(MOSAIC_DOCUMENTS.scenes, () => ({ type: "FeatureCollection", features: [stacItem("scene", first), stacItem("scene-2", second)] }));
  return MOSAIC_FIXTURE_DIR;
}
