// GET /tiles/{id}/{tileMatrixSetId}/tilejson.json through the Worker: the TileJSON 3.0.0 a map
// client adds a layer from, answered by the edge from the source's cached metadata alone.
import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import type { Env } from "../../edge/env";
import worker from "../../edge/index";
import { BASE, cacheSourceInfo, georeferencedSource, get, heartbeat, metric, squareSource } from "./helpers";

interface TileJson {
  tilejson: string;
  tiles: string[];
  bounds: number[];
  center: number[];
  minzoom: number;
  maxzoom: number;
  scheme: string;
  links: { rel: string; href: string }[];
}
const tileJson = async (path: string) => {
  const res = await get(path);
  expect(res.status, path).toBe(200);
  return (await res.json()) as TileJson;
};

beforeEach(async () => {
  expect((await heartbeat()).status).toBe(204);
  await cacheSourceInfo(georeferencedSource("geo"));
  await cacheSourceInfo(georeferencedSource("geo"), "v1");
  await cacheSourceInfo(squareSource("plain", [1000, 500]));
});

describe("TileJSON", () => {
  it("describes the layer: tile template of the current snapshot, lon/lat bounds, zooms, centre, a link to the IIIF info.json", async () => {
    const admitted = await metric("released_total");
    const res = await get("/tiles/geo/WebMercatorQuad/tilejson.json");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json");
    expect(res.headers.get("cache-control")).toBe("public, max-age=60, stale-while-revalidate=3600");
    expect(res.headers.get("x-tessera-version")).toBe("v1");
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    expect(await res.json()).toEqual({
      tilejson: "3.0.0",
      name: "geo",
      tiles: [`${BASE}/tiles/geo@v1/WebMercatorQuad/{z}/{x}/{y}.png`],
      scheme: "xyz",
      bounds: [0, 0, 90, 66.51326044311186],
      center: [45, 33.25663022155593, 2],
      minzoom: 2,
      maxzoom: 4,
      links: [{ rel: "alternate", type: "application/ld+json", title: "IIIF Image API 3.0", href: `${BASE}/iiif/3/geo@v1/info.json` }],
    });
    const crs84 = await tileJson("/tiles/geo/WorldCRS84Quad/tilejson.json");
    expect(crs84).toMatchObject({ tiles: [`${BASE}/tiles/geo@v1/WorldCRS84Quad/{z}/{x}/{y}.png`], minzoom: 1, maxzoom: 3 });
    expect(await metric("released_total")).toBe(admitted);
  });

  it("keeps the tile options of its query in the template, canonically, with titiler's tile_format and tile_scale", async () => {
    for (const [query, template] of [
      ["?bidx=3&bidx=2&bidx=1&rescale=0.0,1e3&resampling=nearest", "{z}/{x}/{y}.png?bidx=3,2,1&rescale=0,1000"],
      ["?tile_format=jpeg&tile_scale=2&nodata=NaN&resampling=cubic", "{z}/{x}/{y}@2x.jpg?nodata=nan&resampling=cubic"],
      ["?tile_format=webp&tile_scale=1", "{z}/{x}/{y}.webp"],
    ]) {
      expect((await tileJson(`/tiles/geo/WebMercatorQuad/tilejson.json${query}`)).tiles, query).toEqual([
        `${BASE}/tiles/geo@v1/WebMercatorQuad/${template}`,
      ]);
    }
  });

  it("names the plain id in PLAIN_ID_MODE=revalidate, and a snapshot's own, immutable", async () => {
    const revalidate = { ...env, PLAIN_ID_MODE: "revalidate" } as Env;
    const res = await worker.fetch(new Request(`${BASE}/tiles/geo/WebMercatorQuad/tilejson.json`), revalidate, createExecutionContext());
    const doc = (await res.json()) as TileJson;
    expect(doc.tiles).toEqual([`${BASE}/tiles/geo/WebMercatorQuad/{z}/{x}/{y}.png`]);
    expect(doc.links[0].href).toBe(`${BASE}/iiif/3/geo/info.json`);
    const snapshot = await get("/tiles/geo@v1/WebMercatorQuad/tilejson.json");
    expect(snapshot.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    expect(((await snapshot.json()) as TileJson).tiles).toEqual([`${BASE}/tiles/geo@v1/WebMercatorQuad/{z}/{x}/{y}.png`]);
  });

  it("has an ETag, and If-None-Match answers 304", async () => {
    const etag = (await get("/tiles/geo/WebMercatorQuad/tilejson.json")).headers.get("etag")!;
    expect(etag).toMatch(/^"[0-9a-f]{32}"$/);
    const again = await get("/tiles/geo/WebMercatorQuad/tilejson.json", { headers: { "if-none-match": etag } });
    expect(again.status).toBe(304);
    const other = await get("/tiles/geo/WebMercatorQuad/tilejson.json?bidx=1", { headers: { "if-none-match": etag } });
    expect(other.status).toBe(200);
  });

  it("answers 400 for bad tile options, 404 for an unknown set or a source that is not a map", async () => {
    for (const [path, status, message] of [
      ["/tiles/geo/WebMercatorQuad/tilejson.json?tile_format=gif", 400, 'tile format "gif"'],
      ["/tiles/geo/WebMercatorQuad/tilejson.json?tile_format=PNG", 400, "tile_format"],
      ["/tiles/geo/WebMercatorQuad/tilejson.json?tile_scale=3", 400, "tile_scale"],
      ["/tiles/geo/WebMercatorQuad/tilejson.json?tile_format=png&tile_format=jpg", 400, "tile_format"],
      ["/tiles/geo/WebMercatorQuad/tilejson.json?bidx=0", 400, "bidx"],
      ["/tiles/geo/WebMercatorQuad/tilejson.json?rescale=1,0", 400, "rescale"],
      ["/tiles/geo/WebMercatorQuad/tilejson.json?callback=x", 400, "callback"],
      ["/tiles/geo/EuropeanETRS89_LAEAQuad/tilejson.json", 404, 'source "geo" does not lie within EuropeanETRS89_LAEAQuad'],
      ["/tiles/geo/GoogleMapsCompatible/tilejson.json", 404, 'unknown tile matrix set "GoogleMapsCompatible"'],
      ["/tiles/plain/WorldCRS84Quad/tilejson.json", 404, 'source "plain" is not georeferenced'],
    ] as const) {
      const res = await get(path);
      expect(res.status, path).toBe(status);
      expect(((await res.json()) as { message: string }).message, path).toContain(message);
    }
  });
});

describe("the IIIF info.json of a georeferenced source", () => {
  const profile = "https://github.com/mapbox/tilejson-spec/tree/master/3.0.0";

  it("links its TileJSON on each set in seeAlso (3.0 as a Dataset, 2.1 likewise), naming the same version", async () => {
    const info3 = (await (await get("/iiif/3/geo/info.json")).json()) as { seeAlso: unknown };
    expect(info3.seeAlso).toEqual(
      ["WebMercatorQuad", "WorldCRS84Quad"].map((tms) => ({
        id: `${BASE}/tiles/geo@v1/${tms}/tilejson.json`,
        type: "Dataset",
        format: "application/json",
        profile,
        label: { en: [`TileJSON 3.0.0, ${tms}`] },
      })),
    );
    const info2 = (await (await get("/iiif/2/geo/info.json")).json()) as { seeAlso: unknown };
    expect(info2.seeAlso).toEqual(
      ["WebMercatorQuad", "WorldCRS84Quad"].map((tms) => ({
        "@id": `${BASE}/tiles/geo@v1/${tms}/tilejson.json`,
        format: "application/json",
        profile,
        label: `TileJSON 3.0.0, ${tms}`,
      })),
    );
    // And the TileJSON links back to that info.json.
    const tileJsonUrl = (info3.seeAlso as { id: string }[])[0].id;
    expect((await tileJson(tileJsonUrl.slice(BASE.length))).links[0].href).toBe(`${BASE}/iiif/3/geo@v1/info.json`);
  });

  it("has no seeAlso for an image-only source", async () => {
    for (const v of [3, 2]) {
      const doc = (await (await get(`/iiif/${v}/plain/info.json`)).json()) as Record<string, unknown>;
      expect(doc, `IIIF ${v}`).not.toHaveProperty("seeAlso");
    }
  });
});
