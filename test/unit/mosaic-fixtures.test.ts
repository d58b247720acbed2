// The mosaic fixtures are what the mosaic tests compute their expected pixels from, so they are
// held to what they claim: GDAL reads back the values and validity the value functions give,
// gridPixel maps a tile's pixels as gdalwarp does, the MosaicJSON documents parse and look up as
// their comments say, the STAC documents load, and the overlaps hold the cases the tests need.
import { readFileSync, statSync } from "node:fs";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { mosaicAssets, parseMosaicJson, quadkeyToTile, tileToQuadkey } from "../../shared/maps/mosaic-json";
import { loadStac, selectAssets } from "../../shared/maps/stac";
import { tileBounds, tileMatrixSet } from "../../shared/maps/tile-matrix-sets";
import { gdalInfo, gdalWarpTile, gdalWindow } from "../support/gdal-reference";
import {
  gridPixel,
  MONO_MOSAIC_TILES,
  MOSAIC_CHILDREN,
  MOSAIC_DOCUMENTS,
  MOSAIC_FIXTURE_DIR,
  MOSAIC_FIXTURES,
  MOSAIC_PARENT,
  MOSAIC_Z,
  mosaicFixtures,
  RGB_MOSAIC_TILES,
  SCENE_FIXTURES,
  type MosaicFixture,
} from "../support/mosaic-fixtures";

const WEB_MERCATOR = tileMatrixSet("WebMercatorQuad");
const { monoA, monoB, monoC, rgbA, rgbB } = MOSAIC_FIXTURES;
const allCogs: MosaicFixture[] = [...Object.values(MOSAIC_FIXTURES), ...Object.values(SCENE_FIXTURES).flatMap((files) => Object.values(files))];
const file = (f: MosaicFixture) => path.join(MOSAIC_FIXTURE_DIR, f.key);
const [q0, q1, q2, q3] = MOSAIC_CHILDREN;
type Tile = typeof q0;

beforeAll(() => {
  mosaicFixtures();
}, 120_000);

describe("making the fixtures", () => {
  it("puts every COG and document in one folder after one call, and a second call rewrites none", () => {
    const names = [...allCogs.map((f) => f.key), ...Object.values(MOSAIC_DOCUMENTS)];
    const before = names.map((name) => statSync(path.join(MOSAIC_FIXTURE_DIR, name)).mtimeMs);
    expect(mosaicFixtures()).toBe(MOSAIC_FIXTURE_DIR);
    expect(names.map((name) => statSync(path.join(MOSAIC_FIXTURE_DIR, name)).mtimeMs)).toEqual(before);
  });
});

describe("GDAL reads what the value functions claim", () => {
  it.each(allCogs.map((f) => [f.key, f] as const))("%s: georeference, type, nodata and blocks", async (_key, f) => {
    const info = (await gdalInfo(file(f))) as { geoTransform: number[]; size: number[]; bands: { type: string; noDataValue?: number; block: number[] }[] };
    expect(info.geoTransform).toEqual(f.geoTransform);
    expect(info.size).toEqual([f.width, f.height]);
    expect(info.bands).toHaveLength(f.bands);
    for (const band of info.bands) {
      expect(band.type).toBe(f.dataType);
      expect(band.noDataValue).toBe(f.nodata);
      expect(band.block).toEqual([256, 256]);
    }
  });

  // A 24² window around each named place (the holes, bands and masks) and at the corners.
  it.each(allCogs.map((f) => [f.key, f] as const))("%s: values and validity around its places and corners", async (_key, f) => {
    const places = [...Object.values(f.places), [0, 0], [f.width - 1, f.height - 1]];
    const bands = Array.from({ length: f.bands }, (_, b) => b + 1);
    for (const [col, row] of places) {
      const [x0, y0] = [Math.max(0, Math.min(f.width - 24, col - 12)), Math.max(0, Math.min(f.height - 24, row - 12))];
      const { values, mask } = await gdalWindow(file(f), 0, [x0, y0, x0 + 24, y0 + 24], bands);
      const expected = bands.map((b) => Float64Array.from({ length: 24 * 24 }, (_, i) => f.value(x0 + (i % 24), y0 + Math.floor(i / 24), b - 1)));
      const validity = bands.map((b) => Uint8Array.from({ length: 24 * 24 }, (_, i) => (f.valid(x0 + (i % 24), y0 + Math.floor(i / 24), b - 1) ? 1 : 0)));
      expect(values).toEqual(expected);
      expect(mask).toEqual(validity);
    }
  });

  it("has overviews of stored values, not blends (nearest resampling)", async () => {
    const { values } = await gdalWindow(file(monoC), 1, [0, 0, 256, 256], [1]);
    expect(new Set(values[0])).toEqual(new Set([110, 130]));
  });

  it("has the invalid pixels its comments name", () => {
    expect(monoA.valid(350, 350, 0)).toBe(false);
    expect(monoB.valid(100, 411, 0)).toBe(false);
    expect(monoC.valid(100, 100, 0)).toBe(false);
    expect(monoC.value(100, 100, 0)).toBe(110); // masked, not nodata: the value is stored
    expect([0, 1, 2].map((b) => rgbA.valid(300, 305, b))).toEqual([true, false, true]);
    expect([0, 1, 2].map((b) => rgbA.valid(420, 120, b))).toEqual([false, false, false]);
    expect([0, 1, 2].map((b) => rgbB.valid(105, 200, b))).toEqual([false, true, true]);
    expect(SCENE_FIXTURES.scene.B08.valid(650, 250, 0)).toBe(false);
    expect(SCENE_FIXTURES.scene2.B08.valid(650, 250, 0)).toBe(false);
    expect(SCENE_FIXTURES.scene2.B02.value(3, 0, 0)).toBe(SCENE_FIXTURES.scene.B02.value(3, 0, 0) + 50);
  });
});

describe("gridPixel", () => {
  // gdalwarp's nearest tile, its bounds from the tile matrix set, against the value function at
  // gridPixel's answer: the same mapping, found independently.
  const tiles: [string, MosaicFixture, Tile][] = [
    ["mono-a on q2", monoA, q2],
    ["mono-c on q2 (its masked disc)", monoC, q2],
    ["mono-c east of its data", monoC, { ...q3, x: q3.x + 1 }],
    ["mono-b at Z+1", monoB, { z: MOSAIC_Z + 1, x: 2 * q1.x + 1, y: 2 * q1.y + 1 }],
    ["rgb-b on its north-west tile", rgbB, q1],
  ];
  it.each(tiles)("maps %s as gdalwarp does", async (_what, f, { z, x, y }) => {
    const warped = await gdalWarpTile(file(f), WEB_MERCATOR, tileBounds(WEB_MERCATOR, z, x, y), 256, "nearest");
    for (let band = 0; band < f.bands; band++) {
      const expected = Float32Array.from({ length: 256 * 256 }, (_, i) => {
        const pixel = gridPixel(f, z, x, y, i % 256, Math.floor(i / 256));
        return pixel && f.valid(pixel[0], pixel[1], band) ? f.value(pixel[0], pixel[1], band) : NaN;
      });
      expect(warped.bands[band]).toEqual(expected);
    }
  });
  it("refuses zooms coarser than the grid's, and fixtures off it", () => {
    expect(() => gridPixel(monoA, MOSAIC_Z - 1, 0, 0, 0, 0)).toThrow(/zoom/);
    expect(() => gridPixel(SCENE_FIXTURES.scene.B02, MOSAIC_Z, 0, 0, 0, 0)).toThrow(/grid/);
  });
});

describe("the overlaps hold every case the pixel-selection tests need", () => {
  /** Per pixel of tile q2, each single-band fixture's value there when valid, else undefined. */
  const q2Values = () =>
    Array.from({ length: 256 * 256 }, (_, i) =>
      [monoA, monoB, monoC].map((f) => {
        const pixel = gridPixel(f, q2.z, q2.x, q2.y, i % 256, Math.floor(i / 256));
        return pixel && f.valid(pixel[0], pixel[1], 0) ? f.value(pixel[0], pixel[1], 0) : undefined;
      }),
    );
  it("q2 lies under all three, with pixels where all are valid and differ, ties, and each alone invalid", () => {
    const values = q2Values();
    const count = (test: (v: (number | undefined)[]) => boolean) => values.filter(test).length;
    const [a, b, c] = [0, 1, 2];
    expect(count((v) => v.every((x) => x !== undefined) && new Set(v).size === 3)).toBeGreaterThan(1000);
    expect(count((v) => v[a] !== undefined && v[a] === v[b] && v[c] !== v[a])).toBeGreaterThan(100);
    expect(count((v) => v[a] !== undefined && v[a] === v[c] && v[b] !== v[a])).toBeGreaterThan(100);
    for (const invalid of [a, b, c]) {
      expect(count((v) => v[invalid] === undefined && v.filter((x) => x !== undefined).length === 2)).toBeGreaterThan(100);
    }
    expect(count((v) => v.filter((x) => x !== undefined).length === 1)).toBeGreaterThan(10);
  });
});

describe("the MosaicJSON documents", () => {
  const read = (name: string) => parseMosaicJson(readFileSync(path.join(MOSAIC_FIXTURE_DIR, name), "utf8"));
  const at = (m: ReturnType<typeof read>, { z, x, y }: Tile) => mosaicAssets(m, z, x, y);
  /** Whether `f` has a pixel under tile z/x/y (at Z, its corners decide: the fixtures are whole tiles). */
  const covers = (f: MosaicFixture, { z, x, y }: Tile) => gridPixel(f, z, x, y, 0, 0) !== undefined;

  it("index exactly the fixtures under each tile, listing each asset as a store key of the folder", () => {
    for (const [name, tiles, fixtures] of [
      [MOSAIC_DOCUMENTS.monoMosaic, MONO_MOSAIC_TILES, [monoA, monoB, monoC]],
      [MOSAIC_DOCUMENTS.rgbMosaic, RGB_MOSAIC_TILES, [rgbA, rgbB]],
    ] as const) {
      const m = read(name);
      expect(m).toMatchObject({ quadkeyZoom: MOSAIC_Z, minzoom: MOSAIC_Z - 2, maxzoom: MOSAIC_Z + 1, assetPrefix: "" });
      expect(m.quadkeys).toEqual(Object.keys(tiles).sort());
      for (const key of m.quadkeys) {
        const tile = quadkeyToTile(key);
        expect(new Set(m.assets.get(key))).toEqual(new Set(fixtures.filter((f) => covers(f, tile)).map((f) => f.key)));
        for (const asset of m.assets.get(key)!) expect(statSync(path.join(MOSAIC_FIXTURE_DIR, asset)).isFile()).toBe(true);
      }
    }
  });
  it("mono-mosaic: an asset under several quadkeys, a list out of alphabetical order, and the coarser lookup's rule", () => {
    const m = read(MOSAIC_DOCUMENTS.monoMosaic);
    expect([...m.assets.values()].filter((list) => list.includes(monoA.key))).toHaveLength(4);
    expect(at(m, q2)).toEqual(["mono-c.tif", "mono-a.tif", "mono-b.tif"]);
    expect(at(m, { z: MOSAIC_Z + 1, x: 2 * q2.x + 1, y: 2 * q2.y })).toEqual(["mono-c.tif", "mono-a.tif", "mono-b.tif"]);
    // Z−1: q0 [b, a], q1 [b], q2 [c, a, b], q3 [b, c] in lexical order, first occurrences kept:
    // neither alphabetical (a, b, c) nor q2's order.
    expect(at(m, MOSAIC_PARENT)).toEqual(["mono-b.tif", "mono-a.tif", "mono-c.tif"]);
    expect(at(m, { ...MOSAIC_PARENT, x: MOSAIC_PARENT.x - 1 })).toEqual(["mono-a.tif"]);
    expect(at(m, { z: MOSAIC_Z - 2, x: MOSAIC_PARENT.x >> 1, y: MOSAIC_PARENT.y >> 1 })).toHaveLength(3);
    expect(at(m, { z: MOSAIC_Z - 3, x: MOSAIC_PARENT.x >> 2, y: MOSAIC_PARENT.y >> 2 })).toEqual([]); // under minzoom
    expect(tileToQuadkey(q2.z, q2.x, q2.y)).toBe(Object.keys(MONO_MOSAIC_TILES)[0]); // written first, sorted third
  });
  it("rgb-mosaic: where both lie, b first on the northern tile and a first on the southern", () => {
    const m = read(MOSAIC_DOCUMENTS.rgbMosaic);
    expect(at(m, q1)).toEqual(["rgb-b.tif", "rgb-a.tif"]);
    expect(at(m, q3)).toEqual(["rgb-a.tif", "rgb-b.tif"]);
    expect(at(m, MOSAIC_PARENT)).toEqual(["rgb-a.tif", "rgb-b.tif"]);
  });
});

describe("the STAC documents", () => {
  /** Documents read from the folder by store key, as a local data directory serves them. */
  const load = (key: string) => readFile(path.join(MOSAIC_FIXTURE_DIR, key), "utf8");
  const loadDocument = async (name: string) => loadStac(await load(name), name, load);

  it("scene.stac.json: one Item, four single-band assets in EPSG:32633, its bbox around GDAL's corners", async () => {
    const [scene] = await loadDocument(MOSAIC_DOCUMENTS.scene);
    expect(scene.id).toBe("scene");
    expect(scene.epsg).toBe(32633);
    expect(selectAssets(scene, ["B04", "B03", "B02", "B08"])).toEqual(
      ["B04", "B03", "B02", "B08"].map((key) => ({ key, href: `scene-${key}.tif` })),
    );
    for (const asset of Object.values(scene.assets)) expect(asset.bands).toBe(1);
    // gdalinfo's wgs84Extent projects the corners only: the bbox holds them, and the curved
    // edges bulge past them by less than a 10 m pixel (1e-4° here).
    const extent = (await gdalInfo(file(SCENE_FIXTURES.scene.B02))) as { wgs84Extent: { coordinates: number[][][] } };
    const ring = extent.wgs84Extent.coordinates[0];
    const corners = [Math.min(...ring.map((p) => p[0])), Math.min(...ring.map((p) => p[1])), Math.max(...ring.map((p) => p[0])), Math.max(...ring.map((p) => p[1]))];
    const [west, south, east, north] = scene.bbox;
    expect([west, south].every((v, i) => v <= corners[i] + 1e-7 && v > corners[i] - 1e-4)).toBe(true);
    expect([east, north].every((v, i) => v >= corners[i + 2] - 1e-7 && v < corners[i + 2] + 1e-4)).toBe(true);
  });
  it("scenes.stac.json: two overlapping Items, the second's files in a subfolder", async () => {
    const [first, second] = await loadDocument(MOSAIC_DOCUMENTS.scenes);
    expect([first.id, second.id]).toEqual(["scene", "scene-2"]);
    expect(second.assets.B08.href).toBe("scene-2/B08.tif");
    for (const item of [first, second]) {
      for (const { href } of Object.values(item.assets)) expect(statSync(path.join(MOSAIC_FIXTURE_DIR, href)).isFile()).toBe(true);
    }
    // Half a scene apart: the second's west edge is inside the first.
    expect(first.bbox[0]).toBeLessThan(second.bbox[0]);
    expect(second.bbox[0]).toBeLessThan(first.bbox[2]);
  });
});
