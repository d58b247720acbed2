// The decoder's tile route over HTTP: statuses, headers, and the same admission as images (the
// precise estimate, the DO's grant, the work budget's 413), on GDAL-made fixtures.
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LocalCatalog } from "../../regional/source/local";
import { WorkBudget } from "../../regional/runtime/work-budget";
import { ADMISSION_DEFAULTS } from "../../shared/admission-config";
import { ESTIMATE_HEADER, NEEDED_HEADER } from "../../shared/cost";
import { DECODER, GRANT_HEADER, VERSION_HEADER, type SourceInfo } from "../../shared/protocol";
import { mapUnitFixtures } from "../support/map-fixtures";
import { signedGet, startDecoder, type Decoder } from "./regional-helpers";

let dir: string;
let decoder: Decoder;
const versions: Record<string, string> = {};

beforeAll(async () => {
  dir = mapUnitFixtures();
  decoder = await startDecoder(new LocalCatalog(dir));
  for (const id of ["rgb-utm", "dem", "test-pattern", "no-overviews"]) {
    versions[id] = ((await (await signedGet(decoder, DECODER.info(id))).json()) as SourceInfo).version;
  }
}, 60_000);
afterAll(() => decoder?.close());

const tilePath = (id: string, canonical: string) => DECODER.tile(id, canonical, versions[id]);

describe("GET /v1/tiles", () => {
  it("answers a warped tile with its content type, version and precise estimate", async () => {
    // rgb-utm covers 14°–15°E, 45°–46°N: tile 10/553/366 of WebMercatorQuad is inside it.
    const res = await signedGet(decoder, tilePath("rgb-utm", "WebMercatorQuad/10/553/366.png"));
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/png");
    expect(res.headers.get(VERSION_HEADER)).toBe(versions["rgb-utm"]);
    const estimate = Number(res.headers.get(ESTIMATE_HEADER));
    expect(estimate).toBeGreaterThan(0);
    expect(estimate).toBeLessThan(ADMISSION_DEFAULTS.LARGE_DECODE_THRESHOLD_BYTES); // a tile, not a full
    const meta = await sharp(Buffer.from(await res.arrayBuffer())).metadata();
    expect([meta.width, meta.height, meta.channels]).toEqual([256, 256, 3]); // inside the data: opaque, no alpha
  });

  it("answers jpg and webp @2x with their types and sizes, and takes the query", async () => {
    for (const [canonical, type, side] of [
      ["WebMercatorQuad/10/553/366.jpg?resampling=bilinear", "image/jpeg", 256],
      ["WorldCRS84Quad/9/541/88@2x.webp?bidx=3,2,1&rescale=0,200", "image/webp", 512],
    ] as const) {
      const res = await signedGet(decoder, tilePath("rgb-utm", canonical));
      expect(res.status, canonical).toBe(200);
      expect(res.headers.get("content-type")).toBe(type);
      expect((await sharp(Buffer.from(await res.arrayBuffer())).metadata()).width).toBe(side);
    }
  });

  it("refuses what it cannot serve before any pixel I/O: 404, 400s naming the reason", async () => {
    const cases = [
      ["test-pattern", "WebMercatorQuad/0/0/0.png", 404, "is not georeferenced"],
      ["rgb-utm", "WebMercatorQuad/10/553/366.png?bidx=4", 400, "bidx 4 is past the source's 3 bands"],
      ["dem", "WebMercatorQuad/12/2219/1472.png", 400, "rescale"],
      ["rgb-utm", "WebMercatorQuad/10/553/366.png?colormap=viridis", 400, "colormap must be JSON"],
      ["rgb-utm", "WebMercatorQuad/10/553/366.png?colour=viridis", 400, "unknown query parameter"],
      ["rgb-utm", "NoSuchSet/1/0/0.png", 404, "unknown tile matrix set"],
      ["rgb-utm", "WebMercatorQuad/2/4/0.png", 400, "outside WebMercatorQuad"],
      // Constants only: nothing to read, no window to warp (this was a crash, a 500).
      ["rgb-utm", "WebMercatorQuad/10/553/366.png?expression=1%2B1", 400, "reads no band"],
      ["rgb-utm", `WebMercatorQuad/10/553/366.png?expression=b1${"%2B1".repeat(128)}`, 400, "too many nodes (257"],
    ] as const;
    for (const [id, canonical, status, message] of cases) {
      const res = await signedGet(decoder, tilePath(id, canonical));
      expect(res.status, canonical).toBe(status);
      expect(((await res.json()) as { message: string }).message, canonical).toContain(message);
    }
  });

  it("colours float data by an interval colormap of its raw values, with no rescale", async () => {
    // The DEM's heights lie within 0–5000 m: one interval paints every valid pixel red.
    const colormap = encodeURIComponent(JSON.stringify([[[-1000, 10000], [255, 0, 0, 255]]]));
    const res = await signedGet(decoder, tilePath("dem", `WebMercatorQuad/12/2219/1472.png?colormap=${colormap}`));
    expect(res.status).toBe(200);
    const { data, info } = await sharp(Buffer.from(await res.arrayBuffer())).raw().toBuffer({ resolveWithObject: true });
    expect(info.channels).toBe(4);
    const opaque = [];
    for (let i = 0; i < data.length; i += 4) if (data[i + 3] === 255) opaque.push([data[i], data[i + 1], data[i + 2]]);
    expect(opaque.length).toBeGreaterThan(0);
    expect(opaque.every(([r, g, b]) => r === 255 && g === 0 && b === 0)).toBe(true);
  });

  it("is a signed route like every /v1 route", async () => {
    expect((await signedGet(decoder, tilePath("rgb-utm", "WebMercatorQuad/10/553/366.png"), null)).status).toBe(401);
  });
});

describe("a zoom-0 tile over a large COG without overviews", () => {
  const zoom0 = () => tilePath("no-overviews", "WebMercatorQuad/0/0/0.png");

  it("is estimated as a full (it reads every block), and rendered within a budget that holds it", async () => {
    const res = await signedGet(decoder, zoom0());
    expect(res.status).toBe(200);
    expect(Number(res.headers.get(ESTIMATE_HEADER))).toBeGreaterThanOrEqual(ADMISSION_DEFAULTS.LARGE_DECODE_THRESHOLD_BYTES);
  });

  it("is refused with 413 by a decoder whose work budget can never hold it, before any read", async () => {
    const small = await startDecoder(new LocalCatalog(dir), 3, { budget: new WorkBudget(64 * 1024 * 1024) });
    try {
      const res = await signedGet(small, zoom0());
      expect(res.status).toBe(413);
    } finally {
      await small.close();
    }
  });

  it("above the DO's grant, answers GrantExceeded with the bytes it needs", async () => {
    const res = await signedGet(decoder, zoom0(), undefined, { [GRANT_HEADER]: String(1024 * 1024) });
    expect(res.status).toBe(503);
    expect(Number(res.headers.get(NEEDED_HEADER))).toBeGreaterThanOrEqual(ADMISSION_DEFAULTS.LARGE_DECODE_THRESHOLD_BYTES);
  });
});
