// The map page a user opens after `npm start`: MapLibre in Chromium, on its own origin, showing
// the bundled georeferenced sample (utm-quadrants.tif, four flat-coloured quadrants in UTM 33N and
// a white square) through its TileJSON and the edge's WebMercatorQuad tiles over the real stack.
// It checks what a user would see: each quadrant's colour where GDAL puts that quadrant on the
// Earth, the page's own background around the data (the edge's transparent out-of-bounds tiles),
// and no error in the page; the values under the cursor (from /point); and the same tiles loading in plain <img> tags, as Leaflet loads them.
import { execFileSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Rgb } from "../support/browser";
import { BACKGROUND, expectColours, loadImages, lonLat, settled, startMapSite, type MapSite } from "../support/map-page";

// Flat colours stay within a few levels through resampling; a wrong tile is far off.
const COLOUR_TOLERANCE = 16; // max difference of any channel, 0..255

// The sample: 1024 px at 20 m from 500000 E, 5300000 N (samples/README.md).
const pixelToUtm = (x: number, y: number): [number, number] => [500000 + 20 * x, 5300000 - 20 * y];
/** Points to look at, by sample pixel, with the colour each must show. */
const PLACES: { name: string; pixel: [number, number]; colour: Rgb }[] = [
  { name: "north-west quadrant", pixel: [256, 256], colour: [200, 30, 30] },
  { name: "north-east quadrant", pixel: [700, 320], colour: [30, 160, 60] },
  { name: "south-west quadrant", pixel: [256, 768], colour: [30, 70, 200] },
  { name: "south-east quadrant", pixel: [768, 768], colour: [240, 200, 30] },
  { name: "white square", pixel: [928, 96], colour: [255, 255, 255] },
  // Outside the data, 1 km beyond each side (within the page's margin around the fitted bounds).
  { name: "west of the data", pixel: [-50, 512], colour: BACKGROUND },
  { name: "east of the data", pixel: [1074, 512], colour: BACKGROUND },
  { name: "north of the data", pixel: [512, -50], colour: BACKGROUND },
  { name: "south of the data", pixel: [512, 1074], colour: BACKGROUND },
];
/** Lon/lat of sample pixels as GDAL transforms them from UTM 33N. */
const sampleLonLat = (pixels: [number, number][]) => lonLat("EPSG:32633", pixels.map(([x, y]) => pixelToUtm(x, y)));

// The page's MapLibre map, used inside page.evaluate (this Node program has no DOM types).
declare const window: { map: any };

let m: MapSite;

beforeAll(async () => {
  m = await startMapSite();
});
afterAll(() => m?.close());

/** Screenshots the map and compares the colour at every place with what it must be. */
async function checkPlaces(): Promise<void> {
  const where = sampleLonLat(PLACES.map((p) => p.pixel));
  await expectColours(m.page, PLACES.map((p, i) => ({ name: p.name, lonLat: where[i], colour: p.colour })), COLOUR_TOLERANCE);
}

/** Tiles the edge answered with its empty PNG (no cache lookup, no decode), and the others. */
const emptyTiles = () => m.tiles.filter((t) => t.cache === undefined);
const decodedTiles = () => m.tiles.filter((t) => t.cache !== undefined);

describe("the MapLibre page on the UTM sample", () => {
  it("shows each quadrant where GDAL puts it and the page's background around the data, and logs no error", async () => {
    await m.page.goto(`${m.site.url}map.html?id=utm-quadrants`);
    await settled(m.page);
    expect(await m.page.locator("#status").getAttribute("class")).not.toBe("error");
    await checkPlaces();
    expect(decodedTiles().length).toBeGreaterThan(0);
    expect(m.tiles.filter((t) => t.status !== 200)).toEqual([]);
    expect(m.pageErrors).toEqual([]);
  });

  it("draws the edge's transparent tiles outside the data: the same view with the tile URLs alone, without TileJSON's bounds, as a client that ignores bounds asks for them", async () => {
    // MapLibre asks only for tiles within TileJSON's bounds; a layer of the bare tile template
    // asks for every tile on screen, so the edge answers the ones around the data with its empty PNG.
    await m.page.evaluate(() => {
      const map = window.map;
      const template: string[] = map.getSource("tessera").tiles; // read from the TileJSON
      map.removeLayer("tessera");
      map.addSource("unbounded", { type: "raster", tiles: template, tileSize: 256 });
      map.addLayer({ id: "unbounded", type: "raster", source: "unbounded" });
    });
    await settled(m.page);
    await checkPlaces();
    expect(emptyTiles().length).toBeGreaterThan(0);
    expect(emptyTiles().every((t) => t.type === "image/png")).toBe(true);
    expect(m.tiles.filter((t) => t.status !== 200)).toEqual([]);
    expect(m.pageErrors).toEqual([]);
  });

  it("serves tiles that plain <img> tags load without an error event: inside and outside the data, png and jpg, 256 and 512 px", async () => {
    const inside = decodedTiles()[0].url;
    const outside = emptyTiles()[0].url;
    const urls = [inside, inside.replace(".png", ".jpg"), inside.replace(".png", "@2x.webp"), outside, outside.replace(".png", ".jpg"), outside.replace(".png", "@2x.jpg")];
    const loaded = await loadImages(m.page, urls);
    expect(loaded).toEqual(urls.map((url) => ({ url, event: "load", width: url.includes("@2x") ? 512 : 256 })));
    expect(m.pageErrors).toEqual([]);
  });

  it("shows the values under the cursor from /point: the sample's bands at a quadrant, and outside the data", async () => {
    const [inside, outside] = sampleLonLat([[256, 256], [-50, 512]]);
    const hover = async (where: [number, number]) => {
      const { x, y } = await m.page.evaluate((p) => window.map.project(p), where);
      const box = (await m.page.locator("#view canvas").boundingBox())!;
      await m.page.mouse.move(box.x + x, box.y + y);
    };
    await hover(inside);
    // The north-west quadrant's pixel as gdallocationinfo reads it: 200, 30, 30.
    await expect.poll(() => m.page.locator("#value").textContent(), { timeout: 10_000 }).toMatch(/: b1 200 · b2 30 · b3 30$/);
    await hover(outside);
    await expect.poll(() => m.page.locator("#value").textContent(), { timeout: 10_000 }).toMatch(/: outside the data$/);
    // The page's fetch of the point outside is a 404, which Chromium logs: that one only.
    const notFound = m.pageErrors.filter((e) => /404/.test(e));
    expect(m.pageErrors.filter((e) => !notFound.includes(e))).toEqual([]);
    expect(notFound.length).toBeLessThanOrEqual(1);
  });
});

describe("the WMTS capabilities, read by GDAL's WMTS client as QGIS would add the layer", () => {
  const capabilities = () => `WMTS:${m.stack.url}/tiles/utm-quadrants/WebMercatorQuad/WMTSCapabilities.xml`;
  // GDAL would otherwise keep the tiles it reads in ./gdalwmscache, and read them from there next run.
  const gdal = (command: string, args: string[]) =>
    execFileSync(command, args, { encoding: "utf8", env: { ...process.env, GDAL_ENABLE_WMS_CACHE: "NO" } });

  it("give the layer's extent in Web Mercator at the finest matrix's resolution", async () => {
    const info = JSON.parse(gdal("gdalinfo", ["-json", capabilities()]));
    const tileJson = (await (await fetch(`${m.stack.url}/tiles/utm-quadrants/WebMercatorQuad/tilejson.json`)).json()) as { bounds: number[]; maxzoom: number };
    expect(info.geoTransform[1]).toBeCloseTo(156543.03392804097 / 2 ** tileJson.maxzoom, 6);
    const { upperLeft, lowerRight } = info.wgs84Extent.coordinates[0].reduce(
      (acc: { upperLeft: number[]; lowerRight: number[] }, [lon, lat]: number[]) => ({
        upperLeft: [Math.min(acc.upperLeft[0], lon), Math.max(acc.upperLeft[1], lat)],
        lowerRight: [Math.max(acc.lowerRight[0], lon), Math.min(acc.lowerRight[1], lat)],
      }),
      { upperLeft: [180, -90], lowerRight: [-180, 90] },
    );
    // Within a pixel of the finest matrix (about 20 m, under 0.0003°) of TileJSON's bounds.
    const [west, south, east, north] = tileJson.bounds;
    for (const [got, want] of [
      [upperLeft[0], west],
      [upperLeft[1], north],
      [lowerRight[0], east],
      [lowerRight[1], south],
    ]) {
      expect(Math.abs(got - want)).toBeLessThan(0.0003);
    }
  });

  // The sample's own UTM zone, and LAEA, whose corners WMTS writes northing first.
  it.each(["WebMercatorQuad", "UTM33WGS84Quad", "EuropeanETRS89_LAEAQuad"])("lead GDAL to the tiles on %s: each place's colour, read through the layer at its lon/lat", (set) => {
    const inside = PLACES.filter((p) => p.colour !== BACKGROUND);
    const where = sampleLonLat(inside.map((p) => p.pixel));
    const layer = capabilities().replace("/WebMercatorQuad/", `/${set}/`);
    const read = inside.map((place, i) => {
      const values = gdal("gdallocationinfo", ["-valonly", "-wgs84", layer, ...where[i].map(String)]);
      return { name: place.name, colour: values.trim().split("\n").slice(0, 3).map(Number) };
    });
    expect(read).toEqual(inside.map((p) => ({ name: p.name, colour: p.colour })));
  });
});
