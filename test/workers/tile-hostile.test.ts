// The tile URL grammar as an attacker sends it, at the edge: negative, huge, fractional, hex and
// non-finite numbers, encodings, "..", segments missing or extra, repeated and unknown
// parameters, over-long values. Every one is answered 400 or 404 with the error JSON, before
// any admission: no decoder is registered in this file, so a request that reached for one would
// get 503.
import { exports } from "cloudflare:workers";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import type { ErrorBody } from "../../shared/errors";
import { BASE, cacheSourceInfo, georeferencedSource, metric } from "./helpers";

// A few seconds per run; FUZZ_RUNS searches harder.
const RUNS = Math.min(Number(process.env.FUZZ_RUNS ?? 1000), 20_000);
const TILES = "/tiles/geo/WebMercatorQuad";

/** The path as sent, not as a URL parser would normalise it ("..", "\\"). */
const send = (path: string) => exports.default.fetch(new Request(BASE + path));

async function expectError(path: string) {
  const res = await send(path);
  expect([400, 404], path).toContain(res.status);
  expect(res.headers.get("content-type"), path).toBe("application/json; charset=utf-8");
  expect(res.headers.get("access-control-allow-origin"), path).toBe("*");
  const body = (await res.json()) as ErrorBody;
  expect(body.error, path).toBe(res.status === 400 ? "bad_request" : "not_found");
  expect(body.message.length, path).toBeGreaterThan(0);
  return body;
}

beforeAll(async () => {
  await cacheSourceInfo(georeferencedSource("geo"));
  // A map source with no area at all: every valid tile of it is outside its bounds, so the fuzz
  // below can tell a valid request (200, the empty tile, no decode) from a refused one.
  const nowhere = georeferencedSource("nowhere");
  for (const tiling of Object.values(nowhere.georeference!.tiling)) tiling.bounds = [0, 0, 0, 0];
  await cacheSourceInfo(nowhere);
});

describe("hostile tile requests", () => {
  it.each([
    // Numbers: negative, huge, fractional, hex, exponent, non-finite, blank.
    ["-1/0/0.png", "zoom"],
    ["4/-1/0.png", "column"],
    ["4/0/-1.png", "tile"],
    ["25/0/0.png", "zoom 25 is outside"],
    ["4/16/0.png", "outside"],
    ["4/0/16.png", "outside"],
    ["999999999/0/0.png", "outside"],
    ["1234567890/0/0.png", "zoom"],
    ["4/0/12345678901234567890.png", "tile"],
    ["4.5/9/5.png", "zoom"],
    ["4/9.0/5.png", "column"],
    ["4/9/5.5.png", "tile"],
    ["0x4/9/5.png", "zoom"],
    ["4/1e1/5.png", "column"],
    ["Infinity/0/0.png", "zoom"],
    ["NaN/0/0.png", "zoom"],
    ["4/%20/5.png", "column"],
    ["4/+9/5.png", "column"],
    // Encodings: "..", "/" and NUL smuggled in, broken escapes, other formats and scales.
    ["%2E%2E/9/5.png", "must be {tileMatrixSetId}/{z}/{x}/{y}"], // URL parsing reads %2E%2E as ".."
    ["4/9%2F5/5.png", "column"],
    ["4/9/5.png%00", "tile"],
    ["%E0%A4%A/9/5.png", "not a valid URL-encoded path segment"],
    ["4/9/5.gif", "tile format"],
    ["4/9/5.PNG", "tile"],
    ["4/9/5.tif", "tile format"],
    ["4/9/5@3x.png", "tile"],
    ["4/9/5@2x", "tile"],
    ["4/9/5", "tile"],
    // Segments missing or extra, "..", "\\".
    ["4/9/5/1.png", "must be {tileMatrixSetId}/{z}/{x}/{y}"],
    ["4/9.png", "must be {tileMatrixSetId}/{z}/{x}/{y}"],
    ["../../x/4/9/5.png", "must be {tileMatrixSetId}/{z}/{x}/{y}"],
    ["4\\9\\5\\1.png", "must be {tileMatrixSetId}/{z}/{x}/{y}"], // URL parsing reads "\\" as "/"
    // Parameters: unknown, repeated, empty, non-finite, hex, over-long.
    ["4/9/5.png?foo=1", 'unknown query parameter "foo"'],
    ["4/9/5.png?BIDX=1", "unknown query parameter"],
    ["4/9/5.png?bidx", "bidx"],
    ["4/9/5.png?bidx=0", "bidx"],
    ["4/9/5.png?bidx=65536", "bidx"],
    ["4/9/5.png?bidx=0x1", "bidx"],
    ["4/9/5.png?bidx=1e0", "bidx"],
    ["4/9/5.png?bidx=1&bidx=2", "bidx names 2 bands"],
    [`4/9/5.png?bidx=${"1,".repeat(5000)}1`, "bidx names 5001 bands"],
    ["4/9/5.png?rescale=NaN,1", "rescale"],
    ["4/9/5.png?rescale=0,Infinity", "rescale"],
    ["4/9/5.png?rescale=0x10,0x20", "rescale"],
    ["4/9/5.png?rescale=0,1e999", "rescale"],
    ["4/9/5.png?rescale=5,5", "rescale"],
    ["4/9/5.png?rescale=0,1,2", "rescale"],
    ["4/9/5.png?rescale=0,1&rescale=0,2", "rescale gives 2 ranges"],
    [`4/9/5.png?rescale=0,${"9".repeat(400)}`, "rescale"],
    ["4/9/5.png?nodata=Infinity", "nodata"],
    ["4/9/5.png?nodata=0x10", "nodata"],
    ["4/9/5.png?nodata=1&nodata=2", "given 2 times"],
    ["4/9/5.png?resampling=lanczos", "resampling"],
    ["4/9/5.png?resampling=nearest&resampling=cubic", "given 2 times"],
    [`4/9/5.png?resampling=${"x".repeat(10000)}`, "resampling"],
  ])("%s is refused: %s", async (tile, message) => {
    expect((await expectError(`${TILES}/${tile}`)).message).toContain(message);
  });

  it("refuses expressions past the node cap, and of constants only, before admission", async () => {
    for (const [expression, message] of [
      // The most nodes 1,024 characters hold; calls of 16 arguments nested past the cap.
      ["b1" + "+1".repeat(511), "too many nodes (1023 numbers, bands, operators and calls, at most 256)"],
      [`max(${Array(16).fill(`min(b1${",1".repeat(15)})`).join(",")})`, "too many nodes (273 numbers, bands, operators and calls, at most 256)"],
      ["1+1", "reads no band"],
    ]) {
      expect((await expectError(`${TILES}/4/9/5.png?expression=${encodeURIComponent(expression)}`)).message, expression.slice(0, 40)).toContain(message);
    }
  });

  it("refuses a bad set, a bad snapshot id and malformed map routes, as 404 or 400", async () => {
    for (const [path, status] of [
      ["/tiles/geo/Foo/4/9/5.png", 404],
      [`/tiles/geo/${"A".repeat(10000)}/4/9/5.png`, 404],
      ["/tiles/geo/webmercatorquad/4/9/5.png", 404],
      ["/tiles/geo/WebMercatorQuad/tilejson.json/x", 400],
      ["/tiles/geo@/WebMercatorQuad/4/9/5.png", 400],
      ["/tiles/@v1/WebMercatorQuad/4/9/5.png", 400],
      ["/tiles/geo@v1@v2/WebMercatorQuad/tilejson.json", 400],
      ["/tiles/geo/WebMercatorQuad", 400],
    ] as const) {
      const res = await send(path);
      expect(res.status, path).toBe(status);
      expect(((await res.json()) as ErrorBody).message, path).toBeTruthy();
    }
  });

  it("answers any request of random pieces with the empty tile (a valid one, whose canonical form names itself) or 400/404, never reaching for a decoder", async () => {
    const pieces = fc.constantFrom("0", "1", "4", "9", "-", "+", ".", "e", "x", "@2x", ".png", ".jpg", "%2E", "%2F", "%", "..", " ", "\\", "Infinity", "NaN", "00");
    const segmentText = fc.oneof(
      { arbitrary: fc.integer({ min: 0, max: 40 }).map(String), weight: 3 },
      { arbitrary: fc.array(pieces, { maxLength: 6 }).map((a) => a.join("")), weight: 2 },
    );
    const y = fc.tuple(segmentText, fc.constantFrom("", "@2x"), fc.constantFrom(".png", ".jpg", ".jpeg", ".webp", ".gif", "", ".PNG")).map((p) => p.join(""));
    const value = fc.oneof(fc.constantFrom("1", "1,2,3", "0,255", "nan", "NaN", "Infinity", "0x1", "1e3", "-1", "", "nearest", "cubic", "3,2,1,4"), fc.string({ maxLength: 12 }));
    const key = fc.constantFrom("bidx", "rescale", "nodata", "resampling", "tile_format", "foo", "");
    const query = fc.array(fc.tuple(key, value), { maxLength: 4 }).map((pairs) => (pairs.length ? `?${pairs.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join("&")}` : ""));
    const set = fc.constantFrom("WebMercatorQuad", "WorldCRS84Quad", "Nope");
    await fc.assert(
      fc.asyncProperty(set, segmentText, segmentText, y, query, async (tms, z, x, last, q) => {
        const path = `/tiles/nowhere/${tms}/${z}/${x}/${last}${q}`;
        const res = await send(path);
        if (res.status === 200) {
          expect(res.headers.get("content-type"), path).toBe("image/png");
          expect(res.headers.get("x-tessera-cache"), path).toBeNull(); // no cache, no decoder
          await res.arrayBuffer();
          // Its canonical form is a fixed point: asked for, it names itself.
          const canonical = /^<([^>]+)>;rel="canonical"$/.exec(res.headers.get("link") ?? "")![1];
          const again = await send(canonical.slice(BASE.length));
          expect(again.headers.get("link"), path).toBe(res.headers.get("link"));
          await again.arrayBuffer();
        } else {
          expect([400, 404], path).toContain(res.status);
          expect(((await res.json()) as ErrorBody).message, path).toBeTruthy();
        }
      }),
      { numRuns: RUNS },
    );
    expect(await metric("released_total")).toBe(0);
  });
});
