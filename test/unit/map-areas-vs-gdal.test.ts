// Crops and previews (the areas of /bbox and /preview) against gdalwarp run for the same grid:
// `-te` the box, `-ts` the size, `-t_srs` the CRS painted in, the same resampling, GDAL's default
// overview choice. The area's grid is laid out from the request as the route parses it, then
// warped as a tile is, so each fixture is held to its tile tolerance (map-tiles-vs-gdal). Then the
// sizes a box gets without one (the source's resolution there, shrunk to max_size) against
// GDAL's, and proof that the comparison fails a box one pixel off.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Cog } from "../../regional/cog/cog";
import { prepareArea } from "../../regional/handlers/area";
import { areaGrid } from "../../regional/maps/areas";
import { planGrid, warpPlanned } from "../../regional/maps/warp";
import { Slices } from "../../regional/runtime/slices";
import { LocalCatalog } from "../../regional/source/local";
import { parseAreaRequest, splitFormat, type AreaRequest } from "../../shared/maps/area-request";
import { gdalInfo, gdalRasterize, gdalSuggestedWarpOutput, gdalWarp, gdalWindow, type TilePlanes } from "../support/gdal-reference";
import { boundsOfAll, type Geometry } from "../../shared/maps/feature";
import { MAP_FIXTURES, mapFixture, mapFixtures } from "../support/map-fixtures";
import { exceeded, tileDifference, type Tolerance } from "../support/tile-difference";

type FixtureName = keyof typeof MAP_FIXTURES;

interface Case {
  fixture: FixtureName;
  /** The route's path after the id: `bbox/{box}[/{w}x{h}].{ext}` or `preview[/{w}x{h}].{ext}`. */
  path: string;
  query: string;
  /** The bands GDAL's answer is cut to (one-based). */
  bands: number[];
  what: string;
}

const CASES: Case[] = [
  { fixture: "utmDem", path: "bbox/610000,5080000,622000,5092000/240x300.tif", query: "coord_crs=EPSG:32633&resampling=bilinear", bands: [1], what: "a box in the source's CRS, across nodata" },
  { fixture: "utmRgb", path: "bbox/1588000,5688000,1608000,5703000/400x300.png", query: "coord_crs=EPSG:3857&dst_crs=EPSG:3857&resampling=cubic", bands: [1, 2, 3], what: "reprojected to Web Mercator, cubic" },
  { fixture: "wgs84Uint16", path: "bbox/10.30013,49.47021,10.62047,49.57993/320x220.tif", query: "bidx=3,1,2&resampling=nearest", bands: [3, 1, 2], what: "in lon/lat, three bands in another order" },
  { fixture: "mercatorGrey", path: "preview.png", query: "max_size=256&resampling=bilinear", bands: [1], what: "a preview, from an overview" },
  { fixture: "utmDem", path: "preview/100x150.tif", query: "resampling=nearest", bands: [1], what: "a preview at a size, pixels not square" },
];

const TOLERANCES: Record<FixtureName, Tolerance> = {
  utmRgb: { meanAbs: 1.5, p99: 6, validityMismatch: 0.001 },
  utmDem: { meanAbs: 0.01, p99: 0.05, validityMismatch: 0.001 },
  wgs84Uint16: { meanAbs: 12, p99: 40, validityMismatch: 0.001 },
  mercatorGrey: { meanAbs: 0.05, p99: 1, validityMismatch: 0.001 },
};

const cogs = new Map<FixtureName, Cog>();
const scratch = mkdtempSync(path.join(tmpdir(), "tessera-area-tiff-"));

beforeAll(async () => {
  const catalog = new LocalCatalog(mapFixtures());
  for (const name of Object.keys(MAP_FIXTURES) as FixtureName[]) cogs.set(name, await Cog.open(await catalog.open(MAP_FIXTURES[name].id, undefined)));
});

afterAll(async () => {
  await Promise.all([...cogs.values()].map((cog) => cog.close()));
  rmSync(scratch, { recursive: true, force: true });
});

/** The case's request as the decoder's routes parse it. */
function request(c: Pick<Case, "path" | "query">): AreaRequest {
  const [kind, ...rest] = c.path.split("/");
  const query = new URLSearchParams(c.query);
  if (kind === "bbox") {
    const [bbox, file] = rest.length === 1 ? splitFormat(rest[0]) : rest;
    return parseAreaRequest("bbox", { bbox, file }, query);
  }
  return parseAreaRequest("preview", { file: rest[0] ?? splitFormat(kind)[1] }, query);
}

async function ours(c: Case, req = request(c)): Promise<TilePlanes & { grid: ReturnType<typeof areaGrid> }> {
  const cog = cogs.get(c.fixture)!;
  const grid = areaGrid(cog.levels[0], cog.geo!, req);
  const slices = new Slices(new AbortController().signal);
  const warped = await warpPlanned(cog, await planGrid(cog, grid, req.bidx, req.resampling, slices), req, slices);
  return { ...warped, grid };
}

/** gdalwarp onto the grid `ours` laid out: its bounds, size and CRS, shifted `shiftPixels` east. */
async function reference(c: Case, grid: ReturnType<typeof areaGrid>, shiftPixels = 0): Promise<TilePlanes> {
  const [x0, cell, , y1, , cellY] = grid.affine;
  const shift = cell * shiftPixels;
  const bounds = [x0 + shift, y1 + grid.height * cellY, x0 + grid.width * cell + shift, y1];
  const crs = grid.crs.name.startsWith("EPSG:") ? grid.crs.name : grid.crs.definition;
  const all = await gdalWarp(mapFixture(MAP_FIXTURES[c.fixture]), { crs, bounds, width: grid.width, height: grid.height, resampling: request(c).resampling });
  return { ...all, bands: c.bands.map((b) => all.bands[b - 1]), valid: c.bands.map((b) => all.valid[b - 1]) };
}

describe("areas against gdalwarp's", () => {
  it.each(CASES.map((c) => ({ ...c, name: `${c.fixture}: ${c.what}` })))("$name", async (c) => {
    const mine = await ours(c);
    const d = tileDifference(mine, await reference(c, mine.grid));
    expect(d.bothValid, c.path).toBeGreaterThan(0.05);
    expect(exceeded(d, TOLERANCES[c.fixture]), c.path).toEqual([]);
  });

  it("a box one pixel off fails the comparison", async () => {
    const c = CASES[0];
    const mine = await ours(c);
    expect(exceeded(tileDifference(mine, await reference(c, mine.grid, 1)), TOLERANCES[c.fixture])).not.toEqual([]);
  });
});

describe("an area's size", () => {
  it("a box without a size gets the source's resolution in the CRS painted in, as gdalwarp suggests it", async () => {
    // The whole UTM DEM's box reprojected to Web Mercator: gdalwarp's grid for the file there.
    const file = mapFixture(MAP_FIXTURES.utmDem);
    const gdal = await gdalSuggestedWarpOutput(file, "EPSG:3857");
    const [x0, res, , y1, , resY] = gdal.geoTransform;
    const box = [x0, y1 + gdal.height * resY, x0 + gdal.width * res, y1].join(",");
    const { grid } = await ours({ ...CASES[0], path: `bbox/${box}.tif`, query: "coord_crs=EPSG:3857&dst_crs=EPSG:3857" });
    expect([grid.width, grid.height]).toEqual([gdal.width, gdal.height]);
    expect(grid.affine[1]).toBeCloseTo(res, 6);
  });

  it("max_size shrinks the longest side, the shape kept (rounded up), and never enlarges", async () => {
    const dem = MAP_FIXTURES.utmDem; // 1000 × 1500 pixels
    const { grid } = await ours({ ...CASES[0], path: "preview.png", query: "max_size=300" });
    expect([grid.width, grid.height]).toEqual([Math.ceil((300 * dem.width) / dem.height), 300]);
    const small = await ours({ ...CASES[0], path: "preview.png", query: "max_size=5000" });
    expect([small.grid.width, small.grid.height]).toEqual([dem.width, dem.height]);
  });
});

describe("a GeoTIFF crop, read back by GDAL", () => {
  /** The decoder's answer for the case, as the area route renders it (a feature's masked by `geometries`), written to a file GDAL opens. */
  async function tiff(c: Pick<Case, "fixture" | "path" | "query">, geometries?: Geometry[]): Promise<string> {
    const cog = cogs.get(c.fixture)!;
    const signal = new AbortController().signal;
    // A feature's path here is always `feature/{w}x{h}.{ext}`.
    const feature = () => ({ ...parseAreaRequest("feature", { file: c.path.slice("feature/".length) }, new URLSearchParams(c.query)), bbox: boundsOfAll(geometries!) });
    const req = geometries ? feature() : request(c);
    const prepared = await prepareArea(cog, MAP_FIXTURES[c.fixture].id, req, signal, geometries);
    const work = cog.budget.tryReserve(prepared.cost.bytes, "a crop", "tile");
    try {
      const out = await prepared.render(signal, work, "tile");
      expect(out.contentType).toBe("image/tiff; application=geotiff");
      const file = path.join(scratch, `${c.fixture}-${Math.random().toString(36).slice(2)}.tif`);
      writeFileSync(file, out.body);
      return file;
    } finally {
      work.release();
    }
  }

  it("a box of the DEM in its own CRS: EPSG:32633, the box's geotransform, float32, nodata −9999, GDAL's own pixels", async () => {
    const c = { fixture: "utmDem" as const, path: "bbox/610000,5080000,622000,5092000/240x300.tif", query: "coord_crs=EPSG:32633&resampling=nearest" };
    const file = await tiff(c);
    const info = (await gdalInfo(file)) as { geoTransform: number[]; size: number[]; bands: { type: string; noDataValue: number }[]; stac?: { "proj:epsg"?: number } };
    expect(info.size).toEqual([240, 300]);
    expect(info.geoTransform).toEqual([610000, 50, 0, 5092000, 0, -40]);
    expect(info.bands.map((b) => [b.type, b.noDataValue])).toEqual([["Float32", -9999]]);
    expect(info.stac?.["proj:epsg"]).toBe(32633);
    // Every pixel as GDAL reads the file, against gdalwarp's for the same grid (nodata as NaN there).
    const [read] = (await gdalWindow(file, 0, [0, 0, 240, 300], [1])).values;
    const mine = await ours({ ...CASES[0], ...c });
    const ref = await reference({ ...CASES[0], ...c }, mine.grid);
    let differ = 0;
    for (let i = 0; i < read.length; i++) {
      const expected = ref.valid[0][i] ? ref.bands[0][i] : -9999;
      if (Math.fround(read[i]) !== Math.fround(expected)) differ++;
    }
    expect(differ).toBe(0);
  });

  it("three uint16 bands reprojected to Web Mercator keep their type, CRS and band names", async () => {
    const file = await tiff({ fixture: "wgs84Uint16", path: "bbox/10.3,49.47,10.62,49.58/160x110.tif", query: "dst_crs=EPSG:3857&bidx=3,1,2&resampling=bilinear" });
    const info = (await gdalInfo(file)) as { bands: { type: string; description?: string }[]; stac?: { "proj:epsg"?: number } };
    expect(info.bands.map((b) => [b.type, b.description])).toEqual([
      ["UInt16", "b3"],
      ["UInt16", "b1"],
      ["UInt16", "b2"],
    ]);
    expect(info.stac?.["proj:epsg"]).toBe(3857);
  });

  it("an expression is written as float32, named by its text", async () => {
    const file = await tiff({ fixture: "wgs84Uint16", path: "preview/60x40.tif", query: `expression=${encodeURIComponent("(b1-b2)/(b1+b2)")}` });
    const info = (await gdalInfo(file)) as { bands: { type: string; description?: string }[]; stac?: { "proj:epsg"?: number } };
    expect(info.bands.map((b) => [b.type, b.description])).toEqual([["Float32", "(b1-b2)/(b1+b2)"]]);
    expect(info.stac?.["proj:epsg"]).toBe(4326);
  });

  it("a feature of the DEM: its box, masked outside its polygons (a hole, and a bow-tie's two lobes) as gdal_rasterize masks them, GDAL's own pixels inside", async () => {
    // In longitude and latitude, over the DEM's middle: a square with a square hole, and a bow-tie beside it.
    const square: Geometry = {
      type: "Polygon",
      coordinates: [
        [[16.33, 45.95], [16.43, 45.95], [16.43, 46.03], [16.33, 46.03], [16.33, 45.95]],
        [[16.36, 45.98], [16.40, 45.98], [16.40, 46.0], [16.36, 46.0], [16.36, 45.98]],
      ],
    };
    const bowTie: Geometry = { type: "Polygon", coordinates: [[[16.44, 45.95], [16.5, 46.03], [16.5, 45.95], [16.44, 46.03], [16.44, 45.95]]] };
    const c = { fixture: "utmDem" as const, path: "feature/300x200.tif", query: "resampling=nearest" };
    const file = await tiff(c, [square, bowTie]);
    const info = (await gdalInfo(file)) as { geoTransform: number[]; size: number[] };
    expect(info.size).toEqual([300, 200]);
    const [read] = (await gdalWindow(file, 0, [0, 0, 300, 200], [1])).values;
    const t = info.geoTransform;
    const bounds = [t[0], t[3] + 200 * t[5], t[0] + 300 * t[1], t[3]];
    const ref = await gdalWarp(mapFixture(MAP_FIXTURES.utmDem), { crs: "EPSG:32633", bounds, width: 300, height: 200, resampling: "nearest" });
    const inside = await gdalRasterize({ type: "GeometryCollection", geometries: [square, bowTie] }, "EPSG:32633", t, 300, 200);
    let masked = 0;
    let differ = 0;
    for (let i = 0; i < read.length; i++) {
      const expected = inside[i] && ref.valid[0][i] ? ref.bands[0][i] : -9999;
      if (!inside[i]) masked++;
      if (Math.fround(read[i]) !== Math.fround(expected)) differ++;
    }
    // The hole and the space between the lobes are masked, as well as the box's corners.
    expect(masked).toBeGreaterThan(0.3 * read.length);
    expect(differ).toBe(0);
  });
});
