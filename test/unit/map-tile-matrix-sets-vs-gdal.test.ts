// Tiles on the registry's other tile matrix sets against gdalwarp's: for each set, a source in a
// CRS of its region (NZTM2000 for NZTM2000Quad, ETRS89-LAEA for the European set, NSIDC's polar
// stereographic for the Arctic UPS quad and Antarctica's for the Antarctic one, UTM 18N around
// Ottawa for Canada's LCC and the UTM quads), the world-edge fixtures around each pole on the UPS
// quads and across 180° on the UTM zones either side (60 and 1), two zooms each: the source's maxzoom, and one two
// zooms up read from its overview (on CanadianNAD83_LCC the scales do not halve, so that is a
// ratio of about 3). The decoder's warpTile against `gdalwarp -t_srs {set's CRS} -te {tileBounds}
// -ts 256 256` with the same resampling, as map-tiles-vs-gdal does for the web sets, and held to
// a tolerance that a tile one column off or half a pixel's shift fails.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Cog } from "../../regional/cog/cog";
import { warpTile } from "../../regional/maps/warp";
import { LocalCatalog } from "../../regional/source/local";
import { tileBounds, tileMatrixSet } from "../../shared/maps/tile-matrix-sets";
import { parseTileRequest, tileSide, type Resampling, type TileRequest } from "../../shared/maps/tile-request";
import { gdalWarpTile, type TilePlanes } from "../support/gdal-reference";
import { MAP_FIXTURE_DIR, mapFixture, SET_FIXTURES, tileHolding, type MapFixture } from "../support/map-fixtures";
import { WORLD_EDGE_FIXTURES } from "../support/world-edge-fixtures";
import { exceeded, tileDifference, type Tolerance } from "../support/tile-difference";

/** The world-edge fixtures (map-world-edges-vs-gdal's) with places to pick tiles by: the middle is the pole, or 180°. */
const atEdge = (f: MapFixture): MapFixture => ({ ...f, places: { centre: [f.width / 2, f.height / 2], northWest: [f.width / 4, f.height / 4] } });
const FIXTURES = {
  ...SET_FIXTURES,
  northPole: atEdge(WORLD_EDGE_FIXTURES.arctic),
  southPole: atEdge(WORLD_EDGE_FIXTURES.antarctic),
  across: atEdge(WORLD_EDGE_FIXTURES.mercatorAcross),
};
type FixtureName = keyof typeof FIXTURES;

interface Case {
  fixture: FixtureName;
  set: string;
  /** Zooms above the source's maxzoom: 0 for full resolution, 2 for the overview. */
  up: 0 | 2;
  place: string;
  resampling: Resampling;
  scale?: 2;
  /**
   * gdalwarp's -ovr where its choice differs from the decoder's by design: the decoder chooses the
   * level by the resolution gdalwarp suggests for the whole source, GDAL 3.6 by the tile's own
   * ground, which around the pole is another (docs/maps.md, Across 180° and around the poles).
   */
  gdalOverview?: string;
}

const SETS: [FixtureName, string][] = [
  ["nztm", "NZTM2000Quad"],
  ["laea", "EuropeanETRS89_LAEAQuad"],
  ["arctic", "UPSArcticWGS84Quad"],
  ["antarctic", "UPSAntarcticWGS84Quad"],
  ["ottawa", "CanadianNAD83_LCC"],
  ["ottawa", "UTM18WGS84Quad"],
  ["ottawa", "UTM17WGS84Quad"],
  ["laea", "WorldMercatorWGS84Quad"],
  // Around the poles, on the sets made for them; across 180°, on the UTM zones either side.
  ["northPole", "UPSArcticWGS84Quad"],
  ["southPole", "UPSAntarcticWGS84Quad"],
  ["across", "UTM60WGS84Quad"],
  ["across", "UTM01WGS84Quad"],
];

const CASES: Case[] = SETS.flatMap(([fixture, set]): Case[] => [
  { fixture, set, up: 0, place: "northWest", resampling: "bilinear" },
  // The North Pole's zoom-3 tile: GDAL reads the 16 km overview, the decoder the 8 km one.
  { fixture, set, up: 2, place: "centre", resampling: "nearest", ...(fixture === "northPole" && { gdalOverview: "0" }) },
]);
CASES.push({ fixture: "laea", set: "EuropeanETRS89_LAEAQuad", up: 0, place: "southEast", resampling: "cubic", scale: 2 });

/**
 * 8-bit levels of lossless pixels: the tiles were measured equal to GDAL's but for the @2x cubic
 * one (a mean of 0.005, a 99th percentile of 0.04; docs/maps.md); half a pixel's shift makes a
 * mean of 0.19 to 0.96 and a 99th percentile of 1 or more.
 */
const TOLERANCE: Tolerance = { meanAbs: 0.05, p99: 0.5, validityMismatch: 0.001 };

const cogs = new Map<FixtureName, Cog>();
const measured: string[] = [];

beforeAll(async () => {
  for (const fixture of Object.values(FIXTURES)) mapFixture(fixture);
  const catalog = new LocalCatalog(MAP_FIXTURE_DIR);
  for (const name of Object.keys(FIXTURES) as FixtureName[]) cogs.set(name, await Cog.open(await catalog.open(FIXTURES[name].id, undefined)));
});

afterAll(async () => {
  await Promise.all([...cogs.values()].map((cog) => cog.close()));
  if (measured.length) console.log(["tile differences from gdalwarp (mean |Δ|, p99 |Δ|, validity mismatch %, both valid %):", ...measured].join("\n"));
});

/** The case's tile through the tile route's parser: at the zoom the source's tiling gives. */
async function request(c: Case): Promise<TileRequest> {
  const tms = tileMatrixSet(c.set);
  const tiling = cogs.get(c.fixture)!.info(c.fixture).georeference?.tiling[c.set];
  if (!tiling) throw new Error(`${c.fixture} does not lie on ${c.set}`);
  const z = Math.max(tiling.minZoom, tiling.maxZoom - c.up);
  const { x, y } = await tileHolding(FIXTURES[c.fixture], c.place, tms, z);
  const query = new URLSearchParams({ resampling: c.resampling });
  return parseTileRequest({ tileMatrixSet: c.set, z: String(z), x: String(x), y: `${y}${c.scale === 2 ? "@2x" : ""}.png` }, query);
}

/** gdalwarp's tile for `req`, or for the tile `shifted` columns east and `shiftPixels` of its pixels east. */
function reference(c: Case, req: TileRequest, { columns = 0, shiftPixels = 0 } = {}): Promise<TilePlanes> {
  const tms = tileMatrixSet(c.set);
  const side = tileSide(req);
  const [minX, minY, maxX, maxY] = tileBounds(tms, req.z, req.x + columns, req.y);
  const shift = ((maxX - minX) / side) * shiftPixels;
  const overview = c.gdalOverview === undefined ? [] : ["-ovr", c.gdalOverview];
  return gdalWarpTile(mapFixture(FIXTURES[c.fixture]), tms, [minX + shift, minY, maxX + shift, maxY], side, req.resampling, overview);
}

const label = (req: TileRequest) => `${req.tileMatrixSet} ${req.z}/${req.x}/${req.y}${req.scale === 2 ? "@2x" : ""} ${req.resampling}`;
const figures = (what: string, d: ReturnType<typeof tileDifference>) =>
  `  ${what.padEnd(56)} ${d.meanAbs.toFixed(3).padStart(8)} ${d.p99.toFixed(3).padStart(8)} ${(d.validityMismatch * 100).toFixed(2).padStart(6)} ${(d.bothValid * 100).toFixed(0).padStart(4)}`;

describe("tiles on every other set against gdalwarp's", () => {
  it.each(CASES.map((c) => ({ ...c, name: `${c.fixture} on ${c.set}, ${c.up ? "two zooms up" : "maxzoom"}${c.scale ? " @2x" : ""}` })))("$name", async (c) => {
    const req = await request(c);
    const d = tileDifference(await warpTile(cogs.get(c.fixture)!, req), await reference(c, req));
    measured.push(figures(label(req), d));
    expect(d.bothValid, label(req)).toBeGreaterThan(0.03);
    expect(exceeded(d, TOLERANCE), label(req)).toEqual([]);
  });
});

describe("the comparison fails a tile that is wrong", () => {
  const inner = CASES.filter((c) => c.up === 2 && ["EuropeanETRS89_LAEAQuad", "CanadianNAD83_LCC", "UPSArcticWGS84Quad", "NZTM2000Quad"].includes(c.set));

  it.each(inner.map((c) => ({ ...c, name: c.set })))("one column off: $name", async (c) => {
    const req = await request(c);
    const d = tileDifference(await warpTile(cogs.get(c.fixture)!, req), await reference(c, req, { columns: 1 }));
    measured.push(figures(`${label(req)} against x+1`, d));
    expect(exceeded(d, TOLERANCE), label(req)).not.toEqual([]);
  });

  it.each(inner.map((c) => ({ ...c, name: c.set })))("half a pixel east: $name", async (c) => {
    const req = await request(c);
    const d = tileDifference(await warpTile(cogs.get(c.fixture)!, req), await reference(c, req, { shiftPixels: 0.5 }));
    measured.push(figures(`${label(req)} against ½ px east`, d));
    expect(exceeded(d, TOLERANCE), label(req)).not.toEqual([]);
  });
});
