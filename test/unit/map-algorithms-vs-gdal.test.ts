// `algorithm=` on map tiles against GDAL. Hillshade and slope: the decoder's tile against
// `gdaldem` run on the same warped tile (the warp grown by the kernel's one-pixel buffer, which
// gdaldem's 3×3 window reads at the tile's edges, then cropped), so the comparison is of the
// kernels alone; and the comparison shown to fail a wrong light, a wrong cell size and a wrong
// scale. Terrarium and Terrain-RGB: every pixel decoded back to metres against the warped DEM,
// within the encoding's step. And seams: a 2×2 block of hillshade tiles against the same ground
// rendered as one area.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import sharp from "sharp";
import { Cog } from "../../regional/cog/cog";
import { cogAsset, composeTile, composeValues, renderTile } from "../../regional/maps/compose-tile";
import { setCrs } from "../../regional/maps/crs";
import { planTile, warpPlanned, warpTile } from "../../regional/maps/warp";
import { Slices } from "../../regional/runtime/slices";
import { LocalCatalog } from "../../regional/source/local";
import { tileBounds, tileMatrixSet } from "../../shared/maps/tile-matrix-sets";
import { parseTileRequest, type TileRequest } from "../../shared/maps/tile-request";
import { gdalDem } from "../support/gdal-reference";
import { MAP_FIXTURES, mapFixtures, tileHolding } from "../support/map-fixtures";

const DEM = MAP_FIXTURES.utmDem;
let cog: Cog;

beforeAll(async () => {
  cog = await Cog.open(await new LocalCatalog(mapFixtures()).open(DEM.id, undefined));
});
afterAll(() => cog.close());

const signal = () => new AbortController().signal;

/** The tile holding `place` at `z`, as a client asks for it (through the route's parser). */
async function tileRequest(set: string, z: number, place: string, query: string, ext = "png"): Promise<TileRequest> {
  const tms = tileMatrixSet(set);
  const { x, y } = await tileHolding(DEM, place, tms, z);
  return parseTileRequest({ tileMatrixSet: set, z: String(z), x: String(x), y: `${y}.${ext}` }, new URLSearchParams(query));
}

/** A PNG or WebP tile as 8-bit red, green, blue (grey in all three) and alpha (added when the file has none). */
async function decoded(body: Buffer): Promise<{ planes: Uint8Array[]; alpha: Uint8Array }> {
  const { data, info } = await sharp(body).toColourspace("srgb").ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  const planes = Array.from({ length: 4 }, (_, c) => Uint8Array.from({ length: info.width * info.height }, (_, i) => data[i * 4 + c]));
  return { planes, alpha: planes[3] };
}

/** gdaldem on the decoder's own warp of the tile grown by one pixel, cropped back to the tile. */
async function gdaldemOnTile(req: TileRequest, processing: "hillshade" | "slope", options: string[]): Promise<Float32Array> {
  const slices = new Slices(signal());
  const grown = await warpPlanned(cog, await planTile(cog, { ...req, algorithm: undefined, bidx: [1] }, slices, 1), req, slices);
  const tms = tileMatrixSet(req.tileMatrixSet);
  const [left, , , top] = tileBounds(tms, req.z, req.x, req.y);
  const cell = tms.tileMatrices[req.z].cellSize;
  const plane = Float32Array.from(grown.bands[0], (v, i) => (grown.valid[0][i] ? v : Number.NaN));
  const out = await gdalDem(processing, plane, { width: 258, height: 258, geoTransform: [left - cell, cell, 0, top + cell, 0, -cell], crs: tms.crs }, options);
  return Float32Array.from({ length: 256 * 256 }, (_, i) => out[(Math.floor(i / 256) + 1) * 258 + (i % 256) + 1]);
}

interface Difference {
  /** Pixels valid in one and not the other. */
  validity: number;
  maxAbs: number;
  meanAbs: number;
  compared: number;
}

function difference(ours: ArrayLike<number>, oursValid: ArrayLike<number>, reference: Float32Array): Difference {
  let validity = 0;
  let sum = 0;
  let maxAbs = 0;
  let compared = 0;
  for (let i = 0; i < reference.length; i++) {
    const refValid = !Number.isNaN(reference[i]);
    if (refValid !== Boolean(oursValid[i])) validity++;
    if (!refValid || !oursValid[i]) continue;
    const d = Math.abs(ours[i] - reference[i]);
    sum += d;
    maxAbs = Math.max(maxAbs, d);
    compared++;
  }
  return { validity, maxAbs, meanAbs: sum / Math.max(1, compared), compared };
}

/**
 * Hillshade in 8-bit levels: gdaldem rounds a float into its byte band as we do, but computes
 * 1/√ by an approximation (one Newton step): a pixel may land one level off, rarely.
 */
const HILLSHADE = { maxAbs: 1, meanAbs: 0.02 };

const HILLSHADES = [
  { set: "WebMercatorQuad", z: 13, place: "cliff", query: "algorithm=hillshade&resampling=bilinear", gdaldem: [], what: "gdaldem's defaults, a cliff" },
  { set: "WebMercatorQuad", z: 13, place: "lake", query: "algorithm=hillshade", gdaldem: [], what: "across nodata: 0 (transparent) where the window has none" },
  {
    set: "WorldCRS84Quad",
    z: 12,
    place: "centre",
    query: 'algorithm=hillshade&algorithm_params={"azimuth":45,"angle_altitude":30,"z_factor":2}&resampling=cubic',
    gdaldem: ["-az", "45", "-alt", "30", "-z", "2", "-s", "111120"],
    what: "degrees (scale 111120), another light, z 2",
  },
];

describe("hillshade against gdaldem on the same warped tile", () => {
  it.each(HILLSHADES)("$set z$z: $what", async (c) => {
    const req = await tileRequest(c.set, c.z, c.place, c.query);
    const { planes, alpha } = await decoded((await renderTile(cog, req)).body);
    const d = difference(planes[0], alpha, await gdaldemOnTile(req, "hillshade", c.gdaldem));
    expect(d.compared, "the tile shades some ground").toBeGreaterThan(20_000);
    expect(d.validity).toBe(0);
    expect(d.maxAbs).toBeLessThanOrEqual(HILLSHADE.maxAbs);
    expect(d.meanAbs).toBeLessThanOrEqual(HILLSHADE.meanAbs);
  });

  it.each([
    { gdaldem: ["-az", "135"], what: "light from the south-east instead of the north-west" },
    { gdaldem: ["-alt", "60"], what: "the light higher" },
    { gdaldem: ["-s", "2"], what: "cells taken as twice their size" },
    { gdaldem: ["-z", "1.2"], what: "20 % more exaggeration" },
  ])("a wrong kernel fails the comparison: $what", async ({ gdaldem }) => {
    const req = await tileRequest("WebMercatorQuad", 13, "cliff", "algorithm=hillshade&resampling=bilinear");
    const { planes, alpha } = await decoded((await renderTile(cog, req)).body);
    const d = difference(planes[0], alpha, await gdaldemOnTile(req, "hillshade", gdaldem));
    expect(d.maxAbs > HILLSHADE.maxAbs || d.meanAbs > HILLSHADE.meanAbs).toBe(true);
  });
});

/** Slope's values (before any colouring) over the tile, through the same composition a tile paints. */
async function slopeValues(req: TileRequest): Promise<{ values: Float32Array; valid: Uint8Array }> {
  const tms = tileMatrixSet(req.tileMatrixSet);
  const [left, , , top] = tileBounds(tms, req.z, req.x, req.y);
  const cell = tms.tileMatrices[req.z].cellSize;
  const grid = { crs: setCrs(tms.id), affine: [left, cell, 0, top, 0, -cell] as [number, number, number, number, number, number], width: 256, height: 256 };
  const composed = await composeValues([cogAsset(cog, req, DEM.id)], { ...req, grid, format: undefined }, signal());
  const work = cog.budget.tryReserve(composed.cost.bytes, "slope values", "tile");
  try {
    const out = await composed.values(signal(), work);
    return { values: out.bands[0], valid: out.valid[0] };
  } finally {
    work.release();
  }
}

describe("slope against gdaldem on the same warped tile", () => {
  it.each([
    { query: "algorithm=slope", gdaldem: [], tolerance: 1e-3, what: "degrees" },
    { query: 'algorithm=slope&algorithm_params={"units":"percent"}', gdaldem: ["-p"], tolerance: 1e-3, what: "percent" },
  ])("$what, to $tolerance", async (c) => {
    const req = await tileRequest("WebMercatorQuad", 13, "cliff", `${c.query}&resampling=bilinear`);
    const ours = await slopeValues(req);
    const d = difference(ours.values, ours.valid, await gdaldemOnTile(req, "slope", c.gdaldem));
    expect(d.compared).toBeGreaterThan(20_000);
    expect(d.validity).toBe(0);
    expect(d.maxAbs).toBeLessThanOrEqual(c.tolerance);
    // …and one the cliff makes steep: the comparison is not of flat ground.
    expect(Math.max(...ours.values)).toBeGreaterThan(20);
  });

  it("a wrong cell size fails it", async () => {
    const req = await tileRequest("WebMercatorQuad", 13, "cliff", "algorithm=slope&resampling=bilinear");
    const ours = await slopeValues(req);
    expect(difference(ours.values, ours.valid, await gdaldemOnTile(req, "slope", ["-s", "1.1"])).maxAbs).toBeGreaterThan(1e-3);
  });

  it("the rendered tile is the values rescaled 0–90° to 8 bits", async () => {
    const req = await tileRequest("WebMercatorQuad", 13, "cliff", "algorithm=slope&resampling=bilinear");
    const { planes, alpha } = await decoded((await renderTile(cog, req)).body);
    const reference = Float32Array.from(await gdaldemOnTile(req, "slope", []), (v) => (Number.isNaN(v) ? v : Math.round(Math.min(1, v / 90) * 255)));
    const d = difference(planes[0], alpha, reference);
    expect(d.validity).toBe(0);
    expect(d.maxAbs).toBeLessThanOrEqual(1);
  });
});

/** Heights decoded from a tile's R, G, B as MapLibre decodes them. */
const DECODERS = {
  terrarium: (r: number, g: number, b: number) => r * 256 + g + b / 256 - 32768,
  terrainrgb: (r: number, g: number, b: number) => -10000 + (r * 65536 + g * 256 + b) * 0.1,
};

describe("terrain encodings decoded back to metres", () => {
  it.each([
    { algorithm: "terrarium", ext: "png", step: 1 / 256 },
    { algorithm: "terrarium", ext: "webp", step: 1 / 256 },
    { algorithm: "terrainrgb", ext: "png", step: 0.05 + 1e-6 },
    { algorithm: "terrainrgb", ext: "webp", step: 0.05 + 1e-6 },
  ] as const)("$algorithm in $ext: every pixel within $step m of the warped DEM, nodata at 0 m", async (c) => {
    const req = await tileRequest("WebMercatorQuad", 13, "lake", `algorithm=${c.algorithm}&resampling=bilinear`, c.ext);
    const tile = await renderTile(cog, req);
    const { planes, alpha } = await decoded(tile.body);
    const warped = await warpTile(cog, { ...req, algorithm: undefined, bidx: [1] });
    let worst = 0;
    let nodata = 0;
    for (let i = 0; i < 256 * 256; i++) {
      const height = DECODERS[c.algorithm](planes[0][i], planes[1][i], planes[2][i]);
      expect(alpha[i], "every pixel opaque").toBe(255);
      if (!warped.valid[0][i]) {
        nodata++;
        expect(Math.abs(height)).toBeLessThanOrEqual(c.step);
      } else worst = Math.max(worst, Math.abs(height - warped.bands[0][i]));
    }
    expect(nodata, "the tile crosses a nodata lake").toBeGreaterThan(100);
    expect(worst).toBeLessThanOrEqual(c.step);
  });
});

/** The 2×2 block of tiles from `first`, and the same ground as one 512² area, hillshaded: each tile's pixels against the area's. */
async function blockAgainstArea(source: Cog, first: TileRequest): Promise<{ differing: number; worst: number; alphaDiffering: number }> {
  const tms = tileMatrixSet(first.tileMatrixSet);
  const [left, , , top] = tileBounds(tms, first.z, first.x, first.y);
  const cell = tms.tileMatrices[first.z].cellSize;
  const grid = { crs: setCrs(tms.id), affine: [left, cell, 0, top, 0, -cell] as [number, number, number, number, number, number], width: 512, height: 512 };
  const area = await composeTile([cogAsset(source, first, source.source.label)], { ...first, grid, format: "png" }, "a block", signal());
  const work = source.budget.tryReserve(area.cost.bytes, "a block", "tile");
  const whole = await decoded((await area.render(signal(), work, "tile")).body).finally(() => work.release());
  let [differing, worst, alphaDiffering] = [0, 0, 0];
  for (const [dx, dy] of [[0, 0], [1, 0], [0, 1], [1, 1]]) {
    const tile = await decoded((await renderTile(source, { ...first, x: first.x + dx, y: first.y + dy })).body);
    for (let i = 0; i < 256 * 256; i++) {
      const j = (dy * 256 + Math.floor(i / 256)) * 512 + dx * 256 + (i % 256);
      const d = Math.abs(tile.planes[0][i] - whole.planes[0][j]);
      if (d > 0) differing++;
      if (tile.alpha[i] !== whole.alpha[j]) alphaDiffering++;
      worst = Math.max(worst, d);
    }
  }
  return { differing, worst, alphaDiffering };
}

describe("seams", () => {
  it("on the source's own grid (copied, not resampled), a 2×2 block of hillshade tiles is the area rendered as one, exactly", async () => {
    const grey = await Cog.open(await new LocalCatalog(mapFixtures()).open(MAP_FIXTURES.mercatorGrey.id, undefined));
    try {
      const tms = tileMatrixSet("WebMercatorQuad");
      const { x, y } = await tileHolding(MAP_FIXTURES.mercatorGrey, "centre", tms, 12);
      const first = parseTileRequest({ tileMatrixSet: tms.id, z: "12", x: String(x - 1), y: `${y - 1}.png` }, new URLSearchParams('algorithm=hillshade&algorithm_params={"z_factor":40}'));
      expect(await blockAgainstArea(grey, first)).toEqual({ differing: 0, worst: 0, alphaDiffering: 0 });
    } finally {
      await grey.close();
    }
  });

  it("reprojected, the block differs from the area only as the approximate transformer's positions do", async () => {
    const first = await tileRequest("WebMercatorQuad", 13, "centre", "algorithm=hillshade&resampling=bilinear");
    const d = await blockAgainstArea(cog, first);
    // Each grid interpolates source positions over its own rows (within an eighth of a pixel,
    // gdalwarp's threshold): a shade may move a few levels where the ground is steep, but no
    // pixel at a tile's edge lacks its neighbours (two at a lake's shore move in or out of it).
    expect(d.alphaDiffering).toBeLessThanOrEqual(4);
    expect(d.differing / (512 * 512)).toBeLessThan(0.05);
  });
});
