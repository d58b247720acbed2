// Tessera's warped map tiles against GDAL's. For every fixture (UTM RGB JPEG, UTM float DEM with
// nodata, 4-band uint16 in lon/lat, 8-bit grey on the WebMercatorQuad grid), tiles at several
// zooms in both tile matrix sets, on the data's edges and across nodata, nearest, bilinear and
// cubic, one @2x: the decoder's warpTile against `gdalwarp` run for the same tile bounds, size,
// target CRS and resampling, with GDAL's default error threshold and overview choice. Each
// fixture has a tolerance on three figures (see tile-difference.ts), stated in docs/maps.md; the
// grey fixture's WebMercatorQuad tiles lie on its own pixel grid, where the warp is skipped and
// the answer must be GDAL's exactly. Then proof that the comparison would catch a tile shifted by
// one, the wrong resampling, half a pixel's shift or nodata read as data; and a rendered PNG with
// `rescale` against GDAL's values rescaled by the same rule.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import sharp from "sharp";
import { Cog } from "../../regional/cog/cog";
import { renderTile } from "../../regional/maps/compose-tile";
import { planTile, warpTile } from "../../regional/maps/warp";
import { Slices } from "../../regional/runtime/slices";
import { LocalCatalog } from "../../regional/source/local";
import { tileBounds, tileMatrixSet } from "../../shared/maps/tile-matrix-sets";
import { parseTileRequest, tileSide, type Resampling, type TileRequest } from "../../shared/maps/tile-request";
import { gdalWarpTile, type TilePlanes } from "../support/gdal-reference";
import { MAP_FIXTURES, mapFixture, mapFixtures, tileHolding } from "../support/map-fixtures";
import { exceeded, tileDifference, type TileDifference, type Tolerance } from "../support/tile-difference";

type FixtureName = keyof typeof MAP_FIXTURES;

interface Case {
  fixture: FixtureName;
  set: "WebMercatorQuad" | "WorldCRS84Quad";
  z: number;
  /** The fixture's place the tile holds. */
  place: string;
  resampling: Resampling;
  scale?: 2;
  /** More of the tile's query (bands, rescale). */
  query?: string;
  /** Why this tile. */
  what: string;
  /**
   * gdalwarp's -ovr, only where its default choice is a coin toss: on the grey fixture's own grid
   * a z11 or z10 tile's resolution is exactly an overview's, and GDAL 3.6 reads that overview or
   * the next finer level as floating-point noise in its ratio falls (at z11, tile column 1090
   * reads the overview, 1089 the full level). The reference then reads the level on the grid.
   */
  gdalOverview?: string;
}

// Float data needs a rescale to be rendered at all; the warped values compared are the raw ones.
const DEM_RANGE = "rescale=100,1500";

const CASES: Case[] = [
  { fixture: "utmRgb", set: "WebMercatorQuad", z: 14, place: "centre", resampling: "nearest", what: "full resolution" },
  { fixture: "utmRgb", set: "WebMercatorQuad", z: 14, place: "checkerboard", resampling: "cubic", scale: 2, what: "@2x over hard edges" },
  { fixture: "utmRgb", set: "WebMercatorQuad", z: 12, place: "northEdge", resampling: "bilinear", what: "overview, the data's north edge" },
  { fixture: "utmRgb", set: "WebMercatorQuad", z: 10, place: "centre", resampling: "nearest", what: "smallest overview, all four edges" },
  { fixture: "utmRgb", set: "WorldCRS84Quad", z: 13, place: "westEdge", resampling: "bilinear", what: "full resolution, the west edge" },
  { fixture: "utmRgb", set: "WorldCRS84Quad", z: 12, place: "southEdge", resampling: "cubic", what: "overview, the south edge" },
  { fixture: "utmRgb", set: "WorldCRS84Quad", z: 10, place: "centre", resampling: "nearest", what: "smallest overview" },

  { fixture: "utmDem", set: "WebMercatorQuad", z: 13, place: "lake", resampling: "bilinear", query: DEM_RANGE, what: "across a nodata lake" },
  { fixture: "utmDem", set: "WebMercatorQuad", z: 13, place: "cliff", resampling: "nearest", query: DEM_RANGE, what: "full resolution, a cliff" },
  { fixture: "utmDem", set: "WebMercatorQuad", z: 12, place: "westStrip", resampling: "cubic", query: DEM_RANGE, what: "nodata along the west edge" },
  { fixture: "utmDem", set: "WebMercatorQuad", z: 11, place: "lake", resampling: "cubic", query: DEM_RANGE, what: "overview across nodata, pixels not square" },
  { fixture: "utmDem", set: "WorldCRS84Quad", z: 12, place: "northNotch", resampling: "nearest", query: DEM_RANGE, what: "a nodata notch in the north edge" },
  { fixture: "utmDem", set: "WorldCRS84Quad", z: 10, place: "cliff", resampling: "bilinear", query: DEM_RANGE, what: "overview, lakes and edges, pixels not square" },

  { fixture: "wgs84Uint16", set: "WebMercatorQuad", z: 13, place: "centre", resampling: "nearest", what: "default band (1)" },
  { fixture: "wgs84Uint16", set: "WebMercatorQuad", z: 12, place: "northWest", resampling: "cubic", query: "bidx=3,2,1", what: "three bands, the north-west corner" },
  { fixture: "wgs84Uint16", set: "WebMercatorQuad", z: 10, place: "southEast", resampling: "bilinear", query: "bidx=2", what: "overview, the south-east corner" },
  { fixture: "wgs84Uint16", set: "WorldCRS84Quad", z: 12, place: "northWest", resampling: "cubic", query: "bidx=4", what: "the source's own CRS, off its grid" },
  { fixture: "wgs84Uint16", set: "WorldCRS84Quad", z: 13, place: "centre", resampling: "bilinear", scale: 2, query: "bidx=1,4,3", what: "@2x, three bands" },

  { fixture: "mercatorGrey", set: "WebMercatorQuad", z: 12, place: "centre", resampling: "nearest", what: "on the grid, full level" },
  { fixture: "mercatorGrey", set: "WebMercatorQuad", z: 12, place: "collar", resampling: "bilinear", what: "on the grid, nodata collar" },
  { fixture: "mercatorGrey", set: "WebMercatorQuad", z: 11, place: "collar", resampling: "cubic", gdalOverview: "0", what: "on the grid, first overview, over the edge" },
  { fixture: "mercatorGrey", set: "WebMercatorQuad", z: 11, place: "centre", resampling: "nearest", scale: 2, what: "@2x, on the full level's grid" },
  { fixture: "mercatorGrey", set: "WebMercatorQuad", z: 10, place: "centre", resampling: "bilinear", gdalOverview: "1", what: "on the grid, smallest overview, over the edges" },
  { fixture: "mercatorGrey", set: "WorldCRS84Quad", z: 11, place: "centre", resampling: "bilinear", what: "warped to lon/lat" },
  { fixture: "mercatorGrey", set: "WorldCRS84Quad", z: 12, place: "collar", resampling: "nearest", what: "warped, nodata collar" },
];

/**
 * The largest difference from gdalwarp accepted, per fixture, in its data's units (8-bit levels,
 * metres, uint16 counts), chosen from what was measured (docs/maps.md has both).
 */
const TOLERANCES: Record<FixtureName, Tolerance> = {
  // Two JPEG decoders (rounding, chroma upsampling): the stored pixels differ by 0.84 on average, 5 at most.
  utmRgb: { meanAbs: 1.5, p99: 6, validityMismatch: 0.001 },
  utmDem: { meanAbs: 0.01, p99: 0.05, validityMismatch: 0.001 },
  wgs84Uint16: { meanAbs: 12, p99: 40, validityMismatch: 0.001 },
  mercatorGrey: { meanAbs: 0.05, p99: 1, validityMismatch: 0.001 },
};
/** A tile on the source's own grid skips the warp: GDAL's answer, exactly. */
const ON_GRID: Tolerance = { meanAbs: 0, p99: 0, validityMismatch: 0 };
/** The rescaled PNG against GDAL's values rescaled, in 8-bit levels. */
const RENDERED_PNG: Tolerance = { meanAbs: 0.1, p99: 1, validityMismatch: 0.001 };

const onGrid = (c: Case) => c.fixture === "mercatorGrey" && c.set === "WebMercatorQuad";
const toleranceOf = (c: Case) => (onGrid(c) ? ON_GRID : TOLERANCES[c.fixture]);

const cogs = new Map<FixtureName, Cog>();
const measured: { c: Case; label: string; d: TileDifference }[] = [];

beforeAll(async () => {
  const catalog = new LocalCatalog(mapFixtures());
  for (const name of Object.keys(MAP_FIXTURES) as FixtureName[]) {
    cogs.set(name, await Cog.open(await catalog.open(MAP_FIXTURES[name].id, undefined)));
  }
});

afterAll(async () => {
  await Promise.all([...cogs.values()].map((cog) => cog.close()));
  if (measured.length) console.log(report(measured));
});

/** The case's tile as a client asks for it, through the tile route's own parser. */
async function request(c: Case, resampling = c.resampling): Promise<TileRequest> {
  const tms = tileMatrixSet(c.set);
  const { x, y } = await tileHolding(MAP_FIXTURES[c.fixture], c.place, tms, c.z);
  const query = new URLSearchParams(c.query);
  query.set("resampling", resampling);
  return parseTileRequest({ tileMatrixSet: c.set, z: String(c.z), x: String(x), y: `${y}${c.scale === 2 ? "@2x" : ""}.png` }, query);
}

function label(req: TileRequest): string {
  return `${req.tileMatrixSet} ${req.z}/${req.x}/${req.y}${req.scale === 2 ? "@2x" : ""} ${req.resampling}${req.bidx ? ` bidx=${req.bidx}` : ""}`;
}

/** The bands a request renders, one-based: its bidx, or the source's colour bands (RGB), or band 1. */
function renderedBands(c: Case, req: TileRequest): number[] {
  return req.bidx ?? (c.fixture === "utmRgb" ? [1, 2, 3] : [1]);
}

/**
 * gdalwarp's tile for `req` (or, for a deliberate mistake, for the tile `tile` instead,
 * shifted by `shiftPixels` of its own pixels to the east, or with more gdalwarp `options`), the
 * request's bands only.
 */
async function reference(
  c: Case,
  req: TileRequest,
  { tile = req, shiftPixels = 0, options = [] }: { tile?: Pick<TileRequest, "x" | "y">; shiftPixels?: number; options?: string[] } = {},
): Promise<TilePlanes> {
  const tms = tileMatrixSet(req.tileMatrixSet);
  const side = tileSide(req);
  const [minX, minY, maxX, maxY] = tileBounds(tms, req.z, tile.x, tile.y);
  const shift = ((maxX - minX) / side) * shiftPixels;
  const overview = c.gdalOverview === undefined ? [] : ["-ovr", c.gdalOverview];
  const all = await gdalWarpTile(mapFixture(MAP_FIXTURES[c.fixture]), tms, [minX + shift, minY, maxX + shift, maxY], side, req.resampling, [...overview, ...options]);
  const bands = renderedBands(c, req);
  return { ...all, bands: bands.map((b) => all.bands[b - 1]), valid: bands.map((b) => all.valid[b - 1]) };
}

async function ours(c: Case, req: TileRequest): Promise<TilePlanes> {
  return warpTile(cogs.get(c.fixture)!, req);
}

describe("warped tiles against gdalwarp's", () => {
  it.each(CASES.map((c) => ({ ...c, name: `${c.fixture}: ${c.set} z${c.z} ${c.what}` })))("$name", async (c) => {
    const req = await request(c);
    const d = tileDifference(await ours(c, req), await reference(c, req));
    measured.push({ c, label: label(req), d });
    // A tile that compares nothing proves nothing: every case sees some data.
    expect(d.bothValid, label(req)).toBeGreaterThan(0.03);
    expect(exceeded(d, toleranceOf(c)), label(req)).toEqual([]);
    // On the source's own grid the pixels are copied, whatever resampling was asked.
    if (onGrid(c)) expect((await planTile(cogs.get(c.fixture)!, req, new Slices(new AbortController().signal))).resampling, "copied, not resampled").toBe("nearest");
  });
});

describe("the comparison fails a warper that is wrong", () => {
  // Inside the data, away from its edges, where each mistake has data to show on.
  const inner: Case[] = [
    CASES.find((c) => c.fixture === "utmRgb" && c.place === "centre" && c.z === 14)!,
    CASES.find((c) => c.fixture === "utmDem" && c.place === "cliff")!,
    CASES.find((c) => c.fixture === "wgs84Uint16" && c.place === "centre" && c.set === "WebMercatorQuad")!,
    CASES.find((c) => c.fixture === "mercatorGrey" && c.place === "centre" && c.z === 12)!,
    CASES.find((c) => c.fixture === "mercatorGrey" && c.set === "WorldCRS84Quad")!,
  ];

  it.each(inner.map((c) => ({ ...c, name: `${c.fixture} ${c.set}` })))("a tile one column off fails: $name", async (c) => {
    const req = await request(c);
    const d = tileDifference(await ours(c, req), await reference(c, req, { tile: { x: req.x + 1, y: req.y } }));
    measured.push({ c, label: `${label(req)} against x+1`, d });
    expect(exceeded(d, toleranceOf(c)), label(req)).not.toEqual([]);
  });

  it.each(inner.map((c) => ({ ...c, name: `${c.fixture} ${c.set}` })))("half a pixel's shift fails: $name", async (c) => {
    const req = await request(c);
    const d = tileDifference(await ours(c, req), await reference(c, req, { shiftPixels: 0.5 }));
    measured.push({ c, label: `${label(req)} against ½ px east`, d });
    expect(exceeded(d, toleranceOf(c)), label(req)).not.toEqual([]);
  });

  it("nodata read as data fails: utmDem across a lake", async () => {
    const c = CASES.find((k) => k.fixture === "utmDem" && k.place === "lake" && k.z === 13)!;
    const req = await request(c);
    const d = tileDifference(await ours(c, req), await reference(c, req, { options: ["-srcnodata", "None"] }));
    measured.push({ c, label: `${label(req)} against nodata as data`, d });
    expect(exceeded(d, toleranceOf(c)), label(req)).not.toEqual([]);
  });

  // On the grey fixture's own grid every resampling gives the stored pixels: no case there.
  it.each(inner.filter((c) => !onGrid(c)).map((c) => ({ ...c, name: `${c.fixture} ${c.set}` })))(
    "nearest where cubic was asked fails: $name",
    async (c) => {
      const asked = await request(c, "cubic");
      const d = tileDifference(await ours(c, await request(c, "nearest")), await reference(c, asked));
      measured.push({ c, label: `${label(asked)} answered nearest`, d });
      expect(exceeded(d, toleranceOf(c)), label(asked)).not.toEqual([]);
    },
  );
});

describe("a rendered PNG tile", () => {
  it("with rescale is GDAL's values mapped by the same rule, transparent where GDAL has no data", async () => {
    const c = CASES.find((k) => k.fixture === "utmDem" && k.place === "lake")!;
    const [min, max] = [100, 1500];
    const req = await request({ ...c, query: `rescale=${min},${max}` });
    const { body, contentType } = await renderTile(cogs.get(c.fixture)!, req);
    expect(contentType).toBe("image/png");
    const { data, info } = await sharp(body).raw().toBuffer({ resolveWithObject: true });
    expect([info.width, info.height]).toEqual([256, 256]);
    expect(info.channels === 2 || info.channels === 4, `${info.channels} channels`).toBe(true);
    // The PNG as planes: its grey (or red) value, valid where it is opaque.
    const grey = new Float32Array(256 * 256);
    const opaque = new Uint8Array(256 * 256);
    for (let i = 0; i < grey.length; i++) {
      grey[i] = data[i * info.channels];
      opaque[i] = data[i * info.channels + info.channels - 1] === 255 ? 1 : 0;
    }
    // rescale: min → 0, max → 255, linear between, clamped.
    const gdal = await reference(c, req);
    const scaled = gdal.bands[0].map((v) => Math.min(255, Math.max(0, Math.round(((v - min) / (max - min)) * 255))));
    const d = tileDifference({ width: 256, height: 256, bands: [grey], valid: [opaque] }, { ...gdal, bands: [scaled] });
    measured.push({ c, label: `${label(req)} png rescale=${min},${max}`, d });
    expect(d.bothValid).toBeGreaterThan(0.5);
    expect(exceeded(d, RENDERED_PNG), label(req)).toEqual([]);
  });
});

/** Every tile's figures: what docs/maps.md's tables summarise. */
function report(rows: typeof measured): string {
  const f = (n: number, digits = 3) => n.toFixed(digits);
  const lines = ["tile differences from gdalwarp (mean |Δ|, p99 |Δ|, validity mismatch %, both valid %):"];
  for (const row of rows) {
    lines.push(`  ${row.c.fixture.padEnd(12)} ${row.label.padEnd(48)} ${f(row.d.meanAbs).padStart(9)} ${f(row.d.p99).padStart(9)} ${f(row.d.validityMismatch * 100, 2).padStart(6)} ${f(row.d.bothValid * 100, 0).padStart(4)}`);
  }
  return lines.join("\n");
}
