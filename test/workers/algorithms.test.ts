// `/algorithms` and `algorithm=` at the edge, in front of the frozen decoder: the listing in
// titiler's shape, every spelling of a tile's parameters sharing one cache entry, and bad
// algorithm URLs refused with 400 before any admission.
import { beforeEach, describe, expect, it } from "vitest";
import { decodedCacheKey } from "../../edge/handlers/cached-decode";
import { strongEtag } from "../../edge/http-cache";
import { BASE, cacheSourceInfo, georeferencedSource, get, heartbeat, metric } from "./helpers";

beforeEach(async () => {
  expect((await heartbeat()).status).toBe(204);
  await cacheSourceInfo(georeferencedSource("dem"));
});

describe("GET /algorithms", () => {
  it("lists every algorithm with its inputs, outputs and parameters, cacheable", async () => {
    const res = await get("/algorithms");
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toMatch(/^public, max-age=\d+/);
    const body = (await res.json()) as Record<string, { inputs: { nbands: number }; outputs: { nbands: number; formats?: string[] } }>;
    expect(Object.keys(body)).toEqual(["hillshade", "slope", "terrarium", "terrainrgb", "normalizedIndex"]);
    expect(body.terrarium.outputs).toEqual({ nbands: 3, dtype: "uint8", formats: ["png", "webp"] });
    expect(body.normalizedIndex.inputs.nbands).toBe(2);
  });

  it("answers one algorithm, and 404 naming the known ones for another", async () => {
    expect(((await (await get("/algorithms/slope")).json()) as { id: string }).id).toBe("slope");
    const res = await get("/algorithms/contours");
    expect(res.status).toBe(404);
    expect(((await res.json()) as { message: string }).message).toMatch(/unknown algorithm "contours"; known: hillshade, slope/);
  });
});

describe("a tile with an algorithm", () => {
  it("is one cache entry for every spelling of its parameters", async () => {
    const canonical = `WebMercatorQuad/4/9/5.png?algorithm=hillshade&algorithm_params=${encodeURIComponent('{"angle_altitude":30,"z_factor":2}').replace(/%2C/g, ",")}`;
    const stored = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 9]);
    await caches.default.put(
      decodedCacheKey(BASE, "tile", "dem", canonical, "v1"),
      new Response(stored, { headers: { "content-type": "image/png", "cache-control": "max-age=60", etag: await strongEtag("dem", "v1", canonical) } }),
    );
    const admitted = await metric("released_total");
    for (const params of ['{"z_factor":2,"angle_altitude":30}', '{"angle_altitude":30.0,"z_factor":2,"azimuth":315}', '{ "z_factor" : 2e0 , "angle_altitude" : 30 }']) {
      const res = await get(`/tiles/dem/WebMercatorQuad/4/9/5.png?algorithm_params=${encodeURIComponent(params)}&algorithm=hillshade`);
      expect(res.headers.get("x-tessera-cache"), params).toBe("hit");
      expect(res.headers.get("link"), params).toBe(`<${BASE}/tiles/dem/${canonical}>;rel="canonical"`);
    }
    expect(await metric("released_total")).toBe(admitted);
  });

  it.each([
    ["a lossy terrarium", "4/9/5.jpg?algorithm=terrarium", /terrarium encodes heights exactly: jpg is lossy/],
    ["a rescaled encoding", "4/9/5.png?algorithm=terrainrgb&rescale=0,100", /terrainrgb encodes heights exactly: rescale would change them/],
    ["three bands to hillshade", "4/9/5.png?algorithm=hillshade&bidx=1,2,3", /hillshade reads 1 channel, and the request makes 3/],
    ["an infinite azimuth", '4/9/5.png?algorithm=hillshade&algorithm_params={"azimuth":1e309}', /algorithm_params\["azimuth"\] must be a finite number/],
    ["5000 nested brackets", `4/9/5.png?algorithm=slope&algorithm_params=${"[".repeat(5000)}`, /algorithm_params must be a JSON object/],
  ])("refuses %s with 400 before any admission", async (_what, path, message) => {
    const admitted = await metric("released_total");
    const res = await get(`/tiles/dem/WebMercatorQuad/${path}`);
    expect(res.status).toBe(400);
    expect(((await res.json()) as { message: string }).message).toMatch(message);
    expect(await metric("released_total")).toBe(admitted);
  });
});
