// /v1/statistics/{id} on a real decoder over the GDAL-made map fixtures, signed as the edge signs:
// GET over the whole source and POST over features against NumPy over what GDAL reads for the
// same grid (gdalwarp onto it, gdal_rasterize for the feature's mask); the POST plumbing (a body
// whose SHA-256 is not the signed digest, one past the limit, one that trickles past the
// deadline); and a full-resolution request that buys too much work, refused 413 naming max_size.
import { request as httpRequest } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Cog } from "../../regional/cog/cog";
import { areaGrid } from "../../regional/maps/areas";
import { LocalCatalog } from "../../regional/source/local";
import { boundsOf, type Geometry } from "../../shared/maps/feature";
import { parseStatisticsRequest, statisticsArea } from "../../shared/maps/statistics-request";
import { BODY_DIGEST_PARAM, signedHeaders, type SignedLimits } from "../../shared/protocol";
import { gdalRasterize, numpyStatistics, type NumpyStatistics } from "../support/gdal-reference";
import { MAP_FIXTURES, mapFixture, mapFixtures } from "../support/map-fixtures";
import { startDecoder, signedGet, signedPostBody, type Decoder } from "./regional-helpers";

const dem = MAP_FIXTURES.utmDem;
const around = (dx: number, dy: number): [number, number] => [16.48 + dx, 45.91 + dy];
const holed: Geometry = {
  type: "Polygon",
  coordinates: [
    [around(-0.1, -0.05), around(0.13, -0.07), around(0.11, 0.09), around(-0.08, 0.1), around(-0.1, -0.05)],
    [around(-0.02, -0.01), around(0.03, -0.013), around(0.01, 0.04), around(-0.02, -0.01)],
  ],
};
const bowTie: Geometry = { type: "Polygon", coordinates: [[around(-0.05, -0.03), around(0.05, 0.03), around(0.05, -0.03), around(-0.05, 0.03), around(-0.05, -0.03)]] };

let decoder: Decoder;
let cog: Cog;

beforeAll(async () => {
  const catalog = new LocalCatalog(mapFixtures());
  decoder = await startDecoder(catalog);
  cog = await Cog.open(await catalog.open(dem.id, undefined));
});

afterAll(async () => {
  await decoder.close();
  await cog.close();
});

/**
 * POST `body` to `path` as the DO sends it: the canonical text, its digest added to the path,
 * signed; with `digest`, `body` is sent as it is under that digest instead.
 */
const post = (path: string, body: string, digest?: string, limits: SignedLimits = {}) => signedPostBody(decoder, path, body, digest, limits);

function expectLike(ours: Record<string, unknown>, ref: NumpyStatistics): void {
  for (const key of ["min", "max", "count", "median", "majority", "minority", "unique", "valid_percent", "masked_pixels", "valid_pixels", "histogram"] as const) {
    expect(ours[key], key).toEqual(ref[key]);
  }
  for (const key of ["sum", "mean", "std"] as const) expect(Math.abs((ours[key] as number) - ref[key]!), key).toBeLessThanOrEqual(1e-9 * Math.abs(ref[key]!));
  expect([ours.percentile_2, ours.percentile_98]).toEqual([ref.percentiles["2"], ref.percentiles["98"]]);
}

describe("statistics on the decoder against NumPy over GDAL's pixels", () => {
  it("GET: the whole source at its own resolution (max_size past its size), titiler's keys in titiler's order", async () => {
    const res = await signedGet(decoder, `/v1/statistics/${dem.id}?max_size=1500`);
    expect(res.status, await res.clone().text()).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json");
    const body = (await res.json()) as Record<string, Record<string, unknown>>;
    expect(Object.keys(body)).toEqual(["b1"]);
    expect(Object.keys(body.b1)).toEqual(["min", "max", "mean", "count", "sum", "std", "median", "majority", "minority", "unique", "histogram", "valid_percent", "masked_pixels", "valid_pixels", "percentile_2", "percentile_98"]);
    expectLike(body.b1, await numpyStatistics({ file: mapFixture(dem), band: 1, level: 0, window: [0, 0, dem.width, dem.height] }));
  });

  it("GET at the default max_size reads 1024 pixels on the longest side", async () => {
    const body = (await (await signedGet(decoder, `/v1/statistics/${dem.id}`)).json()) as Record<string, { valid_pixels: number; masked_pixels: number }>;
    expect(body.b1.valid_pixels + body.b1.masked_pixels).toBe(683 * 1024);
  });

  for (const [what, geometry] of [["a polygon with a hole", holed], ["a self-intersecting ring (even-odd)", bowTie]] as const) {
    it(`POST a Feature, ${what}: its bounds at full resolution, the pixels whose centres it holds`, async () => {
      const feature = { type: "Feature", properties: { field: 7 }, geometry };
      const res = await post(`/v1/statistics/${dem.id}?resampling=nearest`, JSON.stringify(feature));
      expect(res.status, await res.clone().text()).toBe(200);
      expect(res.headers.get("content-type")).toBe("application/geo+json");
      const answer = (await res.json()) as { type: string; geometry: unknown; properties: { field: number; statistics: Record<string, Record<string, unknown>> } };
      expect(answer.type).toBe("Feature");
      expect(answer.geometry).toEqual(geometry);
      expect(answer.properties.field).toBe(7);
      // The grid the decoder reads: the feature's bounds in the source's CRS at its resolution.
      const grid = areaGrid(cog.levels[0], cog.geo!, statisticsArea(parseStatisticsRequest("POST", new URLSearchParams()), boundsOf(geometry)));
      const [x0, dx, , y1, , dy] = grid.affine;
      const bounds = [x0, y1 + grid.height * dy, x0 + grid.width * dx, y1];
      const cutline = await gdalRasterize(geometry, dem.crs, grid.affine, grid.width, grid.height);
      const warp = ["-ot", "Float32", "-dstnodata", "nan", "-t_srs", dem.crs, "-te", ...bounds.map(String), "-ts", String(grid.width), String(grid.height), "-r", "near"];
      const ref = await numpyStatistics({ file: mapFixture(dem), band: 1, level: 0, window: [0, 0, grid.width, grid.height], warp, cutline });
      expect(ref.count).toBeGreaterThan(10_000);
      expectLike(answer.properties.statistics.b1, ref);
    });
  }

  it("POST a FeatureCollection: each Feature answered with its own statistics and p=50", async () => {
    const collection = { type: "FeatureCollection", features: [{ type: "Feature", properties: null, geometry: holed }, { type: "Feature", properties: { n: 2 }, geometry: bowTie }] };
    const res = await post(`/v1/statistics/${dem.id}?max_size=64&p=50`, JSON.stringify(collection));
    expect(res.status, await res.clone().text()).toBe(200);
    const answer = (await res.json()) as { type: string; features: { properties: { n?: number; statistics: { b1: Record<string, unknown> } } }[] };
    expect(answer.type).toBe("FeatureCollection");
    expect(answer.features).toHaveLength(2);
    expect(answer.features[1].properties.n).toBe(2);
    for (const f of answer.features) {
      expect(f.properties.statistics.b1.percentile_50).toBe(f.properties.statistics.b1.median);
      expect((f.properties.statistics.b1.valid_pixels as number) + (f.properties.statistics.b1.masked_pixels as number)).toBeLessThanOrEqual(64 * 64);
    }
  });
});

describe("POST in another CRS", () => {
  it("dst_crs=EPSG:4326: the feature's bounds painted in lon/lat, against NumPy over gdalwarp's grid there", async () => {
    const res = await post(`/v1/statistics/${dem.id}?dst_crs=EPSG:4326&max_size=400`, JSON.stringify({ type: "Feature", properties: {}, geometry: holed }));
    expect(res.status, await res.clone().text()).toBe(200);
    const answer = (await res.json()) as { properties: { statistics: Record<string, Record<string, unknown>> } };
    const [x0, y0, x1, y1] = boundsOf(holed);
    const grid = areaGrid(cog.levels[0], cog.geo!, statisticsArea(parseStatisticsRequest("POST", new URLSearchParams("dst_crs=EPSG:4326&max_size=400")), [x0, y0, x1, y1]));
    const [gx0, dx, , gy1, , dy] = grid.affine;
    const bounds = [gx0, gy1 + grid.height * dy, gx0 + grid.width * dx, gy1];
    const cutline = await gdalRasterize(holed, "EPSG:4326", grid.affine, grid.width, grid.height);
    const warp = ["-ot", "Float32", "-dstnodata", "nan", "-t_srs", "EPSG:4326", "-te", ...bounds.map(String), "-ts", String(grid.width), String(grid.height), "-r", "near"];
    const ref = await numpyStatistics({ file: mapFixture(dem), band: 1, level: 0, window: [0, 0, grid.width, grid.height], warp, cutline });
    const ours = answer.properties.statistics.b1;
    // A reprojected nearest warp may pick a neighbour at a pixel's edge: counts within 0.5 %, values close.
    expect(Math.abs((ours.count as number) - ref.count)).toBeLessThanOrEqual(0.005 * ref.count);
    expect(Math.abs((ours.mean as number) - ref.mean!)).toBeLessThanOrEqual(0.005 * Math.abs(ref.mean!));
  });
});

describe("POST plumbing on the decoder", () => {
  const body = JSON.stringify({ type: "Feature", properties: {}, geometry: holed });

  it("a body whose SHA-256 is not the signed digest: 400", async () => {
    const res = await post(`/v1/statistics/${dem.id}`, body, "0".repeat(64));
    expect(res.status).toBe(400);
    expect(await res.text()).toMatch(/SHA-256/);
  });

  it("a path naming no digest: 400", async () => {
    const path = `/v1/statistics/${dem.id}`;
    const res = await fetch(decoder.url + path, { method: "POST", body, headers: await signedHeaders(decoder.secret, "POST", path) });
    expect(res.status).toBe(400);
  });

  it("a body past the limit: 413", async () => {
    const huge = "x".repeat(1024 * 1024 + 1);
    const res = await post(`/v1/statistics/${dem.id}`, huge, "0".repeat(64));
    expect(res.status).toBe(413);
  });

  it("a body that trickles past the request's deadline: 408", async () => {
    const path = `/v1/statistics/${dem.id}?${BODY_DIGEST_PARAM}=${"0".repeat(64)}`;
    const headers = await signedHeaders(decoder.secret, "POST", path, { timeoutMs: "300" });
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(decoder.url + path, { method: "POST", headers: { ...headers, "content-length": "1000" } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on("error", reject);
      req.write("{"); // and nothing more
    });
    expect(status).toBe(408);
  });

  it("a full-resolution POST that buys more work than a full's grant holds: 413 telling the client to use max_size", async () => {
    // A full's grant of work is all its deadline allows: work beyond it could never be admitted.
    const grant: SignedLimits = { grantBytes: String(512 * 1024 * 1024), grantWork: "100", partition: "full" };
    const whole = JSON.stringify({ type: "Feature", properties: {}, geometry: { type: "Polygon", coordinates: [[around(-0.19, -0.13), around(0.19, -0.13), around(0.19, 0.13), around(-0.19, 0.13), around(-0.19, -0.13)]] } });
    const res = await post(`/v1/statistics/${dem.id}`, whole, undefined, grant);
    expect(res.status).toBe(413);
    expect(await res.text()).toMatch(/use max_size/);
    expect((await post(`/v1/statistics/${dem.id}?max_size=64`, whole, undefined, grant)).status).toBe(200);
  });
});
