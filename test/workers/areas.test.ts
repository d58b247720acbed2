// Crops and previews (/bbox, /preview) through the Worker, the admission DO and a real decoder
// over the bundled UTM sample (1024² pixels of 20 m, EPSG:32633, near 15.1°E 47.76°N): a miss is
// decoded once and every spelling then hits; sizes follow the request; the cheapest URLs that
// would buy the most work or memory are refused before any decode.
import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import { bytes, get, heartbeat, metric, pngSize } from "./helpers";

const BOX = "15.05,47.7,15.2,47.8";

beforeEach(async () => {
  expect((await heartbeat({ url: env.TEST_WORKING_DECODER_URL, capacity: 4 })).status).toBe(204);
});

describe("areas decoded by a real decoder", () => {
  it("decode a box once; every spelling of it then hits the same entry and ETag", async () => {
    const miss = await get(`/bbox/utm-quadrants/${BOX}/300x200.png`);
    expect(miss.status, await miss.clone().text()).toBe(200);
    expect(miss.headers.get("content-type")).toBe("image/png");
    expect(miss.headers.get("x-tessera-cache")).toBe("miss");
    expect(miss.headers.get("link")).toBe(`<${"http://tessera.test"}/bbox/utm-quadrants/${BOX}/300x200.png>;rel="canonical"`);
    const png = await bytes(miss);
    expect(pngSize(png)).toEqual([300, 200]);
    const admitted = await metric("released_total");
    for (const spelling of [`/bbox/utm-quadrants/15.050,47.70,15.2,47.80/300x200.png`, `/bbox/utm-quadrants/${BOX}/300x200.png?coord_crs=epsg:4326&resampling=nearest`]) {
      const hit = await get(spelling);
      expect(hit.headers.get("x-tessera-cache"), spelling).toBe("hit");
      expect(hit.headers.get("etag"), spelling).toBe(miss.headers.get("etag"));
      expect(await bytes(hit), spelling).toEqual(png);
    }
    expect(await metric("released_total")).toBe(admitted);
    // The decoder counts them under a route label of their own.
    const metrics = await (await fetch(`${env.TEST_WORKING_DECODER_URL}/metrics`)).text();
    expect(metrics).toMatch(/^tessera_decoder_requests_total\{route="areas",status="200"\} [1-9]/m);
  });

  it("paint a box without a size at the source's resolution in its own CRS, and max_size shrinks it", async () => {
    // 0.15° by 0.1° at 47.75°N is about 11.2 km by 11.1 km: about 560 by 556 pixels of 20 m.
    const [width, height] = pngSize(await bytes(await get(`/bbox/utm-quadrants/${BOX}.png`)));
    expect(width).toBeGreaterThan(540);
    expect(width).toBeLessThan(580);
    expect(height).toBeGreaterThan(540);
    const shrunk = pngSize(await bytes(await get(`/bbox/utm-quadrants/${BOX}.png?max_size=100`)));
    expect(Math.max(...shrunk)).toBe(100);
  });

  it("preview the whole source at max_size, its shape kept, and at a size asked", async () => {
    const small = await get("/preview/utm-quadrants.png?max_size=256");
    expect(small.status, await small.clone().text()).toBe(200);
    expect(pngSize(await bytes(small))).toEqual([256, 256]);
    const jpg = await get("/preview/utm-quadrants/120x80.jpg");
    expect(jpg.headers.get("content-type")).toBe("image/jpeg");
    const webp = await get("/preview/utm-quadrants.webp?max_size=512");
    expect(webp.headers.get("content-type")).toBe("image/webp");
    const tif = await get(`/bbox/utm-quadrants/${BOX}/64x64.tiff`);
    expect(tif.headers.get("content-type")).toBe("image/tiff; application=geotiff");
    expect([...(await bytes(tif)).subarray(0, 4)]).toEqual([0x49, 0x49, 0x2a, 0]); // a little-endian TIFF
  });

  it("paint a mosaic's box from its assets: the one asset's own pixels, painted in the same CRS", async () => {
    const fromCog = await get(`/bbox/utm-quadrants/${BOX}/300x200.png`);
    const fromMosaic = await get(`/bbox/quadrants/${BOX}/300x200.png?dst_crs=EPSG:32633`);
    expect(fromMosaic.status, await fromMosaic.clone().text()).toBe(200);
    expect(await bytes(fromMosaic)).toEqual(await bytes(fromCog));
    expect(Math.max(...pngSize(await bytes(await get("/preview/quadrants.png?max_size=200"))))).toBe(200);
    // Its index's one quadkey is the world: the asset is read for any box, and one it misses is transparent.
    const outside = await get("/bbox/quadrants/-10,-10,-9,-9/64x64.png");
    expect(outside.status).toBe(200);
    expect(pngSize(await bytes(outside))).toEqual([64, 64]);
  });

  it("a box that misses the source is answered without pixels, as outside a tile", async () => {
    const res = await get("/bbox/utm-quadrants/-10,-10,-9,-9/64x64.png");
    expect(res.status).toBe(200);
    const { data } = { data: await bytes(res) };
    expect(pngSize(data)).toEqual([64, 64]);
  });
});

describe("a feature's area (POST /feature)", () => {
  const ring = [[15.06, 47.71], [15.18, 47.71], [15.18, 47.79], [15.06, 47.79], [15.06, 47.71]];
  const post = (path: string, body: unknown) => get(path, { method: "POST", body: typeof body === "string" ? body : JSON.stringify(body), headers: { "content-type": "application/geo+json" } });

  it("is the polygon's box, transparent outside it; the same feature spelt otherwise is a hit", async () => {
    const feature = { type: "Feature", properties: { name: "a field" }, geometry: { type: "Polygon", coordinates: [ring] } };
    const miss = await post("/feature/utm-quadrants/200x150.png", feature);
    expect(miss.status, await miss.clone().text()).toBe(200);
    expect(miss.headers.get("x-tessera-cache")).toBe("miss");
    expect(miss.headers.get("link")).toBeNull(); // no URL names a POST's answer
    expect(pngSize(await bytes(miss))).toEqual([200, 150]);
    // The same feature, keys in another order and spaced: one canonical body, one entry.
    const respelt = `{ "geometry": {"coordinates": [${JSON.stringify(ring)}], "type": "Polygon"}, "properties": {"name": "a field"}, "type": "Feature" }`;
    const hit = await post("/feature/utm-quadrants/200x150.png", respelt);
    expect(hit.headers.get("x-tessera-cache")).toBe("hit");
    expect(hit.headers.get("etag")).toBe(miss.headers.get("etag"));
    const tif = await post("/feature/utm-quadrants.tif", feature);
    expect(tif.headers.get("content-type")).toBe("image/tiff; application=geotiff");
  });

  it.each([
    ["invalid JSON", "{", 400],
    ["a Point", { type: "Feature", properties: null, geometry: { type: "Point", coordinates: [15.1, 47.75] } }, 400],
    ["an open ring", { type: "Feature", properties: null, geometry: { type: "Polygon", coordinates: [ring.slice(0, 4)] } }, 400],
    ["NaN written out", `{"type":"Feature","properties":null,"geometry":{"type":"Polygon","coordinates":[[[NaN,47],[15,47],[15,48],[NaN,47]]]}}`, 400],
    ["a body of 2 MiB", "x".repeat(2 * 1024 * 1024), 413],
  ])("refuses %s", async (_, body, status) => {
    const res = await post("/feature/utm-quadrants/64x64.png", body);
    expect(res.status).toBe(status);
  });

  it("refuses coord_crs: a feature's coordinates are GeoJSON's longitude and latitude", async () => {
    const res = await post("/feature/utm-quadrants.png?coord_crs=EPSG:32633", { type: "Feature", properties: null, geometry: { type: "Polygon", coordinates: [ring] } });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ message: expect.stringMatching(/unknown query parameter "coord_crs"/) });
  });
});

describe("areas refused before any decode", () => {
  it.each([
    ["zero pixels", `/bbox/utm-quadrants/${BOX}/0x0.png`, 400, /from 1 to 8192/],
    ["a hundred thousand pixels a side", `/bbox/utm-quadrants/${BOX}/100000x100000.png`, 400, /from 1 to 8192/],
    ["a max_size of a billion", `/preview/utm-quadrants.png?max_size=1000000000`, 400, /max_size/],
    ["NaN in the box", "/bbox/utm-quadrants/NaN,47.7,15.2,47.8.png", 400, /four decimal numbers/],
    ["an infinite coordinate", "/bbox/utm-quadrants/1e999,47.7,15.2,47.8.png", 400, /four decimal numbers/],
    ["hex", "/bbox/utm-quadrants/0x10,47.7,15.2,47.8.png", 400, /four decimal numbers/],
    ["an empty box", "/bbox/utm-quadrants/15.2,47.7,15.05,47.8.png", 400, /empty/],
    ["a latitude past the pole", "/bbox/utm-quadrants/15,47,16,91.png", 400, /latitude/],
    ["three coordinates", "/bbox/utm-quadrants/15,47,16.png", 400, /four decimal numbers/],
    ["an unknown format", `/bbox/utm-quadrants/${BOX}.gif`, 400, /not one of png, jpg, webp, tif/],
    ["a CRS by name", `/bbox/utm-quadrants/${BOX}.png?dst_crs=WGS84`, 400, /EPSG:\{code\}/],
    ["an unknown query parameter", "/preview/utm-quadrants.png?size=10", 400, /unknown query parameter/],
    ["an unknown source", "/preview/nothing-here.png", 404, /nothing-here/],
    ["an image that is not a map", "/preview/published.png", 404, /not georeferenced/],
  ])("%s", async (_, path, status, message) => {
    const res = await get(path);
    expect(res.status, path).toBe(status);
    expect((await res.json()) as { message: string }, path).toMatchObject({ message: expect.stringMatching(message) });
  });

  it("an area whose memory no decoder here has is 413, told what helps", async () => {
    // The whole sample at its 1024² pixels: more than these test decoders' 60 MB full-image budget.
    const res = await get("/preview/utm-quadrants.png");
    expect(res.status).toBe(413);
    expect(await res.json()).toMatchObject({ message: expect.stringMatching(/full-image budget; use max_size or a smaller \{width\}x\{height\}/) });
  });

  it("a CRS the decoder does not know is its 400, kept briefly", async () => {
    const res = await get(`/bbox/utm-quadrants/${BOX}/64x64.png?dst_crs=EPSG:999999`);
    expect(res.status).toBe(400);
    expect(res.headers.get("cache-control")).toBe("public, max-age=60");
    expect(await res.json()).toMatchObject({ message: expect.stringMatching(/dst_crs EPSG:999999 is not a coordinate reference system/) });
  });
});
