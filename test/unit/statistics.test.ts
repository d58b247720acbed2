// The statistics' math (regional/maps/statistics.ts) against NumPy over the same pixels read by
// GDAL (test/support/gdal-worker.py numpyStatistics: rio-tiler's definitions, percentiles by
// numpy.percentile's inverted CDF): exact for min, max, counts, unique values, majority,
// minority, median, percentiles and histogram counts; 1e-9 relative for sum, mean and std. The
// feature mask (regional/maps/feature-mask.ts) against gdal_rasterize's on the same grid, pixel
// for pixel, holes and a self-intersecting ring (even-odd) included.
import { describe, expect, it } from "vitest";
import type { Geometry } from "../../shared/maps/feature";
import { crsOfGeoKeys } from "../../regional/maps/crs";
import { featureMask, ringsInGrid } from "../../regional/maps/feature-mask";
import type { Affine } from "../../regional/maps/transformer";
import { areaStatistics, roundHalfEven, type BandStatistics, type StatisticsOptions } from "../../regional/maps/statistics";
import { Slices } from "../../regional/runtime/slices";
import { gdalRasterize, gdalWindow, numpyStatistics, type NumpyStatistics } from "../support/gdal-reference";
import { MAP_FIXTURES, mapFixture, type MapFixture } from "../support/map-fixtures";

const signal = new AbortController().signal;

/** A whole fixture's full-resolution band as GDAL reads it, as the area read hands it over. */
async function planes(fixture: MapFixture, band: number) {
  const file = mapFixture(fixture);
  const window = [0, 0, fixture.width, fixture.height];
  const read = await gdalWindow(file, 0, window, [band]);
  return { file, window, planes: { width: fixture.width, height: fixture.height, names: [`b${band}`], bands: [Float32Array.from(read.values[0])], valid: read.mask } };
}

const options = (o: Partial<StatisticsOptions> = {}): StatisticsOptions => ({ categorical: false, percentiles: [2, 98], bins: 10, ...o });

function expectLike(ours: BandStatistics, ref: NumpyStatistics, percentiles: number[]): void {
  for (const key of ["min", "max", "count", "median", "majority", "minority", "unique", "valid_percent", "masked_pixels", "valid_pixels"] as const) {
    expect(ours[key], key).toBe(ref[key]);
  }
  for (const key of ["sum", "mean", "std"] as const) {
    const theirs = ref[key] as number;
    expect(Math.abs((ours[key] as number) - theirs), key).toBeLessThanOrEqual(1e-9 * Math.abs(theirs));
  }
  for (const p of percentiles) expect(ours[`percentile_${p}`], `percentile_${p}`).toBe(ref.percentiles[String(p)]);
  const [counts, edges] = ours.histogram as [number[], number[]];
  expect(counts).toEqual(ref.histogram[0]);
  edges.forEach((e, i) => expect(Math.abs(e - ref.histogram[1][i])).toBeLessThanOrEqual(1e-12 * Math.max(1, Math.abs(e))));
}

describe("statistics against NumPy over GDAL's pixels", () => {
  it("a float32 DEM with nodata: every statistic, percentiles 0, 2, 37, 50, 98, 100", async () => {
    const { file, window, planes: p } = await planes(MAP_FIXTURES.utmDem, 1);
    const percentiles = [0, 2, 37, 50, 98, 100];
    const ours = (await areaStatistics(p, options({ percentiles }), signal)).b1;
    const ref = await numpyStatistics({ file, band: 1, level: 0, window, percentiles });
    expect(ref.masked_pixels).toBeGreaterThan(0); // nodata is there to be left out
    expectLike(ours, ref, percentiles);
  });

  it("a uint16 band: histogram_bins and histogram_range (values outside the range not counted)", async () => {
    const { file, window, planes: p } = await planes(MAP_FIXTURES.wgs84Uint16, 2);
    const ours = (await areaStatistics(p, options({ bins: 16, range: [1000, 20000] }), signal)).b2;
    const ref = await numpyStatistics({ file, band: 2, level: 0, window, bins: 16, range: [1000, 20000] });
    expectLike(ours, ref, [2, 98]);
  });

  it("given bin edges", async () => {
    const { file, window, planes: p } = await planes(MAP_FIXTURES.wgs84Uint16, 1);
    const edges = [0, 100, 5000, 5001, 30000, 65535];
    const ours = (await areaStatistics(p, options({ bins: edges }), signal)).b1;
    const ref = await numpyStatistics({ file, band: 1, level: 0, window, bins: edges });
    expectLike(ours, ref, [2, 98]);
  });

  it("categorical: every value's count, and listed categories (0 for one absent)", async () => {
    const { file, window, planes: p } = await planes(MAP_FIXTURES.mercatorGrey, 1);
    const ours = (await areaStatistics(p, options({ categorical: true }), signal)).b1;
    const ref = await numpyStatistics({ file, band: 1, level: 0, window, categorical: true });
    expect(ours.histogram).toEqual(ref.histogram);
    const [values, counts] = [ref.histogram[1], ref.histogram[0]];
    const listed = (await areaStatistics(p, options({ categorical: true, categories: [values[3], 0.5, values[0]] }), signal)).b1;
    expect(listed.histogram).toEqual([[counts[3], 0, counts[0]], [values[3], 0.5, values[0]]]);
  });

  it("no valid pixel: counts of 0, null where NumPy has no value", async () => {
    const p = { width: 2, height: 2, names: ["b1"], bands: [new Float32Array([1, Number.NaN, Number.POSITIVE_INFINITY, 4])], valid: [new Uint8Array([0, 1, 1, 0])] };
    const stats = (await areaStatistics(p, options(), signal)).b1;
    expect(stats).toMatchObject({ min: null, max: null, mean: null, count: 0, valid_pixels: 0, masked_pixels: 4, valid_percent: 0, percentile_2: null, median: null });
  });

  it("valid_percent rounds as Python's round(x, 2): an exact tie goes to the even digit", () => {
    expect(roundHalfEven(12.125, 2)).toBe(12.12);
    expect(roundHalfEven(12.375, 2)).toBe(12.38);
    expect(roundHalfEven(33.33333, 2)).toBe(33.33);
  });

  it("a large band is computed in slices: the event loop keeps turning", async () => {
    const n = 3_000_000;
    const values = Float32Array.from({ length: n }, (_, i) => Math.sin(i) * 1000);
    const p = { width: n, height: 1, names: ["b1"], bands: [values], valid: [new Uint8Array(n).fill(1)] };
    let longest = 0;
    let last = performance.now();
    const timer = setInterval(() => {
      const now = performance.now();
      longest = Math.max(longest, now - last);
      last = now;
    }, 1);
    try {
      await areaStatistics(p, options(), signal);
    } finally {
      clearInterval(timer);
    }
    // Sorting 3 M floats at once (Float32Array.sort) holds the loop for some 430 ms here; a slice is 4 ms.
    expect(longest).toBeLessThan(150);
  });
});

describe("the feature mask against gdal_rasterize", () => {
  const dem = MAP_FIXTURES.utmDem;
  const crs = crsOfGeoKeys({ ProjectedCSTypeGeoKey: 32633 })!;
  // The DEM's full-resolution grid, in longitude and latitude around 16.48°E, 45.91°N.
  const around = (dx: number, dy: number): [number, number] => [16.48 + dx, 45.91 + dy];
  const shapes: Record<string, Geometry> = {
    "a polygon with a hole": {
      type: "Polygon",
      coordinates: [
        [around(-0.1, -0.05), around(0.13, -0.07), around(0.11, 0.09), around(-0.08, 0.1), around(-0.1, -0.05)],
        [around(-0.02, -0.01), around(0.03, -0.013), around(0.01, 0.04), around(-0.02, -0.01)],
      ],
    },
    "a self-intersecting ring (a bow-tie: its two lobes, even-odd)": {
      type: "Polygon",
      coordinates: [[around(-0.1, -0.05), around(0.1, 0.07), around(0.1, -0.06), around(-0.09, 0.08), around(-0.1, -0.05)]],
    },
    "a MultiPolygon whose parts overlap (their union, as GDAL fills it)": {
      type: "MultiPolygon",
      coordinates: [
        [[around(-0.1, -0.05), around(0.05, -0.05), around(0.05, 0.05), around(-0.1, 0.05), around(-0.1, -0.05)]],
        [[around(0, 0), around(0.12, 0), around(0.12, 0.1), around(0, 0.1), around(0, 0)]],
      ],
    },
  };

  for (const [what, geometry] of Object.entries(shapes)) {
    it(what, async () => {
      const affine = dem.geoTransform as unknown as Affine;
      const ours = await featureMask(ringsInGrid(geometry, crs, affine), dem.width, dem.height, new Slices(signal));
      const gdal = await gdalRasterize(geometry, dem.crs, dem.geoTransform, dem.width, dem.height);
      const inside = gdal.reduce((n, v) => n + v, 0);
      expect(inside).toBeGreaterThan(10_000);
      const differ = ours.reduce((n, v, i) => n + (v !== gdal[i] ? 1 : 0), 0);
      expect(differ).toBe(0);
    });
  }

  it("statistics within the mask are NumPy's with gdal_rasterize's cutline", async () => {
    const geometry = shapes["a polygon with a hole"];
    const { file, window, planes: p } = await planes(dem, 1);
    const mask = await featureMask(ringsInGrid(geometry, crs, dem.geoTransform as unknown as Affine), dem.width, dem.height, new Slices(signal));
    const ours = (await areaStatistics(p, options(), signal, mask)).b1;
    const cutline = await gdalRasterize(geometry, dem.crs, dem.geoTransform, dem.width, dem.height);
    expectLike(ours, await numpyStatistics({ file, band: 1, level: 0, window, cutline }), [2, 98]);
  });
});
