// Map tiles through the Worker, the admission DO and a real decoder that works
// (test/support/workers-global-setup.ts), over the bundled UTM sample: a miss is decoded once
// and every spelling of the tile then hits; the decoder's 400s come through; a version the
// store no longer has is followed to the current one.
import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import { forgetSourceInfo, infoKey } from "../../edge/source-info";
import { bytes, get, georeferencedSource, heartbeat, metric, pngSize } from "./helpers";

const TILE = "/tiles/utm-quadrants/WebMercatorQuad/12/2219/1427";

beforeEach(async () => {
  expect((await heartbeat({ url: env.TEST_WORKING_DECODER_URL, capacity: 4 })).status).toBe(204);
});

describe("tiles decoded by a real decoder", () => {
  it("decode a miss once; every spelling then hits the same entry, bytes and ETag, without admission", async () => {
    const admitted = await metric("released_total");
    const miss = await get(`${TILE}.png`);
    expect(miss.status).toBe(200);
    expect(miss.headers.get("content-type")).toBe("image/png");
    expect(miss.headers.get("x-tessera-cache")).toBe("miss");
    expect(miss.headers.get("x-tessera-version")).toMatch(/^16037-/);
    const png = await bytes(miss);
    expect(pngSize(png)).toEqual([256, 256]);
    const afterMiss = await metric("released_total");
    expect(afterMiss).toBeGreaterThan(admitted); // the metadata and the tile went through admission

    for (const spelling of [`${TILE}.png`, `${TILE}.png?resampling=nearest`, "/tiles/utm-quadrants/WebMercatorQuad/012/02219/1427.png"]) {
      const hit = await get(spelling);
      expect(hit.headers.get("x-tessera-cache"), spelling).toBe("hit");
      expect(hit.headers.get("etag"), spelling).toBe(miss.headers.get("etag"));
      expect(await bytes(hit), spelling).toEqual(png);
    }
    const revalidated = await get(`${TILE}.png`, { headers: { "if-none-match": miss.headers.get("etag")! } });
    expect(revalidated.status).toBe(304);
    expect(await metric("released_total")).toBe(afterMiss);
  });

  it("answer each format and scale with its own entry and type", async () => {
    for (const [suffix, type] of [
      [".jpg", "image/jpeg"],
      ["@2x.webp", "image/webp"],
      ["@2x.png?resampling=bilinear", "image/png"],
    ]) {
      const res = await get(`${TILE}${suffix}`);
      expect(res.status, suffix).toBe(200);
      expect(res.headers.get("content-type"), suffix).toBe(type);
      expect(res.headers.get("x-tessera-cache"), suffix).toBe("miss");
      const body = await bytes(res);
      if (type === "image/png") expect(pngSize(body), suffix).toEqual([512, 512]);
    }
  });

  it("pass the decoder's 400 for a band past the source's count on, cacheable briefly as images' are", async () => {
    const res = await get(`${TILE}.png?bidx=4`);
    expect(res.status).toBe(400);
    expect(res.headers.get("cache-control")).toBe("public, max-age=60");
    expect(await res.json()).toMatchObject({ error: "bad_request", message: expect.stringMatching(/band/) });
  });

  it("follow a version the store no longer has to the current one", async () => {
    const current = (await get(`${TILE}.png`)).headers.get("x-tessera-version");
    // What the edge may know of a version since rewritten: metadata (whose bounds hold the
    // tile) of a version the decoder's store does not have.
    const gone = { ...georeferencedSource("utm-quadrants"), version: "gone" };
    await forgetSourceInfo({ id: "utm-quadrants" });
    await caches.default.put(infoKey({ id: "utm-quadrants" }), Response.json(gone, { headers: { "cache-control": "max-age=3600" } }));
    const res = await get(`${TILE}.jpg?resampling=cubic`);
    expect(res.status).toBe(200);
    expect(res.headers.get("x-tessera-version")).toBe(current);
  });
});

describe("the UTM sample on the registry's other sets, through a real decoder", () => {
  /** The first tile of `id` holding data at the finest matrix the capabilities list. */
  async function firstTile(set: string, id = "utm-quadrants"): Promise<string> {
    const xml = await (await get(`/tiles/${id}/${set}/WMTSCapabilities.xml`)).text();
    const limits = [...xml.matchAll(/<TileMatrix>(\d+)<\/TileMatrix>\s*<MinTileRow>(\d+)<\/MinTileRow>\s*<MaxTileRow>\d+<\/MaxTileRow>\s*<MinTileCol>(\d+)<\/MinTileCol>/g)];
    const [, z, row, col] = limits[limits.length - 1];
    return `/tiles/${id}/${set}/${z}/${col}/${row}.png`;
  }

  it("answer TileJSON and decoded tiles on its own UTM zone, the European LAEA and the neighbouring zone; info.json links its own zone", async () => {
    for (const set of ["UTM33WGS84Quad", "EuropeanETRS89_LAEAQuad", "UTM32WGS84Quad", "WorldMercatorWGS84Quad"]) {
      const answer = await get(`/tiles/utm-quadrants/${set}/tilejson.json`);
      expect(answer.status, `${set}: ${await answer.clone().text()}`).toBe(200);
      const tileJson = (await answer.json()) as { tiles: string[]; maxzoom: number };
      expect(tileJson.tiles[0], set).toMatch(new RegExp(`/tiles/utm-quadrants@[^/]+/${set}/\\{z\\}/\\{x\\}/\\{y\\}\\.png$`));
      const res = await get(await firstTile(set));
      expect(res.status, set).toBe(200);
      expect(res.headers.get("x-tessera-cache"), set).toBe("miss");
      expect(pngSize(await bytes(res)), set).toEqual([256, 256]);
    }
    const info = await (await get("/iiif/3/utm-quadrants/info.json")).json() as { seeAlso: { label: { en: string[] } }[] };
    expect(info.seeAlso.map((s) => s.label.en[0])).toEqual(["TileJSON 3.0.0, WebMercatorQuad", "TileJSON 3.0.0, WorldCRS84Quad", "TileJSON 3.0.0, UTM33WGS84Quad"]);
  });

  it("and as a mosaic of the sample: TileJSON and a decoded tile on its UTM zone and on LAEA", async () => {
    for (const set of ["UTM33WGS84Quad", "EuropeanETRS89_LAEAQuad"]) {
      const tileJson = await get(`/tiles/quadrants/${set}/tilejson.json`);
      expect(tileJson.status, set).toBe(200);
      const res = await get(await firstTile(set, "quadrants"));
      expect(res.status, set).toBe(200);
      expect(pngSize(await bytes(res)), set).toEqual([256, 256]);
    }
  });

  it("answer 400 for a zoom the set does not have and 404 where the sample does not lie", async () => {
    expect((await get("/tiles/utm-quadrants/UTM33WGS84Quad/0/0/0.png")).status).toBe(400); // the UTM quads start at zoom 1
    const away = await get("/tiles/utm-quadrants/NZTM2000Quad/tilejson.json");
    expect(away.status).toBe(404);
    expect(((await away.json()) as { message: string }).message).toContain("does not lie within NZTM2000Quad");
  });
});
