// Sources across longitude ±180° and around a pole, against GDAL: where the decoder places them
// (lon/lat bounds and each set's bounds, against points GDAL transforms), and their warped tiles
// on both sides of 180° and at the poles against gdalwarp's of the same tile bounds, size and
// resampling (the tolerance approach of map-tiles-vs-gdal). GDAL 3.6 warps a lon/lat source
// whose longitudes run past 180° (170°…190°) to tiles at −180°…−170° itself, as the decoder does.
// Then boxes on both sides of 180° and round a pole against gdalwarp's, points on both sides
// against gdallocationinfo's pixel, and the CRSs such sources come in against GDAL's conversion.
import { execFileSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Cog } from "../../regional/cog/cog";
import { areaGrid } from "../../regional/maps/areas";
import { conversion, crsOfName, LON_LAT } from "../../regional/maps/crs";
import { pixelOf } from "../../regional/maps/point";
import { planGrid, planTile, warpPlanned, warpTile } from "../../regional/maps/warp";
import { Slices } from "../../regional/runtime/slices";
import { LocalCatalog } from "../../regional/source/local";
import { tileBounds, tileMatrixSet } from "../../shared/maps/tile-matrix-sets";
import { parseTileRequest, type Resampling } from "../../shared/maps/tile-request";
import { gdalTransform, gdalWarp, gdalWarpTile, type TilePlanes } from "../support/gdal-reference";
import { parseAreaRequest } from "../../shared/maps/area-request";
import { mapFixture } from "../support/map-fixtures";
import { exceeded, tileDifference, type TileDifference, type Tolerance } from "../support/tile-difference";
import { WORLD_EDGE_FIXTURES, worldEdgeFixtures } from "../support/world-edge-fixtures";

type FixtureName = keyof typeof WORLD_EDGE_FIXTURES;

interface Case {
  fixture: FixtureName;
  set: "WebMercatorQuad" | "WorldCRS84Quad";
  z: number;
  x: number;
  y: number;
  resampling: Resampling;
  what: string;
  /**
   * More gdalwarp arguments: `-ovr NONE` where GDAL 3.6 reads an overview for a polar source's
   * lon/lat tile (its level choice looks at the tile's own ground; the decoder's, at the
   * resolution gdalwarp suggests for the whole source, as for every source: docs/maps.md).
   */
  gdal?: string[];
}

const CASES: Case[] = [
  { fixture: "lonLatAcross", set: "WorldCRS84Quad", z: 6, x: 127, y: 31, resampling: "nearest", what: "west of 180°, the source's own CRS" },
  { fixture: "lonLatAcross", set: "WorldCRS84Quad", z: 6, x: 0, y: 31, resampling: "bilinear", what: "east of 180°, its longitudes past 180°" },
  { fixture: "lonLatAcross", set: "WebMercatorQuad", z: 7, x: 127, y: 63, resampling: "cubic", what: "west of 180°" },
  { fixture: "lonLatAcross", set: "WebMercatorQuad", z: 7, x: 0, y: 63, resampling: "bilinear", what: "east of 180°" },
  { fixture: "lonLatAcross", set: "WebMercatorQuad", z: 5, x: 0, y: 15, resampling: "nearest", what: "an overview, east of 180°" },
  { fixture: "mercatorAcross", set: "WebMercatorQuad", z: 8, x: 255, y: 140, resampling: "bilinear", what: "west of 180°" },
  { fixture: "mercatorAcross", set: "WebMercatorQuad", z: 8, x: 0, y: 140, resampling: "cubic", what: "east of 180°" },
  { fixture: "mercatorAcross", set: "WorldCRS84Quad", z: 7, x: 255, y: 76, resampling: "nearest", what: "west of 180°" },
  { fixture: "mercatorAcross", set: "WorldCRS84Quad", z: 7, x: 0, y: 76, resampling: "bilinear", what: "east of 180°" },
  { fixture: "arctic", set: "WebMercatorQuad", z: 3, x: 0, y: 0, resampling: "bilinear", what: "the top row, up to 85.05°N" },
  { fixture: "arctic", set: "WebMercatorQuad", z: 4, x: 9, y: 1, resampling: "nearest", what: "below the top row" },
  { fixture: "arctic", set: "WorldCRS84Quad", z: 3, x: 2, y: 0, resampling: "bilinear", what: "touching 90°N", gdal: ["-ovr", "NONE"] },
  { fixture: "arctic", set: "WorldCRS84Quad", z: 4, x: 5, y: 0, resampling: "bilinear", what: "touching 90°N, the full level" },
  { fixture: "arctic", set: "WorldCRS84Quad", z: 3, x: 13, y: 0, resampling: "nearest", what: "touching 90°N, across 135°E" },
  { fixture: "antarctic", set: "WebMercatorQuad", z: 3, x: 5, y: 7, resampling: "bilinear", what: "the bottom row, down to 85.05°S" },
  { fixture: "antarctic", set: "WorldCRS84Quad", z: 3, x: 8, y: 7, resampling: "cubic", what: "touching 90°S" },
];

/** 8-bit levels, as the map fixtures' grey one; validity on the data's edge, as theirs. */
const TOLERANCE: Tolerance = { meanAbs: 0.1, p99: 1, validityMismatch: 0.001 };

const cogs = new Map<FixtureName, Cog>();
const measured: { label: string; d: TileDifference }[] = [];

beforeAll(async () => {
  const catalog = new LocalCatalog(worldEdgeFixtures());
  for (const name of Object.keys(WORLD_EDGE_FIXTURES) as FixtureName[]) {
    cogs.set(name, await Cog.open(await catalog.open(WORLD_EDGE_FIXTURES[name].id, undefined)));
  }
});

afterAll(async () => {
  await Promise.all([...cogs.values()].map((cog) => cog.close()));
  if (measured.length) console.log(["tile differences from gdalwarp (mean |Δ|, p99 |Δ|, validity mismatch %, both valid %):", ...measured.map(row)].join("\n"));
});

const row = ({ label, d }: { label: string; d: TileDifference }) =>
  `  ${label.padEnd(60)} ${d.meanAbs.toFixed(3).padStart(8)} ${d.p99.toFixed(3).padStart(8)} ${(d.validityMismatch * 100).toFixed(2).padStart(6)} ${(d.bothValid * 100).toFixed(0).padStart(4)}`;

const labelOf = (c: Case) => `${c.fixture} ${c.set} ${c.z}/${c.x}/${c.y} ${c.resampling}`;

async function ours(c: Case): Promise<TilePlanes> {
  const req = parseTileRequest({ tileMatrixSet: c.set, z: String(c.z), x: String(c.x), y: `${c.y}.png` }, new URLSearchParams({ resampling: c.resampling }));
  return warpTile(cogs.get(c.fixture)!, req);
}

/** gdalwarp's tile (or, for a deliberate mistake, the tile in column `x`). */
async function reference(c: Case, { x = c.x } = {}): Promise<TilePlanes> {
  const tms = tileMatrixSet(c.set);
  return gdalWarpTile(mapFixture(WORLD_EDGE_FIXTURES[c.fixture]), tms, tileBounds(tms, c.z, x, c.y), 256, c.resampling, c.gdal);
}

describe("tiles across 180° and at the poles, against gdalwarp's", () => {
  it.each(CASES.map((c) => ({ ...c, name: `${c.fixture}: ${c.set} z${c.z} ${c.what}` })))("$name", async (c) => {
    const d = tileDifference(await ours(c), await reference(c));
    measured.push({ label: labelOf(c), d });
    expect(d.bothValid, labelOf(c)).toBeGreaterThan(0.03);
    expect(exceeded(d, TOLERANCE), labelOf(c)).toEqual([]);
  });

  it.each(CASES.filter((c) => c.x === 0 || c.fixture === "arctic").map((c) => ({ ...c, name: `${c.fixture}: ${c.set} z${c.z} ${c.what}` })))(
    "fails against the next tile east: $name",
    async (c) => {
      const d = tileDifference(await ours(c), await reference(c, { x: c.x + 1 }));
      measured.push({ label: `${labelOf(c)} against x+1`, d });
      expect(exceeded(d, TOLERANCE), labelOf(c)).not.toEqual([]);
    },
  );
});

/** Degrees or metres within which GDAL's transformed points and the decoder's bounds agree. */
const PLACE_TOLERANCE = { degrees: 1e-7, metres: 0.01 };

/** GDAL's transform of the fixture's corners to `crs`, [x, y] each. */
async function corners(name: FixtureName, crs: string): Promise<[number, number][]> {
  const { geoTransform: [x0, dx, , y0, , dy], width, height } = WORLD_EDGE_FIXTURES[name];
  const pixels: [number, number][] = [[0, 0], [width, 0], [0, height], [width, height]];
  return gdalTransform(pixels.map(([c, r]) => [x0 + c * dx, y0 + r * dy]), WORLD_EDGE_FIXTURES[name].crs, crs);
}

function expectNear(got: readonly number[], expected: readonly number[], within: number, what: string): void {
  expected.forEach((e, i) => expect(Math.abs(got[i] - e), `${what}[${i}] ${got[i]} vs ${e}`).toBeLessThanOrEqual(within));
}

const HALF_EARTH = 20037508.3427892;

describe("where a source at the world's edges lies", () => {
  it.each(["lonLatAcross", "mercatorAcross"] as const)("%s across 180°: one box, its east edge past 180° (past the set's east edge)", async (name) => {
    const info = cogs.get(name)!.info(name).georeference!;
    expect(info.crossesAntimeridian).toBe(true);
    // The corners as GDAL places them, west of 180° as they are, east of it one world on.
    const unwrap = (period: number) => ([x, y]: [number, number]): [number, number] => [x < 0 ? x + period : x, y];
    const lonLat = (await corners(name, "EPSG:4326")).map(unwrap(360));
    const box = (points: [number, number][]) => [Math.min(...points.map((p) => p[0])), Math.min(...points.map((p) => p[1])), Math.max(...points.map((p) => p[0])), Math.max(...points.map((p) => p[1]))];
    expectNear(info.lonLatBounds, box(lonLat), PLACE_TOLERANCE.degrees, "lonLatBounds");
    expectNear(info.tiling.WorldCRS84Quad.bounds, box(lonLat), PLACE_TOLERANCE.degrees, "WorldCRS84Quad bounds");
    const mercator = (await corners(name, "EPSG:3857")).map(unwrap(2 * HALF_EARTH));
    expectNear(info.tiling.WebMercatorQuad.bounds, box(mercator), PLACE_TOLERANCE.metres, "WebMercatorQuad bounds");
    expect(info.lonLatBounds[0]).toBeLessThan(180);
    expect(info.lonLatBounds[2]).toBeGreaterThan(180);
  });

  it.each([
    ["arctic", 1],
    ["antarctic", -1],
  ] as const)("%s around its pole: every longitude, from its corners' latitude to the pole, as far as each set goes", async (name, side) => {
    const info = cogs.get(name)!.info(name).georeference!;
    // The corners are the points farthest from the pole.
    const far = (await corners(name, "EPSG:4326")).map((p) => p[1]);
    const edge = side > 0 ? Math.min(...far) : Math.max(...far);
    const [[, edgeY]] = await gdalTransform([[0, edge]], "EPSG:4326", "EPSG:3857");
    const lonLat = side > 0 ? [-180, edge, 180, 90] : [-180, -90, 180, edge];
    expectNear(info.lonLatBounds, lonLat, PLACE_TOLERANCE.degrees, "lonLatBounds");
    expectNear(info.tiling.WorldCRS84Quad.bounds, lonLat, PLACE_TOLERANCE.degrees, "WorldCRS84Quad bounds");
    const mercator = side > 0 ? [-HALF_EARTH, edgeY, HALF_EARTH, HALF_EARTH] : [-HALF_EARTH, -HALF_EARTH, HALF_EARTH, edgeY];
    expectNear(info.tiling.WebMercatorQuad.bounds, mercator, PLACE_TOLERANCE.metres, "WebMercatorQuad bounds");
  });
});

describe("CRSs the bundled tables spell so that proj4 misreads them", () => {
  // Polar stereographic ones without their latitude of origin (proj4 then takes the equator),
  // Mercator (variant B) ones with their standard parallel as lat_1 (proj4's merc reads lat_ts).
  it.each([
    [3031, -1],
    [3976, -1],
    [3995, 1],
    [3413, 1],
    [3994, -1],
    [5641, -1],
  ])("EPSG:%i converts as GDAL does", async (code, side) => {
    const crs = crsOfName(`EPSG:${code}`)!;
    const points: [number, number][] = [[45, 75], [-120.5, 81], [170, 66.6], [100.5, 20]].map(([lon, lat]): [number, number] => [lon, side * lat]);
    const gdal = await gdalTransform(points, "EPSG:4326", `EPSG:${code}`);
    points.forEach((p, i) => expectNear(conversion(LON_LAT, crs.definition)(...p), gdal[i], PLACE_TOLERANCE.metres, `EPSG:${code} (${p})`));
  });
});

describe("a tile of a source at the world's edges that misses it", () => {
  it.each([
    ["lonLatAcross", "WebMercatorQuad", 7, 5, 63],
    ["lonLatAcross", "WorldCRS84Quad", 6, 120, 31],
    ["arctic", "WebMercatorQuad", 3, 0, 3],
  ] as const)("%s %s %i/%i/%i reads nothing", async (name, set, z, x, y) => {
    const req = parseTileRequest({ tileMatrixSet: set, z: String(z), x: String(x), y: `${y}.png` }, new URLSearchParams());
    const plan = await planTile(cogs.get(name)!, req, new Slices(new AbortController().signal));
    expect(plan.read).toBeUndefined();
  });
});

describe("areas across 180° and at a pole, against gdalwarp's", () => {
  it.each([
    ["lonLatAcross", "-178,-4,-172,4", "300x400", "", "a box east of 180°, in the source's own lon/lat"],
    ["lonLatAcross", "172,-4,178,4", "300x400", "", "a box west of 180°"],
    ["mercatorAcross", "-178.5,-20,-176,-15", "250x500", "", "a lon/lat box east of 180°, painted in the source's PDC Mercator"],
    ["mercatorAcross", "-178.5,-20,-176,-15", "250x500", "&dst_crs=EPSG:3857", "the same box painted in Web Mercator"],
    ["arctic", "-1000000,-1000000,1000000,1000000", "300x300", "&coord_crs=EPSG:3413", "a box round the pole"],
  ] as const)("%s %s: %s", async (name, box, size, query, _what) => {
    const req = parseAreaRequest("bbox", { bbox: box, file: `${size}.tif` }, new URLSearchParams(`resampling=bilinear${query}`));
    const cog = cogs.get(name)!;
    const grid = areaGrid(cog.levels[0], cog.geo!, req);
    const slices = new Slices(new AbortController().signal);
    const mine = await warpPlanned(cog, await planGrid(cog, grid, req.bidx, req.resampling, slices), req, slices);
    const [x0, cell, , y1, , cellY] = grid.affine;
    const bounds = [x0, y1 + grid.height * cellY, x0 + grid.width * cell, y1];
    const gdal = await gdalWarp(mapFixture(WORLD_EDGE_FIXTURES[name]), { crs: grid.crs.name, bounds, width: grid.width, height: grid.height, resampling: "bilinear" });
    const d = tileDifference(mine, gdal);
    measured.push({ label: `${name} bbox ${box} ${size}${query}`, d });
    expect(d.bothValid).toBeGreaterThan(0.5);
    expect(exceeded(d, TOLERANCE)).toEqual([]);
  });
});

describe("an area's size across 180°", () => {
  it("a box without a size gets the source's resolution in the CRS painted in, measured the short way round", () => {
    // gdalwarp 3.6 suggests a grid round the whole world for this source in Web Mercator (33.9 km
    // pixels); the source's own 0.02° are 2226.9 m there, its resolution on WebMercatorQuad.
    const cog = cogs.get("lonLatAcross")!;
    const req = parseAreaRequest("bbox", { bbox: "-178,-4,-172,4", file: ".tif" }, new URLSearchParams("dst_crs=EPSG:3857"));
    const grid = areaGrid(cog.levels[0], cog.geo!, req);
    const { resolution } = cog.info("lonLatAcross").georeference!.tiling.WebMercatorQuad;
    expect(grid.width).toBe(Math.round((6 * HALF_EARTH) / 180 / resolution));
  });
});

describe("points across 180° and at a pole", () => {
  /** gdallocationinfo's pixel for a lon/lat point. */
  function gdalPixel(name: FixtureName, lon: number, lat: number): [number, number] {
    const out = execFileSync("gdallocationinfo", ["-wgs84", mapFixture(WORLD_EDGE_FIXTURES[name]), String(lon), String(lat)], { encoding: "utf8" });
    const at = /Location: \((\d+)P,(\d+)L\)/.exec(out)!;
    return [Number(at[1]), Number(at[2])];
  }

  it.each([
    ["mercatorAcross", 179.3, -17.2],
    ["mercatorAcross", -179.3, -17.2],
    ["arctic", 12.5, 89.3],
    ["arctic", -170.2, 75.1],
    ["antarctic", 100.1, -80.7],
  ] as const)("%s (%f, %f) is gdallocationinfo's pixel", (name, lon, lat) => {
    expect(pixelOf(cogs.get(name)!, { x: lon, y: lat, coordCrs: "EPSG:4326" })).toEqual(gdalPixel(name, lon, lat));
  });

  it("a lon/lat source's longitudes past 180° are reached from −180°…−170° (gdallocationinfo does not wrap: its pixel by hand)", () => {
    // Pixel column c holds 170° + 0.02° × c: −175.01° is 184.99°, column 749; row 249 holds 0.01°N.
    expect(pixelOf(cogs.get("lonLatAcross")!, { x: -175.01, y: 0.01, coordCrs: "EPSG:4326" })).toEqual([749, 249]);
    expect(pixelOf(cogs.get("lonLatAcross")!, { x: 175.01, y: 0.01, coordCrs: "EPSG:4326" })).toEqual(gdalPixel("lonLatAcross", 175.01, 0.01));
  });
});
