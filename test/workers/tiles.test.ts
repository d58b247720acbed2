// GET /tiles/{id}/{tileMatrixSetId}/{z}/{x}/{y}[@2x].{ext} through the Worker, in front of the
// frozen decoder (test/support/workers-global-setup.ts): whatever the edge answers, it answered
// alone. Out-of-bounds tiles, cache hits shared by every spelling of a tile, ETags, and sources
// that are not maps.
import { beforeEach, describe, expect, it } from "vitest";
import { decodedCacheKey } from "../../edge/handlers/cached-decode";
import { strongEtag } from "../../edge/http-cache";
import { EMPTY_TILES } from "../../shared/maps/empty-tile";
import { BASE, cacheSourceInfo, georeferencedSource, get, heartbeat, metric, squareSource } from "./helpers";

const IMAGE_CACHE = /^public, max-age=\d+, stale-while-revalidate=\d+$/;
const bytes = async (res: Response) => new Uint8Array(await res.arrayBuffer());
/** One request on each map route of source `id`: a tile, its TileJSON, its WMTS capabilities. */
const mapRoutes = (id: string) => [`/tiles/${id}/WebMercatorQuad/0/0/0.png`, `/tiles/${id}/WorldCRS84Quad/tilejson.json`, `/tiles/${id}/WebMercatorQuad/WMTSCapabilities.xml`];

beforeEach(async () => {
  expect((await heartbeat()).status).toBe(204);
  await cacheSourceInfo(georeferencedSource("geo"));
  await cacheSourceInfo(squareSource("plain", [1000, 500]));
});

describe("a tile outside the source's bounds", () => {
  it("is a transparent PNG of the tile's size, whatever the format asked, cacheable, without admission", async () => {
    const admitted = await metric("released_total");
    for (const [path, scale] of [
      ["/tiles/geo/WebMercatorQuad/4/0/0.png", 1],
      ["/tiles/geo/WebMercatorQuad/4/7/5.jpg", 1], // west of the data
      ["/tiles/geo/WebMercatorQuad/4/12/5@2x.webp", 2], // east: shares only its edge with the data
      ["/tiles/geo/WebMercatorQuad/20/1000/1000.jpeg?bidx=1&rescale=0,10", 1],
      ["/tiles/geo/WorldCRS84Quad/3/0/0@2x.jpg", 2],
      ["/tiles/geo/WorldCRS84Quad/3/8/4.png", 1], // south of the equator, where the data ends
    ] as const) {
      const res = await get(path);
      expect(res.status, path).toBe(200);
      expect(res.headers.get("content-type"), path).toBe("image/png");
      expect(res.headers.get("cache-control"), path).toMatch(IMAGE_CACHE);
      expect(res.headers.get("x-tessera-version"), path).toBe("v1");
      expect(res.headers.get("access-control-allow-origin"), path).toBe("*");
      expect(await bytes(res), path).toEqual(EMPTY_TILES[scale]);
    }
    expect(await metric("released_total")).toBe(admitted);
  });

  it("has an ETag, and If-None-Match answers 304", async () => {
    const first = await get("/tiles/geo/WebMercatorQuad/4/0/0.png");
    const etag = first.headers.get("etag")!;
    expect(etag).toMatch(/^"[0-9a-f]{32}"$/);
    const again = await get("/tiles/geo/WebMercatorQuad/4/0/0.png", { headers: { "if-none-match": etag } });
    expect(again.status).toBe(304);
    expect(again.headers.get("etag")).toBe(etag);
  });

  it("is immutable under a snapshot id", async () => {
    await cacheSourceInfo(georeferencedSource("geo"), "v1");
    const res = await get("/tiles/geo@v1/WebMercatorQuad/4/0/0.png");
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
  });
});

describe("a tile inside the source's bounds", () => {
  const stored = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 1, 2, 3]);
  /** What the edge stores after the decoder's answer to the tile of this canonical form. */
  const store = async (canonical: string) => {
    const etag = await strongEtag("geo", "v1", canonical);
    await caches.default.put(
      decodedCacheKey(BASE, "tile", "geo", canonical, "v1"),
      new Response(stored, { headers: { "content-type": "image/png", "cache-control": "max-age=60", etag } }),
    );
  };

  it("is answered from the cache for every spelling of it, naming its canonical URL, without admission", async () => {
    await store("WebMercatorQuad/4/9/5.png");
    await store("WebMercatorQuad/4/9/5@2x.webp?bidx=3,2,1&rescale=0,1000&resampling=bilinear");
    await store("WorldCRS84Quad/3/9/1.jpg?bidx=1&nodata=nan");
    const admitted = await metric("released_total");
    for (const [spellings, canonical] of [
      [["/4/9/5.png", "/4/9/5.png?resampling=nearest", "/04/009/5.png"], "WebMercatorQuad/4/9/5.png"],
      [
        [
          "/4/9/5@2x.webp?bidx=3,2,1&rescale=0,1000&resampling=bilinear",
          "/4/9/5@2x.webp?resampling=bilinear&rescale=0.0,1e3&bidx=3&bidx=2&bidx=1",
          "/4/9/5@2x.webp?bidx=3%2C2%2C1&rescale=%2B0,1000.&resampling=bilinear",
        ],
        "WebMercatorQuad/4/9/5@2x.webp?bidx=3,2,1&rescale=0,1000&resampling=bilinear",
      ],
    ] as const) {
      for (const spelling of spellings) {
        const res = await get(`/tiles/geo/WebMercatorQuad${spelling}`);
        expect(res.status, spelling).toBe(200);
        expect(res.headers.get("x-tessera-cache"), spelling).toBe("hit");
        expect(res.headers.get("cache-control"), spelling).toMatch(IMAGE_CACHE);
        expect(res.headers.get("link"), spelling).toBe(`<${BASE}/tiles/geo/${canonical}>;rel="canonical"`);
        expect(await bytes(res), spelling).toEqual(stored);
      }
    }
    for (const spelling of ["/3/9/1.jpeg?bidx=1&nodata=NaN", "/3/9/1.jpg?nodata=nan&bidx=1&resampling=nearest"]) {
      const res = await get(`/tiles/geo/WorldCRS84Quad${spelling}`);
      expect(res.headers.get("x-tessera-cache"), spelling).toBe("hit");
    }
    expect(await metric("released_total")).toBe(admitted);
  });

  it("has one ETag for every spelling, and If-None-Match answers 304", async () => {
    await store("WebMercatorQuad/4/10/6.png");
    const etag = (await get("/tiles/geo/WebMercatorQuad/4/10/6.png")).headers.get("etag")!;
    const again = await get("/tiles/geo/WebMercatorQuad/4/10/6.png?resampling=nearest", { headers: { "if-none-match": etag } });
    expect(again.status).toBe(304);
    expect(again.headers.get("etag")).toBe(etag);
  });
});

describe("a source that is not georeferenced", () => {
  it("answers every tile route 404 not_found, saying so", async () => {
    for (const path of mapRoutes("plain")) {
      const res = await get(path);
      expect(res.status, path).toBe(404);
      expect(res.headers.get("cache-control"), path).toBe("public, max-age=60");
      expect(await res.json(), path).toEqual({ error: "not_found", message: 'source "plain" is not georeferenced: it is served as an image only', requestId: expect.any(String) });
    }
  });
});

describe("admission of a tile", () => {
  it("refuses with 413, before any decoder work, a zoom-2 tile over a 20000² source without overviews: the edge's coarse cost is the whole image", async () => {
    const { georeference } = georeferencedSource("huge");
    await cacheSourceInfo({ ...squareSource("huge", [20000]), georeference });
    const res = await get("/tiles/huge/WebMercatorQuad/2/2/1.png");
    expect(res.status).toBe(413);
    expect(((await res.json()) as { error: string }).error).toBe("too_large");
  });
});
