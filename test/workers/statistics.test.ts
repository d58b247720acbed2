// GET and POST /statistics through the Worker, the admission DO and a real decoder over the bundled
// UTM sample (1024² pixels of 20 m, EPSG:32633, near 15.1°E 47.76°N): a miss is decoded once and
// every spelling (a POST's body in any key order and spacing) then hits; the cheapest requests that
// would buy the most work, memory or answer are refused with a clear 4xx before any decode.
import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import { PARTITION_HEADER } from "../../shared/cost";
import { parseFeatureBody } from "../../shared/maps/feature";
import { BODY_DIGEST_PARAM, DECODER, type SourceInfo } from "../../shared/protocol";
import { get, heartbeat, metric } from "./helpers";

const square = [[[15.08, 47.72], [15.16, 47.72], [15.16, 47.79], [15.08, 47.79], [15.08, 47.72]]];
const feature = { type: "Feature", properties: { name: "field 7" }, geometry: { type: "Polygon", coordinates: square } };
const whole = { ...feature, geometry: { type: "Polygon", coordinates: [[[14.9, 47.6], [15.4, 47.6], [15.4, 47.95], [14.9, 47.95], [14.9, 47.6]]] } };
const post = (path: string, body: BodyInit, init: RequestInit = {}) => get(path, { method: "POST", body, headers: { "content-type": "application/json" }, ...init });

beforeEach(async () => {
  expect((await heartbeat({ url: env.TEST_WORKING_DECODER_URL, capacity: 4 })).status).toBe(204);
});

describe("statistics decoded by a real decoder", () => {
  it("GET: the whole source at max_size, per band; every spelling of the query then hits", async () => {
    const miss = await get("/statistics/utm-quadrants?max_size=256&p=2&p=98");
    expect(miss.status, await miss.clone().text()).toBe(200);
    expect(miss.headers.get("content-type")).toBe("application/json");
    expect(miss.headers.get("x-tessera-cache")).toBe("miss");
    expect(miss.headers.get("link")).toBe(`<http://tessera.test/statistics/utm-quadrants?max_size=256>;rel="canonical"`);
    const stats = (await miss.json()) as Record<string, { valid_pixels: number; masked_pixels: number; histogram: number[][] }>;
    expect(Object.keys(stats).length).toBeGreaterThan(0);
    for (const band of Object.values(stats)) {
      expect(band.valid_pixels + band.masked_pixels).toBe(256 * 256);
      expect(band.histogram[0]).toHaveLength(10);
    }
    const admitted = await metric("released_total");
    for (const spelling of ["/statistics/utm-quadrants?p=2,98&max_size=256", "/statistics/utm-quadrants?max_size=256&histogram_bins=10&resampling=nearest&categorical=false"]) {
      const hit = await get(spelling);
      expect(hit.headers.get("x-tessera-cache"), spelling).toBe("hit");
      expect(hit.headers.get("etag"), spelling).toBe(miss.headers.get("etag"));
    }
    expect(await metric("released_total")).toBe(admitted);
  });

  it("POST a Feature: its statistics in its properties; the same body with keys reordered is a cache hit", async () => {
    const miss = await post("/statistics/utm-quadrants?max_size=128", JSON.stringify(feature));
    expect(miss.status, await miss.clone().text()).toBe(200);
    expect(miss.headers.get("content-type")).toBe("application/geo+json");
    expect(miss.headers.get("x-tessera-cache")).toBe("miss");
    const answer = (await miss.json()) as { type: string; properties: { name: string; statistics: Record<string, { count: number }> } };
    expect(answer.type).toBe("Feature");
    expect(answer.properties.name).toBe("field 7");
    expect(Object.values(answer.properties.statistics)[0].count).toBeGreaterThan(1000);
    const admitted = await metric("released_total");
    const reordered = `{"geometry":{"coordinates":${JSON.stringify(square)},"type":"Polygon"},\n  "type": "Feature", "properties": {"name": "field 7"}}`;
    const hit = await post("/statistics/utm-quadrants?max_size=128", reordered);
    expect(hit.headers.get("x-tessera-cache")).toBe("hit");
    expect(hit.headers.get("etag")).toBe(miss.headers.get("etag"));
    expect(await metric("released_total")).toBe(admitted);
    // Another body is another answer.
    const other = await post("/statistics/utm-quadrants?max_size=128", JSON.stringify({ ...feature, properties: { name: "field 8" } }));
    expect(other.headers.get("x-tessera-cache")).toBe("miss");
  });

  it("a mosaic's statistics are its asset's, read in the same CRS", async () => {
    const fromCog = (await (await post("/statistics/utm-quadrants?max_size=128&dst_crs=EPSG:3857", JSON.stringify(feature))).json()) as { properties: { statistics: unknown } };
    const res = await post("/statistics/quadrants?max_size=128&dst_crs=EPSG:3857", JSON.stringify(feature));
    expect(res.status, await res.clone().text()).toBe(200);
    expect(((await res.json()) as { properties: { statistics: unknown } }).properties.statistics).toEqual(fromCog.properties.statistics);
    expect((await get("/statistics/quadrants?max_size=64")).status).toBe(200);
  });

  it("a self-intersecting ring is taken (filled even-odd, as GDAL rasterizes it)", async () => {
    const bowTie = { ...feature, geometry: { type: "Polygon", coordinates: [[[15.08, 47.72], [15.16, 47.79], [15.16, 47.72], [15.08, 47.79], [15.08, 47.72]]] } };
    const res = await post("/statistics/utm-quadrants?max_size=128", JSON.stringify(bowTie));
    expect(res.status, await res.clone().text()).toBe(200);
  });

  it("a POST the decoder gives back for a larger grant is sent again with its body", async () => {
    // Straight to the DO, as a tile of no cost: the decoder's precise estimate exceeds the tile grant.
    const admission = env.ADMISSION.get(env.ADMISSION.idFromName("default"));
    const info = await admission.fetch(new Request(`https://admission${DECODER.info("utm-quadrants")}`));
    const { version } = (await info.json()) as SourceInfo;
    const body = await parseFeatureBody(JSON.stringify(whole));
    const path = DECODER.statistics("utm-quadrants", `?max_size=900&${BODY_DIGEST_PARAM}=${body.digest}`, version);
    const disagreements = await metric("classifier_disagreement_total");
    const res = await admission.fetch(new Request(`https://admission${path}`, { method: "POST", body: body.canonical, headers: { [PARTITION_HEADER]: "tile" } }));
    expect(res.status, await res.clone().text()).toBe(200);
    expect(((await res.json()) as { type: string }).type).toBe("Feature");
    expect(await metric("classifier_disagreement_total")).toBe(disagreements + 1);
  });

  it("a POST at full resolution over the whole source is 413, told to use max_size", async () => {
    const res = await post("/statistics/utm-quadrants", JSON.stringify(whole));
    expect(res.status).toBe(413);
    expect(await res.json()).toMatchObject({ message: expect.stringMatching(/use max_size/) });
  });
});

describe("statistics refused before any decode", () => {
  it.each([
    ["a billion histogram bins", "/statistics/utm-quadrants?histogram_bins=1000000000", 400, /histogram_bins/],
    ["a percentile past 100", "/statistics/utm-quadrants?p=101", 400, /p "101" must be a whole number from 0 to 100/],
    ["a negative percentile", "/statistics/utm-quadrants?p=-1", 400, /p "-1"/],
    ["a range backwards", "/statistics/utm-quadrants?histogram_range=5,1", 400, /min <= max/],
    ["categories without categorical", "/statistics/utm-quadrants?c=1", 400, /categorical=true/],
    ["a max_size of a billion", "/statistics/utm-quadrants?max_size=1000000000", 400, /max_size/],
    ["dst_crs on a GET", "/statistics/utm-quadrants?dst_crs=EPSG:4326", 400, /dst_crs applies to POST/],
    ["an unknown query parameter", "/statistics/utm-quadrants?colormap_name=viridis", 400, /unknown query parameter/],
    ["an unknown source", "/statistics/nothing-here", 404, /nothing-here/],
  ])("GET %s", async (_, path, status, message) => {
    const res = await get(path);
    expect(res.status, path).toBe(status);
    expect((await res.json()) as { message: string }, path).toMatchObject({ message: expect.stringMatching(message) });
  });

  const ring = (positions: unknown) => JSON.stringify({ type: "Feature", properties: {}, geometry: { type: "Polygon", coordinates: [positions] } });
  const million = () => {
    const positions = Array.from({ length: 1_000_000 }, (_, i) => [15 + (i % 1000) / 1e4, 47.7 + Math.floor(i / 1000) / 1e5]);
    return ring([...positions, positions[0]]);
  };
  it.each([
    ["invalid JSON", () => "{\"type\": \"Feature\"", 400, /not JSON/],
    ["NaN in coordinates", () => ring([[15, 47], [15.1, 47], [15.1, 47.1], [15, 47]]).replace("15.1,47]", "NaN,47]"), 400, /not JSON/],
    ["a Point", () => JSON.stringify({ type: "Feature", properties: {}, geometry: { type: "Point", coordinates: [15, 47] } }), 400, /Polygon or MultiPolygon/],
    ["a 2 MiB body", () => JSON.stringify({ ...feature, properties: { pad: "x".repeat(2 * 1024 * 1024) } }), 413, /exceeds/],
    ["a million-vertex polygon", million, 413, /exceeds/],
  ])("POST %s", async (_, body, status, message) => {
    const res = await post("/statistics/utm-quadrants?max_size=64", body());
    expect(res.status).toBe(status);
    expect((await res.json()) as { message: string }).toMatchObject({ message: expect.stringMatching(message) });
  });

  it("POST with bins=1e9 is refused before its body is read", async () => {
    const res = await post("/statistics/utm-quadrants?histogram_bins=1e9", JSON.stringify(feature));
    expect(res.status).toBe(400);
  });

  it("a body that trickles past BODY_READ_TIMEOUT is 408", async () => {
    const stalled = new ReadableStream({
      start(c) {
        c.enqueue(new TextEncoder().encode("{"));
      }, // and never closes
    });
    const res = await post("/statistics/utm-quadrants?max_size=64", stalled, { duplex: "half" } as RequestInit);
    expect(res.status).toBe(408);
  });
});
