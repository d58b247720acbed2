// The warp of map tiles: the approximate transformer's error bound, the kernels' weights, and
// rendered tiles' formats, values and refusals. Tiles against gdalwarp's are map-tiles-vs-gdal's.
import path from "node:path";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Cog } from "../../regional/cog/cog";
import { conversion, setCrs } from "../../regional/maps/crs";
import { kernelWeight, resample } from "../../regional/maps/kernels";
import type { Plane } from "../../regional/cog/bands";
import { Slices } from "../../regional/runtime/slices";
import type { Resampling } from "../../shared/maps/tile-request";
import { renderTile } from "../../regional/maps/compose-tile";
import { sourceCoordinates } from "../../regional/maps/transformer";
import { planTile, warpTile } from "../../regional/maps/warp";
import { LocalCatalog } from "../../regional/source/local";
import { tileBounds, tileMatrixSet } from "../../shared/maps/tile-matrix-sets";
import { parseTileRequest } from "../../shared/maps/tile-request";
import { mapUnitFixtures } from "../support/map-fixtures";

/** A computation no one cancels. */
const slices = () => new Slices(new AbortController().signal);

let catalog: LocalCatalog;
const cogs: Cog[] = [];
beforeAll(() => {
  catalog = new LocalCatalog(mapUnitFixtures());
}, 60_000);
afterAll(async () => {
  await Promise.all(cogs.map((c) => c.close()));
});

async function open(id: string): Promise<Cog> {
  const cog = await Cog.open(await catalog.open(id, undefined));
  cogs.push(cog);
  return cog;
}

const request = (tile: string, query = "") => {
  const [tileMatrixSet, z, x, y] = tile.split("/");
  return parseTileRequest({ tileMatrixSet, z, x, y }, new URLSearchParams(query));
};

/** The tile at zoom `z` holding the point at fractions (fx, fy) of the source's bounds on the set. */
function tileAt(cog: Cog, set: string, z: number, fx = 0.5, fy = 0.5): string {
  const [x0, y0, x1, y1] = cog.geo!.info.tiling[set].bounds;
  const m = tileMatrixSet(set).tileMatrices[z];
  const span = m.cellSize * m.tileWidth;
  const x = Math.floor((x0 + fx * (x1 - x0) - m.origin[0]) / span);
  const y = Math.floor((m.origin[1] - (y1 - fy * (y1 - y0))) / span);
  return `${set}/${z}/${x}/${y}.png`;
}

describe("the approximate transformer", () => {
  it("stays within 0.125 source pixels of the exact transform, with far fewer exact calls than pixels", async () => {
    // UTM zone 33 seen from Web Mercator at zoom 6, far from the zone's meridian: curved rows.
    const toUtm = conversion(setCrs("WebMercatorQuad").definition, "+proj=utm +zone=33 +datum=WGS84 +units=m +no_defs");
    const [left, , , top] = tileBounds(tileMatrixSet("WebMercatorQuad"), 6, 38, 22);
    const cell = tileMatrixSet("WebMercatorQuad").tileMatrices[6].cellSize;
    const exact = (x: number, y: number): [number, number] => {
      const [e, n] = toUtm(left + x * cell, top - y * cell);
      return [(e - 100000) / 300, (6000000 - n) / 300]; // 300 m source pixels
    };
    const { xs, ys, exactCalls } = await sourceCoordinates(exact, 256, 256, slices());
    let worst = 0;
    for (let row = 0; row < 256; row++) {
      for (let col = 0; col < 256; col++) {
        const [x, y] = exact(col + 0.5, row + 0.5);
        worst = Math.max(worst, Math.abs(xs[row * 256 + col] - x) + Math.abs(ys[row * 256 + col] - y));
      }
    }
    expect(worst).toBeGreaterThan(0); // the rows do curve: this is an approximation
    expect(worst).toBeLessThanOrEqual(0.125);
    // Rows this curved (an output pixel spans eight source pixels) need many spans; still far fewer calls.
    expect(exactCalls).toBeLessThan((256 * 256) / 5);
  });
});

describe("kernels", () => {
  it("weigh as GDAL's: bilinear's tent, Keys cubic with a = −0.5", () => {
    expect([0, 0.25, 0.5, 1].map((d) => kernelWeight("bilinear", d))).toEqual([1, 0.75, 0.5, 0]);
    const cubic = [0, 0.5, 1, 1.5, 2].map((d) => kernelWeight("cubic", d));
    expect(cubic).toEqual([1, 0.5625, 0, -0.0625, 0]);
  });

  /** One output pixel at (x, y) of `plane`, resampled with `kernel`: its value, or undefined when invalid. */
  async function sampleAt(plane: Plane, x: number, y: number, resampling: Resampling): Promise<number | undefined> {
    const values = [new Float32Array(1)];
    const valid = [new Uint8Array(1)];
    const sampling = { xs: Float64Array.of(x), ys: Float64Array.of(y), covered: Uint8Array.of(1), resampling, scaleX: 1, scaleY: 1 };
    await resample([plane], sampling, values, valid, slices());
    return valid[0][0] ? values[0][0] : undefined;
  }

  it("renormalise over a band's own valid pixels, so nodata never bleeds into a value", async () => {
    // Two columns: 10 (valid) | 1e9 (nodata). A position a quarter pixel right of the first centre.
    const plane = { width: 2, height: 1, values: Float32Array.of(10, 1e9), valid: Uint8Array.of(1, 0) };
    for (const kernel of ["bilinear", "cubic"] as const) expect(await sampleAt(plane, 0.75, 0.5, kernel), kernel).toBe(10);
    // Both valid: bilinear's weights 0.75 and 0.25.
    plane.valid[1] = 1;
    plane.values[1] = 20;
    expect(await sampleAt(plane, 0.75, 0.5, "bilinear")).toBeCloseTo(12.5, 5);
  });

  it("renormalise inside the window too, where the whole neighbourhood is in it but one neighbour is invalid", async () => {
    // 6 × 6 of 10 with one nodata pixel of 1e9 beside the position: in reach of both kernels.
    const values = new Float32Array(36).fill(10);
    const valid = new Uint8Array(36).fill(1);
    values[2 * 6 + 3] = 1e9;
    valid[2 * 6 + 3] = 0;
    for (const kernel of ["bilinear", "cubic"] as const) expect(await sampleAt({ width: 6, height: 6, values, valid }, 3.25, 3.25, kernel), kernel).toBeCloseTo(10, 4);
    // The pixel's own source pixel invalid: the output is invalid.
    expect(await sampleAt({ width: 6, height: 6, values, valid }, 3.5, 2.5, "cubic")).toBeUndefined();
  });
  /** Every output pixel of a 64² grid turned by 10° over `plane` at `scale`, with `resampling`: each band's values and validity. */
  async function warpedGrid(planes: Plane[], scale: number, resampling: Resampling) {
    const side = 64;
    const xs = new Float64Array(side * side);
    const ys = new Float64Array(side * side);
    const [cos, sin] = [Math.cos(0.17), Math.sin(0.17)];
    for (let i = 0; i < xs.length; i++) {
      const [u, v] = [((i % side) + 0.5) / scale, (Math.floor(i / side) + 0.5) / scale];
      xs[i] = 12 + u * cos - v * sin;
      ys[i] = 1 + u * sin + v * cos;
    }
    const values = planes.map(() => new Float32Array(xs.length));
    const valid = planes.map(() => new Uint8Array(xs.length));
    const sampling = { xs, ys, covered: new Uint8Array(xs.length).fill(1), resampling, scaleX: scale, scaleY: scale };
    await resample(planes, sampling, values, valid, slices());
    return { values, valid };
  }

  it("give byte planes the values of the same samples as floats, across a mask's edge and one band's own nodata", async () => {
    // 8-bit samples over a disc-shaped mask shared by the bands; band 2 also has scattered nodata.
    const [width, height] = [120, 120];
    let seed = 7;
    const next = () => (seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32;
    const mask = Uint8Array.from({ length: width * height }, (_, i) => (Math.hypot((i % width) - 60, Math.floor(i / width) - 60) < 50 ? 1 : 0));
    const own = mask.map((m) => (next() < 0.05 ? 0 : m));
    const bytes = [0, 1, 2].map(() => Uint8Array.from({ length: width * height }, () => Math.floor(256 * next())));
    const valid = [mask, own, mask];
    const asBytes = bytes.map((values, b) => ({ width, height, values, valid: valid[b] }));
    // The floats, each band with a validity of its own (no table shared).
    const asFloats = bytes.map((values, b) => ({ width, height, values: Float32Array.from(values), valid: valid[b].slice() }));
    for (const scale of [1.48, 0.74, 0.4]) {
      for (const resampling of ["nearest", "bilinear", "cubic"] as const) {
        const [got, expected] = [await warpedGrid(asBytes, scale, resampling), await warpedGrid(asFloats, scale, resampling)];
        expect(got, `${resampling} at scale ${scale}`).toEqual(expected);
        expect(got.valid[1].includes(0) && got.valid[1].includes(1), "the tile crosses the edges").toBe(true);
      }
    }
  });
});

describe("rendered tiles", () => {
  it("are PNGs with filtered rows: well under the size of the same pixels written unfiltered", async () => {
    const cog = await open("rgb-utm");
    const body = (await renderTile(cog, request(tileAt(cog, "WebMercatorQuad", 12), "resampling=bilinear"))).body;
    const { data, info } = await sharp(body).raw().toBuffer({ resolveWithObject: true });
    const unfiltered = await sharp(data, { raw: info }).png({ adaptiveFiltering: false }).toBuffer();
    expect(body.length / unfiltered.length).toBeLessThan(0.8);
  });

  it("carry alpha only where some pixel is transparent: a tile wholly inside the data is RGB, its pixels the same, and smaller", async () => {
    const cog = await open("rgb-utm");
    const inside = request(tileAt(cog, "WebMercatorQuad", 12), "resampling=bilinear");
    const { data, info } = await sharp((await renderTile(cog, inside)).body).raw().toBuffer({ resolveWithObject: true });
    expect(info.channels).toBe(3);
    const warped = await warpTile(cog, inside);
    expect(warped.valid.every((v) => !v.includes(0)), "every pixel is valid").toBe(true);
    for (const i of [0, 1000, 30000, 65535]) {
      expect([...data.subarray(i * 3, i * 3 + 3)]).toEqual(warped.bands.map((b) => Math.round(b[i])));
    }
    const withAlpha = await sharp(Buffer.concat(Array.from({ length: 65536 }, (_, i) => Buffer.from([...data.subarray(i * 3, i * 3 + 3), 255]))), { raw: { width: 256, height: 256, channels: 4 } })
      .png({ adaptiveFiltering: true, compressionLevel: 5 })
      .toBuffer();
    expect((await renderTile(cog, inside)).body.length).toBeLessThan(withAlpha.length);
  });

  it("are transparent where the data is not, in png; black there in jpg; 512² at @2x", async () => {
    const cog = await open("rgb-utm");
    const edge = tileAt(cog, "WebMercatorQuad", 9, 0.02, 0.5);
    const png = await sharp((await renderTile(cog, request(edge))).body).raw().toBuffer({ resolveWithObject: true });
    expect(png.info.channels).toBe(4);
    const alphas = new Set(Array.from({ length: png.info.width * png.info.height }, (_, i) => png.data[i * 4 + 3]));
    expect([...alphas].sort()).toEqual([0, 255]);
    const jpg = await renderTile(cog, request(edge.replace(".png", ".jpg")));
    expect(jpg.contentType).toBe("image/jpeg");
    const big = await sharp((await renderTile(cog, request(edge.replace(".png", "@2x.png")))).body).metadata();
    expect([big.width, big.height]).toEqual([512, 512]);
  });

  it("rescale float data linearly to 0–255, and refuse float data without a rescale (400)", async () => {
    const cog = await open("dem");
    const tile = tileAt(cog, "WebMercatorQuad", 12);
    await expect(renderTile(cog, request(tile))).rejects.toMatchObject({ status: 400, message: expect.stringContaining("rescale") });
    const req = request(tile, "rescale=100,200");
    const warped = await warpTile(cog, req);
    const body = (await renderTile(cog, req)).body;
    expect((await sharp(body).metadata()).channels).toBe(1); // grey, opaque everywhere: no alpha
    const { data, info } = await sharp(body).raw().toBuffer({ resolveWithObject: true });
    for (const i of [1000, 30000, 60000]) {
      if (!warped.valid[0][i]) continue;
      const expected = Math.min(255, Math.max(0, Math.round((warped.bands[0][i] - 100) * 2.55)));
      expect(data[i * info.channels]).toBe(expected);
    }
  });

  it("scale 16-bit data over its type's range by default, and answer 400 for a band past the count", async () => {
    const cog = await open("u16");
    const tile = tileAt(cog, "WorldCRS84Quad", 10);
    const warped = await warpTile(cog, request(tile));
    expect(warped.bands).toHaveLength(1); // band 1 of a 4-band grey image
    const body = (await renderTile(cog, request(tile))).body;
    expect((await sharp(body).metadata()).channels).toBe(1);
    const { data, info } = await sharp(body).raw().toBuffer({ resolveWithObject: true });
    const i = 40000;
    expect(data[i * info.channels]).toBe(Math.round((warped.bands[0][i] * 255) / 65535));
    await expect(planTile(cog, request(tile, "bidx=5"), slices())).rejects.toThrow(/bidx 5 is past the source's 4 bands/);
  });

  it("are 404 for a picture that is not georeferenced", async () => {
    const cog = await Cog.open(await new LocalCatalog(path.join(import.meta.dirname, "../../samples")).open("test-pattern", undefined));
    cogs.push(cog);
    await expect(planTile(cog, request("WebMercatorQuad/0/0/0.png"), slices())).rejects.toMatchObject({
      status: 404,
      message: "the source is not georeferenced",
      detail: "local:test-pattern is not georeferenced",
    });
  });
});
