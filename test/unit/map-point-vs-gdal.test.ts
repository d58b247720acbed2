// The decoder's point route (/v1/point) against `gdallocationinfo` on the GDAL-made map fixtures:
// a point placed inside a pixel (not at its centre) by GDAL's own transformer, then read by
// gdallocationinfo -wgs84 (-geoloc for coord_crs) and by the decoder: the same pixel, the same
// values (exact: the full level's stored samples; the JPEG fixture within the two JPEG decoders'
// difference), nodata and masked pixels null, bidx, expressions; a mosaic's per-asset values
// and the one pixel_selection chooses; outside the data 404; hostile coordinates 400.
import { execFileSync } from "node:child_process";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LocalCatalog } from "../../regional/source/local";
import { ADMISSION_DEFAULTS } from "../../shared/admission-config";
import { ESTIMATE_HEADER } from "../../shared/cost";
import { DECODER, type SourceInfo } from "../../shared/protocol";
import { gdalPixelToLonLat } from "../support/gdal-reference";
import { MAP_FIXTURES, mapFixture, mapFixtures, type MapFixture } from "../support/map-fixtures";
import { MOSAIC_FIXTURES, mosaicFixtures, SCENE_FIXTURES } from "../support/mosaic-fixtures";
import { signedGet, startDecoder, type Decoder } from "./regional-helpers";

let maps: Decoder;
let mosaics: Decoder;
const versions: Record<string, string> = {};

beforeAll(async () => {
  maps = await startDecoder(new LocalCatalog(mapFixtures()));
  mosaics = await startDecoder(new LocalCatalog(mosaicFixtures()));
  for (const [d, id] of [...Object.values(MAP_FIXTURES).map((f) => [maps, f.id] as const), ...["mono-mosaic", "scene", "scenes"].map((id) => [mosaics, id] as const)]) {
    versions[id] = ((await (await signedGet(d, DECODER.info(id))).json()) as SourceInfo).version;
  }
}, 120_000);
afterAll(async () => {
  await maps?.close();
  await mosaics?.close();
});

interface Answer {
  coordinates: [number, number];
  values: (number | null)[];
  band_names: string[];
  assets?: { name: string; values: (number | null)[]; band_names: string[] }[];
}

async function point(d: Decoder, id: string, coords: string, query = ""): Promise<{ status: number; body: Answer & { message?: string }; type: string | null }> {
  const res = await signedGet(d, DECODER.point(id, query ? `${coords}?${query}` : coords, versions[id]));
  return { status: res.status, body: (await res.json()) as Answer & { message?: string }, type: res.headers.get("content-type") };
}

/** gdallocationinfo's answer at the point: the pixel it picked and each band's value. */
function gdalLocation(file: string, x: number, y: number, how: "-wgs84" | "-geoloc"): { pixel: [number, number]; values: number[] } {
  const out = execFileSync("gdallocationinfo", [how, file, String(x), String(y)], { encoding: "utf8" });
  const at = /Location: \((\d+)P,(\d+)L\)/.exec(out);
  if (!at) throw new Error(`gdallocationinfo: ${out}`);
  const values = [...out.matchAll(/Value: (\S+)/g)].map((m) => Number(m[1]));
  const valonly = execFileSync("gdallocationinfo", ["-valonly", how, file, String(x), String(y)], { encoding: "utf8" }).trim().split("\n").map(Number);
  expect(valonly).toEqual(values);
  return { pixel: [Number(at[1]), Number(at[2])], values };
}

/** What the point's values must be: GDAL's, null where the fixture's nodata or mask says so. */
function expected(f: MapFixture, pixel: [number, number], values: number[], bands = values.map((_, i) => i + 1)): (number | null)[] {
  const masked = f.mask && !f.mask(pixel[0], pixel[1]);
  return bands.map((b) => (masked || values[b - 1] === f.nodata ? null : values[b - 1]));
}

/** Longitude, latitude of a spot inside pixel (col, row), off its centre, as GDAL places it. */
async function lonLatIn(f: MapFixture, [col, row]: [number, number]): Promise<[number, number]> {
  return (await gdalPixelToLonLat(mapFixture(f), [[col + 0.3, row + 0.7]]))[0];
}

/** The decoders' largest difference per fixture: 0 but for the JPEG one (two JPEG decoders: 5 levels at most on the stored level). */
const TOLERANCE: Record<string, number> = { "utm-rgb": 6, "utm-dem": 0, "wgs84-uint16": 0, "mercator-grey": 0 };

const PIXELS: [keyof typeof MAP_FIXTURES, [number, number], string][] = [
  ["utmDem", [500, 750], "data"],
  ["utmDem", [500, 700], "a nodata lake"],
  ["utmDem", [600, 500], "a cliff"],
  ["utmDem", [999, 1499], "the last pixel"],
  ["wgs84Uint16", [600, 400], "four bands"],
  ["wgs84Uint16", [0, 0], "the first pixel"],
  ["wgs84Uint16", [1199, 799], "the last pixel"],
  ["mercatorGrey", [150, 100], "a nodata collar"],
  ["mercatorGrey", [700, 600], "a checkerboard"],
  ["utmRgb", [1024, 1024], "RGB"],
  ["utmRgb", [5, 5], "masked"],
];

describe("GET /v1/point against gdallocationinfo", () => {
  it.each(PIXELS.map(([name, pixel, what]) => ({ name, pixel, what })))("$name $pixel: $what", async ({ name, pixel, what }) => {
    const f = MAP_FIXTURES[name];
    const [lon, lat] = await lonLatIn(f, pixel);
    const gdal = gdalLocation(mapFixture(f), lon, lat, "-wgs84");
    expect(gdal.pixel, "GDAL reads the pixel the point was placed in").toEqual(pixel);
    const { status, body, type } = await point(maps, f.id, `${lon},${lat}`);
    expect(status, JSON.stringify(body)).toBe(200);
    expect(type).toBe("application/json");
    expect(body.coordinates).toEqual([lon, lat]);
    expect(body.band_names).toEqual(Array.from({ length: f.bands }, (_, i) => `b${i + 1}`));
    const want = expected(f, pixel, gdal.values);
    expect(body.values.map((v) => v === null), what).toEqual(want.map((v) => v === null));
    body.values.forEach((v, i) => v !== null && expect(Math.abs(v - Math.fround(want[i]!)), `band ${i + 1}`).toBeLessThanOrEqual(TOLERANCE[f.id]));
  });

  it("reads the bands bidx names, in its order", async () => {
    const f = MAP_FIXTURES.wgs84Uint16;
    const [lon, lat] = await lonLatIn(f, [333, 222]);
    const gdal = gdalLocation(mapFixture(f), lon, lat, "-wgs84");
    const { body } = await point(maps, f.id, `${lon},${lat}`, "bidx=3,1");
    expect(body.band_names, JSON.stringify(body)).toEqual(["b3", "b1"]);
    expect(body.values).toEqual([gdal.values[2], gdal.values[0]]);
  });

  it("evaluates an expression, its channels named by their text; nodata in, null out", async () => {
    const f = MAP_FIXTURES.wgs84Uint16;
    const [lon, lat] = await lonLatIn(f, [333, 222]);
    const [b1, b2, , b4] = gdalLocation(mapFixture(f), lon, lat, "-wgs84").values;
    const { body } = await point(maps, f.id, `${lon},${lat}`, `expression=${encodeURIComponent("(b1 - b2) / (b1 + b2); b4 * 2")}`);
    expect(body.band_names).toEqual(["(b1-b2)/(b1+b2)", "b4*2"]);
    expect(body.values[0]).toBe(Math.fround((b1 - b2) / (b1 + b2)));
    expect(body.values[1]).toBe(b4 * 2);
    const dem = MAP_FIXTURES.utmDem;
    const [lakeLon, lakeLat] = await lonLatIn(dem, [500, 700]);
    expect((await point(maps, dem.id, `${lakeLon},${lakeLat}`, "expression=b1%2B1")).body.values).toEqual([null]);
  });

  it("takes nodata= over the file's: the value becomes null", async () => {
    const f = MAP_FIXTURES.wgs84Uint16;
    const [lon, lat] = await lonLatIn(f, [0, 0]);
    const gdal = gdalLocation(mapFixture(f), lon, lat, "-wgs84");
    const { body } = await point(maps, f.id, `${lon},${lat}`, `nodata=${gdal.values[0]}&bidx=1`);
    expect(body.values).toEqual([null]);
  });

  it("takes coord_crs in the source's CRS, as gdallocationinfo -geoloc", async () => {
    const f = MAP_FIXTURES.utmDem;
    const [x0, dx, , y0, , dy] = f.geoTransform;
    for (const [col, row] of [[600, 500], [123, 1234]]) {
      const [x, y] = [x0 + (col + 0.6) * dx, y0 + (row + 0.2) * dy];
      const gdal = gdalLocation(mapFixture(f), x, y, "-geoloc");
      expect(gdal.pixel).toEqual([col, row]);
      const { status, body } = await point(maps, f.id, `${x},${y}`, "coord_crs=EPSG:32633");
      expect(status).toBe(200);
      expect(body.values).toEqual(expected(f, gdal.pixel, gdal.values).map((v) => (v === null ? null : Math.fround(v))));
    }
    // Web Mercator for a UTM source: converted through lon/lat.
    const grey = MAP_FIXTURES.mercatorGrey;
    const [gx, gy] = [grey.geoTransform[0] + 700.5 * grey.geoTransform[1], grey.geoTransform[3] + 600.5 * grey.geoTransform[5]];
    const gdal = gdalLocation(mapFixture(grey), gx, gy, "-geoloc");
    expect((await point(maps, grey.id, `${gx},${gy}`, "coord_crs=EPSG:3857")).body.values).toEqual(gdal.values);
  });

  it("answers 404 outside the data, 400 for hostile coordinates and unknown codes", async () => {
    const outside = await point(maps, "utm-dem", "0,0");
    expect(outside.status).toBe(404);
    expect(outside.body.message).toMatch(/outside/);
    for (const coords of ["NaN,45", "1e999,45", "0x10,45", "15", " 15,45", `1${"0".repeat(400)},45`, "15,91", "181,45"]) {
      expect((await point(maps, "utm-dem", encodeURIComponent(coords).replace("%2C", ","))).status, coords).toBe(400);
    }
    expect((await point(maps, "utm-dem", "15,45", "coord_crs=EPSG:999999")).status).toBe(400);
    expect((await point(maps, "utm-dem", "15,45", "rescale=0,1")).status).toBe(400);
    expect((await point(maps, "wgs84-uint16", "10.3,49.5", "bidx=5")).body.message).toMatch(/bidx 5 is past the source's 4 bands/);
    expect((await point(maps, "wgs84-uint16", "10.3,49.5", `bidx=${"1,".repeat(300)}1`)).status).toBe(400);
  });

  it("is costed as a tile: one block read, far below the large-decode threshold", async () => {
    const [lon, lat] = await lonLatIn(MAP_FIXTURES.utmRgb, [1024, 1024]);
    const res = await signedGet(maps, DECODER.point("utm-rgb", `${lon},${lat}`, versions["utm-rgb"]));
    expect(res.status).toBe(200);
    const estimate = Number(res.headers.get(ESTIMATE_HEADER));
    // One 256² JPEG block (3 bands and the mask) decoded: about 300 kB, whatever the image's size.
    expect(estimate).toBeGreaterThan(256 * 256 * 3);
    expect(estimate).toBeLessThan(ADMISSION_DEFAULTS.LARGE_DECODE_THRESHOLD_BYTES / 4);
  });
});

describe("GET /v1/point on a mosaic", () => {
  const { monoA, monoB, monoC } = MOSAIC_FIXTURES;
  const file = (f: { key: string }) => path.join(mosaicFixtures(), f.key);

  /** Each asset's value at the point per gdallocationinfo, null where its nodata or mask says so, in the index's paint order (c, a, b). */
  async function perAsset(cPixel: [number, number]) {
    const [[lon, lat]] = await gdalPixelToLonLat(file(monoC), [[cPixel[0] + 0.3, cPixel[1] + 0.7]]);
    const values = [monoC, monoA, monoB].map((f) => {
      const gdal = gdalLocation(file(f), lon, lat, "-wgs84");
      return expected(f, gdal.pixel, gdal.values)[0];
    });
    return { lon, lat, values };
  }

  it("answers every asset's value and the one pixel_selection chooses", async () => {
    const { lon, lat, values } = await perAsset([150, 200]);
    expect(values).toEqual([110, 106, 136]);
    const modes: [string, number][] = [["first", 110], ["highest", 136], ["lowest", 106], ["mean", Math.fround((110 + 106 + 136) / 3)], ["count", 3]];
    for (const [mode, chosen] of modes) {
      const { status, body } = await point(mosaics, "mono-mosaic", `${lon},${lat}`, mode === "first" ? "" : `pixel_selection=${mode}`);
      expect(status, JSON.stringify(body)).toBe(200);
      expect(body.values, mode).toEqual([chosen]);
      expect(body.assets!.map((a) => a.values[0]), mode).toEqual(values);
      expect(body.assets!.map((a) => a.name)).toEqual(["mono-c.tif", "mono-a.tif", "mono-b.tif"]);
    }
  });

  it("skips invalid assets: first takes the first valid one", async () => {
    // mono-c's masked disc and mono-a's nodata square overlap here; mono-b has data.
    const { lon, lat, values } = await perAsset([100, 100]);
    expect(values[0]).toBeNull();
    expect(values[1]).toBeNull();
    expect(values[2]).toBe(156);
    const { body } = await point(mosaics, "mono-mosaic", `${lon},${lat}`);
    expect(body.values).toEqual([156]);
    expect(body.assets!.map((a) => a.values[0])).toEqual(values);
  });

  it("answers 404 outside every asset", async () => {
    expect((await point(mosaics, "mono-mosaic", "0,0")).status).toBe(404);
  });

  it("reads a STAC item's assets, and where two items lie, each item's values and the highest", async () => {
    const b04 = SCENE_FIXTURES.scene.B04;
    // Inside both scenes: the second lies 5 120 m (512 px) east of the first.
    const [[lon, lat]] = await gdalPixelToLonLat(file(b04), [[800.3, 400.6]]);
    const gdal = (f: { key: string }) => gdalLocation(file(f), lon, lat, "-wgs84").values[0];
    const [red, nir] = [gdal(SCENE_FIXTURES.scene.B04), gdal(SCENE_FIXTURES.scene.B08)];
    const one = await point(mosaics, "scene", `${lon},${lat}`, `expression=${encodeURIComponent("(B08-B04)/(B08+B04)")}`);
    expect(one.status, JSON.stringify(one.body)).toBe(200);
    expect(one.body.band_names).toEqual(["(B08-B04)/(B08+B04)"]);
    expect(one.body.values).toEqual([Math.fround((nir - red) / (nir + red))]);
    const both = await point(mosaics, "scenes", `${lon},${lat}`, "assets=B02&pixel_selection=highest");
    const blues = [gdal(SCENE_FIXTURES.scene.B02), gdal(SCENE_FIXTURES.scene2.B02)];
    expect(both.body.assets!.map((a) => [a.name, a.values[0]])).toEqual([["scene", blues[0]], ["scene-2", blues[1]]]);
    expect(both.body.values).toEqual([Math.max(...blues)]);
  });
});
