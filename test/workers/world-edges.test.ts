// Sources at the world's edges through the Worker, the admission DO and the real working decoder
// (test/support/workers-global-setup.ts), over GDAL-made fixtures (world-edge-fixtures.ts): a
// lon/lat source from 170°E to 170°W and an Arctic one around the north pole. Every map route
// answers (no 501); TileJSON's bounds run west > east across 180°; tiles on both sides of 180°
// are decoded, and one beside the data is the empty tile without admission.
import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import { EMPTY_TILES } from "../../shared/maps/empty-tile";
import { bytes, get, heartbeat, metric, pngSize } from "./helpers";

beforeEach(async () => {
  expect((await heartbeat({ url: env.TEST_WORKING_DECODER_URL, capacity: 4 })).status).toBe(204);
});

interface TileJson {
  bounds: number[];
  center: number[];
  minzoom: number;
  maxzoom: number;
}

describe("a source across 180° (170°E to 170°W)", () => {
  it("has TileJSON bounds west > east on both sets, its centre on 180°", async () => {
    for (const set of ["WebMercatorQuad", "WorldCRS84Quad"]) {
      const res = await get(`/tiles/across-lonlat/${set}/tilejson.json`);
      expect(res.status, set).toBe(200);
      const doc = (await res.json()) as TileJson;
      expect(doc.bounds, set).toEqual([170, -5, -170, 5]);
      expect(doc.center.slice(0, 2), set).toEqual([180, 0]);
    }
  });

  it("decodes a tile on each side of 180°, on both sets", async () => {
    for (const tile of ["WebMercatorQuad/7/127/63", "WebMercatorQuad/7/0/63", "WorldCRS84Quad/6/127/31", "WorldCRS84Quad/6/0/31"]) {
      const res = await get(`/tiles/across-lonlat/${tile}.png`);
      expect(res.status, tile).toBe(200);
      expect(res.headers.get("x-tessera-cache"), tile).toBe("miss");
      const png = await bytes(res);
      expect(pngSize(png), tile).toEqual([256, 256]);
      expect(png, `${tile}: not the empty tile`).not.toEqual(EMPTY_TILES[1]);
    }
  });

  it("answers a tile beside the data, on either side, with the empty tile, without admission", async () => {
    await get("/tiles/across-lonlat/WebMercatorQuad/7/127/63.png"); // the metadata, cached
    const admitted = await metric("released_total");
    for (const tile of ["WebMercatorQuad/7/5/63", "WebMercatorQuad/7/120/63", "WorldCRS84Quad/6/5/31", "WorldCRS84Quad/6/127/28"]) {
      const res = await get(`/tiles/across-lonlat/${tile}.png`);
      expect(res.status, tile).toBe(200);
      expect(await bytes(res), tile).toEqual(EMPTY_TILES[1]);
    }
    expect(await metric("released_total")).toBe(admitted);
  });

  it("answers its points on both sides of 180°, and 404 beside it", async () => {
    // Pixel (column, row) holds 170° + 0.02° × column, 5° − 0.02° × row.
    for (const [coords, column] of [["175.01,0.01", 250], ["-175.01,0.01", 749]] as const) {
      const res = await get(`/point/across-lonlat/${coords}`);
      expect(res.status, coords).toBe(200);
      const { values } = (await res.json()) as { values: number[] };
      expect(values, coords).toEqual([pattern(column, 249)]);
    }
    expect((await get("/point/across-lonlat/-165,0")).status).toBe(404);
  });

  it("is a GeoJSON Feature cut at 180°, its bbox west > east (RFC 7946)", async () => {
    const res = await get("/info/across-lonlat.geojson");
    expect(res.status).toBe(200);
    const doc = (await res.json()) as { bbox: number[]; geometry: { type: string; coordinates: number[][][][] } };
    expect(doc.bbox).toEqual([170, -5, -170, 5]);
    expect(doc.geometry).toEqual({
      type: "MultiPolygon",
      coordinates: [
        [[[170, -5], [180, -5], [180, 5], [170, 5], [170, -5]]],
        [[[-180, -5], [-170, -5], [-170, 5], [-180, 5], [-180, -5]]],
      ],
    });
  });

  it("answers its areas, statistics, info and WMTS capabilities", async () => {
    for (const path of [
      "/bbox/across-lonlat/-178,-4,-172,4/64x64.png",
      "/bbox/across-lonlat/172,-4,178,4/64x64.png",
      "/preview/across-lonlat/128x64.png",
      "/statistics/across-lonlat?max_size=128",
      "/info/across-lonlat",
      "/tiles/across-lonlat/WebMercatorQuad/WMTSCapabilities.xml",
    ]) {
      const res = await get(path);
      expect(res.status, `${path}: ${await res.clone().text()}`).toBe(200);
    }
  });
});

describe("a source around the north pole", () => {
  it("reaches the pole in TileJSON, and decodes the top row of WebMercatorQuad and a tile touching 90° in WorldCRS84Quad", async () => {
    const doc = (await (await get("/tiles/arctic/WebMercatorQuad/tilejson.json")).json()) as TileJson;
    expect(doc.bounds[0]).toBe(-180);
    expect(doc.bounds[2]).toBe(180);
    expect(doc.bounds[3]).toBe(90);
    for (const tile of ["WebMercatorQuad/3/0/0", "WebMercatorQuad/3/5/0", "WorldCRS84Quad/3/2/0", "WorldCRS84Quad/3/13/0"]) {
      const res = await get(`/tiles/arctic/${tile}.png`);
      expect(res.status, tile).toBe(200);
      expect(await bytes(res), `${tile}: not the empty tile`).not.toEqual(EMPTY_TILES[1]);
    }
    const south = await get("/tiles/arctic/WebMercatorQuad/3/0/3.png");
    expect(await bytes(south)).toEqual(EMPTY_TILES[1]);
  });
});

/** The fixture's value at a pixel (world-edge-fixtures.ts), as stored in 8 bits. */
function pattern(col: number, row: number): number {
  const value = (Math.floor(col / 32) + Math.floor(row / 32)) % 2 ? 40 + (150 * col) / 1000 : 230 - (150 * row) / 500;
  return Math.round(value);
}
