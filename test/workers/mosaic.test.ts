// A mosaic at the edge (its metadata planted in the edge's cache, as a decoder's answer would be):
// a map only, so the IIIF routes answer 404 saying so; its TileJSON has no IIIF link; and a tile
// that may paint many assets is costed by that count before any decoder is asked, so one past
// what the full partition's memory can ever hold is 413 from admission itself. And a mosaic of
// one COG through a real decoder (test/support/workers-global-setup.ts) is that COG's tile.
import { beforeEach, describe, expect, it } from "vitest";
import type { MosaicSummary, SourceInfo } from "../../shared/protocol";
import { env } from "cloudflare:workers";
import { cacheSourceInfo, georeferencedSource, get, heartbeat, metric } from "./helpers";

/** A mosaic over WebMercatorQuad tile 2/2/1 (tiles 8..11 × 4..7 at zoom 4), indexed at zoom 4. */
function mosaicSource(id: string, mosaic: MosaicSummary): SourceInfo {
  const info = georeferencedSource(id);
  const { WebMercatorQuad } = info.georeference!.tiling;
  return { ...info, georeference: { ...info.georeference!, crs: "EPSG:4326", tiling: { WebMercatorQuad } }, mosaic };
}

beforeEach(async () => {
  expect((await heartbeat({ url: env.TEST_WORKING_DECODER_URL, capacity: 4 })).status).toBe(204);
  await cacheSourceInfo(mosaicSource("city", { kind: "mosaic", assets: 1000, maxAssetsPerKey: 1, quadkeyZoom: 4 }));
});

describe("a mosaic at the edge", () => {
  it("is a map only: every IIIF route answers 404 saying where its tiles are", async () => {
    for (const path of ["/iiif/3/city/info.json", "/iiif/2/city/info.json", "/iiif/3/city/full/max/0/default.jpg", "/iiif/3/city/file"]) {
      const res = await get(path);
      expect(res.status, path).toBe(404);
      expect(((await res.json()) as { message: string }).message, path).toBe('source "city" is a mosaic: it is served as map tiles only, under /tiles/city/WebMercatorQuad/…');
    }
  });

  it("has a TileJSON on WebMercatorQuad only, with no IIIF link", async () => {
    const res = await get("/tiles/city/WebMercatorQuad/tilejson.json");
    expect(res.status).toBe(200);
    const doc = (await res.json()) as { links: unknown[]; minzoom: number; maxzoom: number };
    expect([doc.links, doc.minzoom, doc.maxzoom]).toEqual([[], 2, 4]);
    expect((await get("/tiles/city/WorldCRS84Quad/tilejson.json")).status).toBe(404);
  });

  it("refuses 413, before any decoder, a tile above the index that may paint more assets than the full partition can ever hold", async () => {
    const released = await metric("released_total");
    // Zoom 2 is two above the index: up to 16 quadkeys' lists, 16 assets read at once.
    const res = await get("/tiles/city/WebMercatorQuad/2/2/1.png");
    expect(res.status).toBe(413);
    expect(((await res.json()) as { error: string }).error).toBe("too_large");
    expect(await metric("released_total")).toBe(released); // never admitted
  });
});

describe("a mosaic's tile on another set", () => {
  it("is costed by the WebMercatorQuad zoom of its scale: 413 where that is above the index, admitted where it is the index's", async () => {
    const info = mosaicSource("far-city", { kind: "mosaic", assets: 1000, maxAssetsPerKey: 1, quadkeyZoom: 4 });
    info.georeference!.tiling = {
      ...info.georeference!.tiling,
      // Inside LAEA's zoom-1 tile (0, 0) and Canada's zoom-0 tile (3, 3).
      EuropeanETRS89_LAEAQuad: { bounds: [3000000, 4000000, 3500000, 4500000], minZoom: 0, maxZoom: 2, resolution: 4000 },
      CanadianNAD83_LCC: { bounds: [0, 100000, 100000, 200000], minZoom: 0, maxZoom: 2, resolution: 4000 },
    };
    await cacheSourceInfo(info);
    // Canada's zoom 0 (1:137 M) is WebMercatorQuad's zoom 2: up to 16 of the index's lists.
    const coarse = await get("/tiles/far-city/CanadianNAD83_LCC/0/3/3.png");
    expect(coarse.status).toBe(413);
    // LAEA's zoom 1 (1:31 M) is WebMercatorQuad's zoom 4, the index's own: one list, one asset.
    const released = await metric("released_total");
    const fine = await get("/tiles/far-city/EuropeanETRS89_LAEAQuad/1/0/0.png");
    expect(fine.status).not.toBe(413);
    expect(await metric("released_total")).toBeGreaterThan(released); // admitted, and sent to a decoder
  });
});

describe("a mosaic decoded by a real decoder", () => {
  it("of one COG, paints that COG's tile, byte for byte", async () => {
    const [mosaic, single] = await Promise.all(
      ["quadrants", "utm-quadrants"].map(async (id) => new Uint8Array(await (await get(`/tiles/${id}/WebMercatorQuad/12/2219/1427.png`)).arrayBuffer())),
    );
    expect([...mosaic.subarray(1, 4)]).toEqual([0x50, 0x4e, 0x47]); // a PNG, not an error
    expect(mosaic).toEqual(single);
  });
});
