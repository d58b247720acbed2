// The map page a user opens on a mosaic and on a styled STAC item: MapLibre in Chromium over the
// real stack reading the GDAL-made mosaic fixtures. The colours it must show are computed here
// from the fixtures' value functions (which asset takes part and wins a pixel, the NDVI and its
// ramp colour), independently of the decoder; outside the data and over nodata the page's own
// background shows; the page logs no error and every tile answer is 200.
import { interpolateRdYlGn } from "d3-scale-chromatic";
import { rgb } from "d3-color";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Rgb } from "../support/browser";
import { BACKGROUND, expectColours, jumpTo, loadImages, lonLat, settled, startMapSite, type Place, type MapSite } from "../support/map-page";
import { gridPixel, MOSAIC_FIXTURES, MOSAIC_PARENT, MOSAIC_Z, mosaicFixtures, RGB_MOSAIC_TILES, SCENE_FIXTURES } from "../support/mosaic-fixtures";
import { tileToQuadkey } from "../../shared/maps/mosaic-json";

let m: MapSite;

beforeAll(async () => {
  m = await startMapSite({ decoderEnv: { TESSERA_DATA_DIR: mosaicFixtures() } });
});
afterAll(() => m?.close());

/** Opens the page with `query` and waits until its fitted view is drawn, with no error in its header. */
async function open(query: string): Promise<void> {
  m.tiles.length = 0;
  await m.page.goto(`${m.site.url}map.html?${query}`);
  await settled(m.page);
  expect(await m.page.locator("#status").getAttribute("class")).not.toBe("error");
}

/** No failed tile, no page error, and at least one tile drawn. */
function expectCleanLoad(): void {
  expect(m.tiles.length).toBeGreaterThan(0);
  expect(m.tiles.filter((t) => t.status !== 200)).toEqual([]);
  expect(m.pageErrors).toEqual([]);
}

// ---------------------------------------------------------------------------------------------
// rgb-mosaic with pixel_selection=highest&rank_channel=2: where rgb-a and rgb-b overlap, the one
// with the higher green at a pixel wins it, among those whose three bands are all valid there.

const [P, Q] = [2 * MOSAIC_PARENT.x, 2 * MOSAIC_PARENT.y];
const TILE = 256;
const RGB_ASSETS = [MOSAIC_FIXTURES.rgbA, MOSAIC_FIXTURES.rgbB];

/** Longitude and latitude of a point given in pixels of the MOSAIC_Z grid (spherical Web Mercator). */
function gridLonLat(gx: number, gy: number): [number, number] {
  const n = TILE * 2 ** MOSAIC_Z;
  return [(gx / n) * 360 - 180, (Math.atan(Math.sinh(Math.PI * (1 - (2 * gy) / n))) * 180) / Math.PI];
}

/** The colour the mosaic must show at pixel (px, py) of tile (x, y) at MOSAIC_Z, or the background where no asset takes part. */
function highestGreen(x: number, y: number, px: number, py: number): Rgb {
  const listed = RGB_MOSAIC_TILES[tileToQuadkey(MOSAIC_Z, x, y)] ?? [];
  const tuples = listed
    .map((key) => RGB_ASSETS.find((f) => f.key === key)!)
    .map((f) => ({ f, at: gridPixel(f, MOSAIC_Z, x, y, px, py) }))
    .filter(({ f, at }) => at && [0, 1, 2].every((b) => f.valid(at[0], at[1], b)))
    .map(({ f, at }) => [0, 1, 2].map((b) => f.value(at![0], at![1], b)) as Rgb);
  // Ties go to the earlier asset in paint order: only a strictly higher green replaces it.
  return tuples.reduce<Rgb | undefined>((best, t) => (best === undefined || t[1] > best[1] ? t : best), undefined) ?? BACKGROUND;
}

/**
 * Places by tile (at MOSAIC_Z) and pixel, each at least 4 pixels from any step in the value
 * functions (a mod wrap, a nodata edge, a change of winner), so a 5×5 patch on screen reads one
 * flat-enough gradient of one asset.
 */
const RGB_PLACES: { name: string; tile: [number, number]; pixel: [number, number] }[] = [
  { name: "rgb-a alone", tile: [P, Q], pixel: [130, 100] },
  { name: "overlap, rgb-b's green higher", tile: [P + 1, Q], pixel: [40, 60] },
  { name: "overlap, rgb-a's green higher", tile: [P + 1, Q], pixel: [200, 180] },
  { name: "overlap, rgb-b's red nodata: rgb-a wins with the lower green", tile: [P + 1, Q], pixel: [108, 30] },
  { name: "overlap, rgb-a's green nodata: rgb-b wins with the lower green", tile: [P + 1, Q + 1], pixel: [60, 52] },
  { name: "rgb-b alone", tile: [P + 2, Q + 1], pixel: [50, 50] },
  { name: "north of the data", tile: [P + 1, Q], pixel: [128, -22] },
  { name: "south of the data", tile: [P + 1, Q + 1], pixel: [128, 256 + 22] },
];

function rgbPlaces(): Place[] {
  return RGB_PLACES.map(({ name, tile: [x, y], pixel: [px, py] }) => ({
    name,
    lonLat: gridLonLat(x * TILE + px + 0.5, y * TILE + py + 0.5),
    colour: py < 0 || py >= TILE ? BACKGROUND : highestGreen(x, y, px, py),
  }));
}

// At MOSAIC_Z each tile reads the full level pixel for pixel (coarser ones read overviews, whose
// pixels are GDAL's choice), and the byte values go to the screen unchanged (PNG, no rescale).
// The gradients change by at most 2 levels a pixel, evenly about each place, so the patch's mean
// is the place's value within a level; 6 allows for MapLibre's linear filtering in SwiftShader.
// The wrong asset at any place is 30 levels or more off in some channel.
const RGB_TOLERANCE = 6;

describe("the MapLibre page on a MosaicJSON mosaic", () => {
  it("shows, where two RGB assets overlap, the one with the higher green (pixel_selection=highest&rank_channel=2) among those valid there, and the background around the data", async () => {
    await open("id=rgb-mosaic&pixel_selection=highest&rank_channel=2");
    // The view centred on the overlap, drawing MOSAIC_Z's tiles pixel for pixel: MapLibre's zoom
    // counts 512 px tiles, so its zoom one less shows the 256 px tiles of MOSAIC_Z.
    await jumpTo(m.page, gridLonLat((P + 1) * TILE + 128, (Q + 1) * TILE), MOSAIC_Z - 1);
    await expectColours(m.page, rgbPlaces(), RGB_TOLERANCE);
    expectCleanLoad();
  });

  it("serves the TileJSON's tiles to plain <img> tags: png and webp, 256 and 512 px", async () => {
    const inside = m.tiles.find((t) => t.cache !== undefined)!.url;
    const urls = [inside, inside.replace(".png", "@2x.webp")];
    expect(await loadImages(m.page, urls)).toEqual(urls.map((url) => ({ url, event: "load", width: url.includes("@2x") ? 512 : 256 })));
    expect(m.tiles.filter((t) => t.status !== 200 || !t.type?.startsWith("image/"))).toEqual([]);
    expect(m.pageErrors).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------
// scene.stac.json styled as NDVI through a named ramp: (B08 − B04)/(B08 + B04) rescaled from
// [−1, 1] to the ramp's 0–1, and transparent where B08 is nodata.

const SCENE = SCENE_FIXTURES.scene;
/** UTM 33N coordinates of the centre of scene pixel (col, row). */
const [EAST, , , NORTH] = SCENE.B02.geoTransform;
const sceneUtm = (col: number, row: number): [number, number] => [EAST + 10 * (col + 0.5), NORTH - 10 * (row + 0.5)];

/** The ramp's colour for the NDVI at scene pixel (col, row), or the background where B08 is nodata. */
function ndviColour(col: number, row: number): Rgb {
  if (!SCENE.B08.valid(col, row, 0)) return BACKGROUND;
  const [nir, red] = [SCENE.B08.value(col, row, 0), SCENE.B04.value(col, row, 0)];
  const ndvi = (nir - red) / (nir + red);
  const { r, g, b } = rgb(interpolateRdYlGn((ndvi + 1) / 2));
  return [r, g, b].map(Math.round) as Rgb;
}

/**
 * Places by scene pixel, each at least 20 pixels from B04's wrap (col + row a multiple of 256)
 * and from the nodata square's edge: the page shows the fitted view, whose tiles read an
 * overview and resample it across UTM and Web Mercator, so a screen pixel may read a scene
 * pixel a few away.
 */
const SCENE_PLACES: { name: string; pixel: [number, number] }[] = [
  { name: "high NDVI (bright NIR, dim red)", pixel: [1000, 50] },
  { name: "high NDVI, mid-scene", pixel: [700, 110] },
  { name: "low NDVI (dim NIR, bright red)", pixel: [20, 980] },
  { name: "low NDVI, mid-scene", pixel: [200, 780] },
  { name: "B08's nodata square", pixel: [650, 250] },
  { name: "west of the scene", pixel: [-30, 500] },
];

// Away from the wrap NDVI changes by under 0.002 a scene pixel: under half a level of the ramp
// (0.001 of its 0–1). 8 allows for the ramp's 256 steps and SwiftShader's filtering; the low and
// high places' colours differ by far more (yellow against green).
const SCENE_TOLERANCE = 8;

describe("the MapLibre page on a STAC item", () => {
  it("shows NDVI through the rdylgn ramp: green where NIR is bright and red dim, yellow where not, and the background over B08's nodata and around the scene", async () => {
    await open("id=scene&expression=(B08-B04)/(B08%2BB04)&rescale=-1,1&colormap_name=rdylgn");
    const where = lonLat("EPSG:32633", SCENE_PLACES.map(({ pixel: [col, row] }) => sceneUtm(col, row)));
    const places = SCENE_PLACES.map(({ name, pixel: [col, row] }, i) => {
      const outside = col < 0 || row < 0 || col >= SCENE.B08.width || row >= SCENE.B08.height;
      return { name, lonLat: where[i], colour: outside ? BACKGROUND : ndviColour(col, row) };
    });
    await expectColours(m.page, places, SCENE_TOLERANCE);
    expectCleanLoad();
  });

  it("serves the TileJSON's tiles, styled, to plain <img> tags", async () => {
    const inside = m.tiles.find((t) => t.cache !== undefined)!.url;
    expect(inside).toContain("colormap_name=rdylgn");
    const urls = [inside, inside.replace(".png", ".jpg")];
    expect(await loadImages(m.page, urls)).toEqual(urls.map((url) => ({ url, event: "load", width: 256 })));
    expect(m.tiles.filter((t) => t.status !== 200 || !t.type?.startsWith("image/"))).toEqual([]);
    expect(m.pageErrors).toEqual([]);
  });
});
