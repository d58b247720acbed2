// Pixel selection over a mosaic's assets: each mode on hand-made pixels, the tuple rule (an asset
// takes part at a pixel only where its whole tuple is valid), rank_channel, ties going to source
// order, `first` stopping once filled, and a property: the reducer equals a per-pixel reference.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { HttpError } from "../../shared/errors";
import { beforeChannelsTuple, pixelSelection, type AssetTuple } from "../../regional/maps/pixel-selection";
import { Slices } from "../../regional/runtime/slices";
import { PIXEL_SELECTIONS, type PixelSelection } from "../../shared/maps/style";

/** An asset from per-pixel tuples; `null` marks an invalid component. */
function asset(pixels: (number | null)[][]): AssetTuple {
  const components = pixels[0].length;
  return {
    bands: Array.from({ length: components }, (_, c) => Float32Array.from(pixels, (p) => p[c] ?? 0)),
    valid: Array.from({ length: components }, (_, c) => Uint8Array.from(pixels, (p) => (p[c] === null ? 0 : 1))),
  };
}

/** A computation no one cancels. */
const slices = () => new Slices(new AbortController().signal);

/** The reduced tile as per-pixel tuples, `null` where the pixel is invalid. */
async function reduce(mode: PixelSelection, assets: AssetTuple[], rankChannel?: number): Promise<(number[] | null)[]> {
  const reducer = pixelSelection({ mode, rankChannel, components: assets[0].bands.length, pixels: assets[0].bands[0].length }, slices());
  for (const a of assets) await reducer.add(a);
  const { bands, valid } = await reducer.result();
  return Array.from(bands[0], (_, i) => (valid.every((v) => v[i]) ? bands.map((b) => b[i]) : null));
}

/** The straightforward per-pixel definition of each mode, to check the reducer against. */
function reference(mode: PixelSelection, assets: AssetTuple[], rankChannel = 1): (number[] | null)[] {
  const components = assets[0].bands.length;
  return Array.from(assets[0].bands[0], (_, i) => {
    const tuples = assets.filter((a) => a.valid.every((v) => v[i] === 1)).map((a) => a.bands.map((b) => b[i]));
    if (mode === "count") return [tuples.length];
    if (tuples.length === 0) return null;
    const column = (c: number) => tuples.map((t) => t[c]);
    const perComponent = (f: (xs: number[]) => number) => Array.from({ length: components }, (_, c) => f(column(c)));
    const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
    // The first tuple that no later one beats strictly: the earliest of the best.
    const best = (rank: number, better: (a: number, b: number) => boolean) => tuples.reduce((win, t) => (better(t[rank], win[rank]) ? t : win));
    switch (mode) {
      case "first":
        return tuples[0];
      case "highest":
        return best(rankChannel - 1, (a, b) => a > b);
      case "lowest":
        return best(rankChannel - 1, (a, b) => a < b);
      case "lastbandhigh":
        return best(components - 1, (a, b) => a > b).slice(0, -1);
      case "lastbandlow":
        return best(components - 1, (a, b) => a < b).slice(0, -1);
      case "mean":
        return perComponent(mean);
      case "median":
        return perComponent((xs) => {
          const s = [...xs].sort((a, b) => a - b);
          const h = s.length >> 1;
          return s.length % 2 ? s[h] : (s[h - 1] + s[h]) / 2;
        });
      case "stdev":
        return perComponent((xs) => Math.sqrt(mean(xs.map((x) => (x - mean(xs)) ** 2))));
    }
  });
}

/** Compares tuples at float32 precision (the reducer stores float32; the reference computes in float64). */
function expectTuples(actual: (number[] | null)[], expected: (number[] | null)[]) {
  expect(actual.map((t) => t === null)).toEqual(expected.map((t) => t === null));
  actual.forEach((t, i) => {
    if (t === null) return;
    expect(t.length).toBe(expected[i]!.length);
    t.forEach((v, c) => expect(Math.abs(v - expected[i]![c])).toBeLessThanOrEqual(1e-5 * Math.max(1, Math.abs(expected[i]![c]))));
  });
}

// Three assets of 2-component tuples over four pixels, in paint order.
const A = asset([[1, 10], [5, 1], [null, 3], [2, 2]]);
const B = asset([[3, 20], [5, 9], [7, 4], [2, null]]);
const C = asset([[2, 30], [4, 8], [null, null], [9, 1]]);

describe("pixel selection modes", () => {
  it("first: the earliest asset whose whole tuple is valid", async () => {
    expect(await reduce("first", [A, B, C])).toEqual([[1, 10], [5, 1], [7, 4], [2, 2]]);
  });

  it("highest on channel 1 keeps the winner's whole tuple; ties go to the earlier asset", async () => {
    // Pixel 1: A and B tie on 5, A wins (its 1, not B's 9). Pixel 3: B's tuple is invalid, so C's 9 wins.
    expect(await reduce("highest", [A, B, C])).toEqual([[3, 20], [5, 1], [7, 4], [9, 1]]);
    expect(await reduce("highest", [B, A, C])).toEqual([[3, 20], [5, 9], [7, 4], [9, 1]]);
  });

  it("lowest on channel 1 keeps the winner's whole tuple; ties go to the earlier asset", async () => {
    // Pixel 3: A's 2 and C's 9 take part (B's second component is invalid); A wins.
    expect(await reduce("lowest", [A, B, C])).toEqual([[1, 10], [4, 8], [7, 4], [2, 2]]);
  });

  it("rank_channel picks the component highest and lowest compare", async () => {
    expect(await reduce("highest", [A, B, C], 2)).toEqual([[2, 30], [5, 9], [7, 4], [2, 2]]);
    expect(await reduce("lowest", [A, B, C], 2)).toEqual([[1, 10], [5, 1], [7, 4], [9, 1]]);
  });

  it("an asset with one invalid component takes no part, even in highest on its other component", async () => {
    const big = asset([[100, null]]);
    const small = asset([[1, 1]]);
    expect(await reduce("highest", [small, big], 1)).toEqual([[1, 1]]);
    expect(await reduce("count", [small, big])).toEqual([[1]]);
    expect(await reduce("mean", [small, big])).toEqual([[1, 1]]);
  });

  it("lastbandhigh and lastbandlow decide on the last component and drop it", async () => {
    expect(await reduce("lastbandhigh", [A, B, C])).toEqual([[2], [5], [7], [2]]);
    expect(await reduce("lastbandlow", [A, B, C])).toEqual([[1], [5], [7], [9]]);
    // Ties on the last component: the earlier asset.
    expect(await reduce("lastbandhigh", [asset([[1, 5]]), asset([[2, 5]])])).toEqual([[1]]);
    expect(await reduce("lastbandlow", [asset([[2, 5]]), asset([[1, 5]])])).toEqual([[2]]);
  });

  it("mean, median and stdev per component over the assets taking part", async () => {
    expect(await reduce("mean", [A, B, C])).toEqual([[2, 20], [14 / 3, 6], [7, 4], [5.5, 1.5]].map((t) => t.map(Math.fround)));
    expect(await reduce("median", [A, B, C])).toEqual([[2, 20], [5, 8], [7, 4], [5.5, 1.5]]);
    const sd = (xs: number[]) => Math.sqrt(xs.reduce((s, x) => s + (x - xs.reduce((a, b) => a + b) / xs.length) ** 2, 0) / xs.length);
    expectTuples(await reduce("stdev", [A, B, C]), [[sd([1, 3, 2]), sd([10, 20, 30])], [sd([5, 5, 4]), sd([1, 9, 8])], [0, 0], [3.5, 0.5]]);
  });

  it("count: the assets taking part, valid everywhere, 0 included", async () => {
    expect(await reduce("count", [A, B, C])).toEqual([[3], [3], [1], [2]]);
    expect(await reduce("count", [asset([[null]])])).toEqual([[0]]);
  });

  it("leaves a pixel no asset fills invalid", async () => {
    for (const mode of PIXEL_SELECTIONS.filter((m) => m !== "count")) {
      expect((await reduce(mode, [asset([[null, 1], [1, 1]]), asset([[1, null], [2, 2]])]))[0]).toBeNull();
    }
  });
});

describe("first stops once every pixel is filled", () => {
  it("is done exactly when the last gap is filled, and later assets change nothing", async () => {
    const reducer = pixelSelection({ mode: "first", components: 1, pixels: 2 }, slices());
    expect(reducer.done).toBe(false);
    await reducer.add(asset([[1], [null]]));
    expect(reducer.done).toBe(false);
    await reducer.add(asset([[2], [3]]));
    expect(reducer.done).toBe(true);
    await reducer.add(asset([[4], [5]]));
    expect(Array.from((await reducer.result()).bands[0])).toEqual([1, 3]);
  });

  it("is never done for the modes that need every asset", async () => {
    for (const mode of PIXEL_SELECTIONS.filter((m) => m !== "first")) {
      const reducer = pixelSelection({ mode, components: 2, pixels: 1 }, slices());
      await reducer.add(asset([[1, 1]]));
      expect(reducer.done).toBe(false);
    }
  });
});

describe("pixel selection against the per-pixel reference", () => {
  it("agrees for every mode on random small tiles", async () => {
    const value = fc.oneof(fc.constant(null), fc.integer({ min: -3, max: 3 }), fc.float({ min: -1e6, max: 1e6, noNaN: true }));
    const tiles = fc
      .record({ components: fc.integer({ min: 2, max: 3 }), pixels: fc.integer({ min: 1, max: 5 }), assets: fc.integer({ min: 1, max: 5 }) })
      .chain(({ components, pixels, assets }) =>
        fc.record({
          assets: fc.array(fc.array(fc.array(value, { minLength: components, maxLength: components }), { minLength: pixels, maxLength: pixels }), { minLength: assets, maxLength: assets }),
          mode: fc.constantFrom(...PIXEL_SELECTIONS),
          rankChannel: fc.integer({ min: 1, max: components }),
        }),
      );
    await fc.assert(
      fc.asyncProperty(tiles, async ({ assets, mode, rankChannel }) => {
        const tuples = assets.map(asset);
        const rank = mode === "highest" || mode === "lowest" ? rankChannel : undefined;
        expectTuples(await reduce(mode, tuples, rank), reference(mode, tuples, rank));
      }),
      { numRuns: 500 },
    );
  });
});

describe("pixel selection settings", () => {
  const refused = (f: () => unknown) => {
    expect(f).toThrow(HttpError);
    try {
      f();
    } catch (e) {
      expect((e as HttpError).status).toBe(400);
    }
  };

  it("refuses a rank_channel outside the tuple, or on a mode that does not rank", () => {
    refused(() => pixelSelection({ mode: "highest", rankChannel: 0, components: 2, pixels: 1 }, slices()));
    refused(() => pixelSelection({ mode: "lowest", rankChannel: 3, components: 2, pixels: 1 }, slices()));
    refused(() => pixelSelection({ mode: "highest", rankChannel: 1.5, components: 2, pixels: 1 }, slices()));
    refused(() => pixelSelection({ mode: "mean", rankChannel: 1, components: 2, pixels: 1 }, slices()));
    expect(() => pixelSelection({ mode: "highest", rankChannel: 2, components: 2, pixels: 1 }, slices())).not.toThrow();
  });

  it("refuses lastbandhigh and lastbandlow on a one-component tuple, which would leave nothing", () => {
    refused(() => pixelSelection({ mode: "lastbandhigh", components: 1, pixels: 1 }, slices()));
    refused(() => pixelSelection({ mode: "lastbandlow", components: 1, pixels: 1 }, slices()));
  });
});

describe("the tuple before channels", () => {
  it("is the bands the expressions read, each once, sorted by band number", () => {
    expect(beforeChannelsTuple([4, 8, 4, 2, 8])).toEqual([2, 4, 8]);
    expect(beforeChannelsTuple([10, 9])).toEqual([9, 10]);
  });
});
