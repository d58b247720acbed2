// GET /point/{id}/{x},{y} and /info/{id}[.geojson] through the Worker: hostile coordinates 400
// before any lookup; a point decoded by the real working decoder over the bundled UTM sample
// (values as gdallocationinfo reads them), cached at the edge so every spelling hits with one
// ETag; a restricted source's point 401 without a grant; and /info answered from the cached
// metadata alone, as rio-tiler's Info and as a GeoJSON Feature.
import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import { forgetSourceInfo } from "../../edge/source-info";
import { ACCESS_VARS, cacheSourceInfo, get, getWith, georeferencedSource, heartbeat, metric, squareSource } from "./helpers";

beforeEach(async () => {
  expect((await heartbeat({ url: env.TEST_WORKING_DECODER_URL, capacity: 4 })).status).toBe(204);
});

describe("GET /point", () => {
  it("refuses hostile coordinates 400 before any admission", async () => {
    await cacheSourceInfo(georeferencedSource("geo"));
    const admitted = await metric("released_total");
    for (const coords of ["NaN,45", "15,NaN", "1e999,45", "0x10,45", `1${"0".repeat(5000)},45`, `0.${"1".repeat(100)},45`, "15", "15;45", ",", "15,", " 15,45", "Infinity,0", "181,0", "0,-90.5", "15,45,3"]) {
      const res = await get(`/point/geo/${encodeURIComponent(coords).replace(/%2C/g, ",")}`);
      expect(res.status, coords).toBe(400);
      expect(((await res.json()) as { error: string }).error, coords).toBe("bad_request");
    }
    for (const query of ["rescale=0,1", "coord_crs=4326", "coord_crs=EPSG:4326&coord_crs=EPSG:3857", "bidx=0", "expression=b1%2B"]) {
      expect((await get(`/point/geo/15,45?${query}`)).status, query).toBe(400);
    }
    expect(await metric("released_total")).toBe(admitted);
  });

  it("answers 404 for a source that is not georeferenced", async () => {
    await cacheSourceInfo(squareSource("plain", [1000, 500]));
    const res = await get("/point/plain/15,45");
    expect(res.status).toBe(404);
    expect(await res.text()).toMatch(/not georeferenced/);
  });

  it("decodes a point once; every spelling then hits with the same values and ETag", async () => {
    await forgetSourceInfo({ id: "utm-quadrants" });
    const miss = await get("/point/utm-quadrants/15.1,47.75");
    expect(miss.status).toBe(200);
    expect(miss.headers.get("content-type")).toBe("application/json");
    expect(miss.headers.get("x-tessera-cache")).toBe("miss");
    // gdallocationinfo -wgs84 samples/utm-quadrants.tif 15.1 47.75: pixel (374, 574), 30 70 200.
    expect(await miss.json()).toEqual({ coordinates: [15.1, 47.75], values: [30, 70, 200], band_names: ["b1", "b2", "b3"] });
    const afterMiss = await metric("released_total");
    for (const spelling of ["/point/utm-quadrants/15.1,47.75", "/point/utm-quadrants/15.10,47.750", "/point/utm-quadrants/+15.1,47.75e0", "/point/utm-quadrants/15.1,47.75?coord_crs=epsg:4326"]) {
      const hit = await get(spelling);
      expect(hit.headers.get("x-tessera-cache"), spelling).toBe("hit");
      expect(hit.headers.get("etag"), spelling).toBe(miss.headers.get("etag"));
      expect(((await hit.json()) as { values: number[] }).values, spelling).toEqual([30, 70, 200]);
    }
    expect(await metric("released_total")).toBe(afterMiss);
    const other = await get("/point/utm-quadrants/15.2,47.8?bidx=2");
    expect(await other.json()).toMatchObject({ values: [160], band_names: ["b2"] });
  });

  it("answers 404 outside the data: outside the bounds from the edge alone, inside them from the decoder", async () => {
    await get("/point/utm-quadrants/15.1,47.75"); // its metadata cached
    const admitted = await metric("released_total");
    const far = await get("/point/utm-quadrants/10,47.75");
    expect(far.status).toBe(404);
    expect(await far.text()).toMatch(/outside the data/);
    expect(await metric("released_total")).toBe(admitted);
    // Inside the lon/lat bounds, north of the image's top edge (47.85302° there): the decoder's 404.
    const corner = await get("/point/utm-quadrants/15.27,47.8533");
    expect(corner.status).toBe(404);
    expect(await corner.text()).toMatch(/outside the data/);
    expect(await metric("released_total")).toBeGreaterThan(admitted);
  });

  it("of a restricted source is 401 without a grant, like its tiles and areas and statistics, before any admission", async () => {
    await cacheSourceInfo({ ...georeferencedSource("locked"), access: { profile: "active" } });
    const admitted = await metric("released_total");
    const paths = ["/tiles/locked/WebMercatorQuad/4/8/5.png", "/point/locked/45,30", "/info/locked", "/info/locked.geojson", "/bbox/locked/44,29,46,31/64x64.png", "/preview/locked.tif", "/statistics/locked"];
    for (const path of paths) {
      const res = await getWith(path, ACCESS_VARS);
      expect([res.status, res.headers.get("cache-control")], path).toEqual([401, "no-store"]);
    }
    const field = JSON.stringify({ type: "Feature", properties: null, geometry: { type: "Polygon", coordinates: [[[44, 29], [46, 29], [46, 31], [44, 29]]] } });
    for (const path of ["/feature/locked.png", "/statistics/locked"]) {
      const res = await getWith(path, ACCESS_VARS, { method: "POST", body: field });
      expect([res.status, res.headers.get("cache-control")], `POST ${path}`).toEqual([401, "no-store"]);
    }
    expect(await metric("released_total")).toBe(admitted);
  });
});

describe("GET /info", () => {
  it("answers rio-tiler's Info of a COG from the decoder's metadata, without a decode", async () => {
    await forgetSourceInfo({ id: "utm-quadrants" });
    const res = await get("/info/utm-quadrants");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json");
    expect(res.headers.get("cache-control")).toMatch(/^public, max-age=\d+/);
    expect(res.headers.get("etag")).toMatch(/^"[0-9a-f]{32}"$/);
    // As gdalinfo samples/utm-quadrants.tif says.
    expect(await res.json()).toEqual({
      bounds: [500000, 5279520, 520480, 5300000],
      crs: "http://www.opengis.net/def/crs/EPSG/0/32633",
      band_metadata: [["b1", {}], ["b2", {}], ["b3", {}]],
      band_descriptions: [["b1", ""], ["b2", ""], ["b3", ""]],
      dtype: "uint8",
      nodata_type: "None",
      colorinterp: ["red", "green", "blue"],
      scales: [1, 1, 1],
      offsets: [0, 0, 0],
      count: 3,
      overviews: [2, 4],
      width: 1024,
      height: 1024,
      driver: "GTiff",
      minzoom: 11,
      maxzoom: 13,
    });
    const again = await get("/info/utm-quadrants", { headers: { "if-none-match": res.headers.get("etag")! } });
    expect(again.status).toBe(304);
  });

  it("answers the GeoJSON Feature: the bounds in WGS 84 as a polygon, the info as its properties", async () => {
    const res = await get("/info/utm-quadrants.geojson");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/geo+json");
    const feature = (await res.json()) as { type: string; bbox: number[]; geometry: { type: string; coordinates: number[][][] }; properties: { crs: string } };
    expect(feature.type).toBe("Feature");
    expect(feature.properties.crs).toBe("http://www.opengis.net/def/crs/EPSG/0/32633");
    const [west, south, east, north] = feature.bbox;
    expect(feature.geometry).toEqual({ type: "Polygon", coordinates: [[[west, south], [east, south], [east, north], [west, north], [west, south]]] });
    // gdalinfo's corners: 15°E to 15°16'25.57"E, 47°40'7.49"N to 47°51'12.03"N.
    expect(west).toBeCloseTo(15, 6);
    expect(east).toBeCloseTo(15 + 16 / 60 + 25.57 / 3600, 4);
    expect(south).toBeCloseTo(47 + 40 / 60 + 7.49 / 3600, 4);
    expect(north).toBeCloseTo(47 + 51 / 60 + 12.03 / 3600, 4);
  });

  it("answers what it knows from metadata cached before bands were reported, and 404 for a source that is not a map", async () => {
    await cacheSourceInfo(georeferencedSource("geo"));
    const info = (await (await get("/info/geo")).json()) as Record<string, unknown>;
    expect(info).toMatchObject({ width: 1024, height: 1024, overviews: [2, 4], crs: "http://www.opengis.net/def/crs/EPSG/0/3857", minzoom: 2, maxzoom: 4 });
    expect(info.dtype).toBeUndefined();
    await cacheSourceInfo(squareSource("plain", [1000, 500]));
    expect((await get("/info/plain")).status).toBe(404);
    expect((await get("/info/plain.geojson")).status).toBe(404);
  });

  it("answers a STAC source as titiler's STAC info: each COG asset of its first item by key, as a COG's Info", async () => {
    const geo = georeferencedSource("stac-scene");
    const band = { dtype: "uint16", nodata: 0, scale: 1, offset: 0, colorinterp: "gray", description: "" } as const;
    const asset = { levels: geo.levels, bands: [band], nodataType: "Nodata" as const, georeference: { crs: "EPSG:3857", bbox: geo.georeference!.bbox, tiling: geo.georeference!.tiling } };
    const mosaic = { kind: "stac" as const, assets: 1, maxAssetsPerKey: 1, quadkeyZoom: 0, stacAssets: { B04: asset, B08: asset } };
    await cacheSourceInfo({ ...geo, mosaic });
    const info = (await (await get("/info/stac-scene")).json()) as Record<string, Record<string, unknown>>;
    expect(Object.keys(info)).toEqual(["B04", "B08"]);
    expect(info.B08).toMatchObject({ dtype: "uint16", nodata_type: "Nodata", nodata_value: 0, count: 1, width: 1024, overviews: [2, 4], crs: "http://www.opengis.net/def/crs/EPSG/0/3857" });
    const feature = (await (await get("/info/stac-scene.geojson")).json()) as { type: string; properties: Record<string, unknown> };
    expect([feature.type, Object.keys(feature.properties)]).toEqual(["Feature", ["B04", "B08"]]);
  });
});
