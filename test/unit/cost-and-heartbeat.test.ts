// The shared cost estimate (both tiers' formula) and the decoder's memory-limit detection.
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir, totalmem } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { classify, estimatePeakBytes, exactBands, maxRenderArea, STRIP_MIN_PIXELS } from "../../shared/cost";
import { resolveSize } from "../../shared/iiif/resolve";
import { detectMemoryLimit } from "../../regional/runtime/heartbeat";

const pyramid = {
  levels: [
    { width: 4000, height: 4000 },
    { width: 2000, height: 2000 },
    { width: 1000, height: 1000 },
  ],
  tileWidth: 256,
  tileHeight: 256,
};
const full = { x: 0, y: 0, w: 4000, h: 4000 };

describe("estimatePeakBytes", () => {
  it("counts decode, scale and encode buffers at the level the decoder reads", () => {
    // max: the full level, 16M px read (counted twice), scaled and encoded, 3 channels.
    expect(estimatePeakBytes({ ...pyramid, channels: 3, region: full, width: 4000, height: 4000, degrees: 0 })).toBe(192_000_000);
    // 2000 px wide: read from the 2000 px overview, not the full level.
    expect(estimatePeakBytes({ ...pyramid, channels: 3, region: full, width: 2000, height: 2000, degrees: 0 })).toBe(48_000_000);
  });

  it("widens the read window to whole stored tiles, and adds the rotated buffer", () => {
    // A 10×10 region inside one 256 px tile decodes the whole tile.
    const tile = estimatePeakBytes({ ...pyramid, channels: 3, region: { x: 5, y: 5, w: 10, h: 10 }, width: 10, height: 10, degrees: 0 });
    expect(tile).toBe((2 * 256 * 256 + 100 + 100) * 3);
    // 90°: a rotated copy of the 100×50 output, and the encoder works on that copy.
    const rotated = estimatePeakBytes({ ...pyramid, channels: 1, region: { x: 0, y: 0, w: 256, h: 256 }, width: 100, height: 50, degrees: 90 });
    expect(rotated).toBe(2 * 256 * 256 + 5000 + 5000 + 5000);
  });

  it("counts a large window in bands: one band (exact, or with every band's rows reduced across first), then as before", () => {
    const big = { levels: [{ width: 20000, height: 20000 }, { width: 10000, height: 10000 }], tileWidth: 512, tileHeight: 512 };
    const region = { x: 0, y: 0, w: 20000, h: 20000 };
    const estimate = (side: number) => estimatePeakBytes({ ...big, channels: 3, region, width: side, height: side, degrees: 0 });
    expect(10000 * 10000).toBeGreaterThan(STRIP_MIN_PIXELS);
    // 8000² from the 10000² overview: every 5 rows make 4, so exact bands of 515 rows (103
    // periods) with 20 rows of halo each side: 555 rows read (decoded and copied) across the
    // level, resized to 444 rows of 8000.
    expect(exactBands(10000, 10000, 8000, 8000, 512)).toEqual({ rows: 515, outRows: 412, halo: 20, period: 5, outPeriod: 4 });
    expect(estimate(8000)).toBe((2 * 10000 * 555 + 8000 * 444 + 2 * 8000 * 8000) * 3);
    // 7001²: 10000 and 7001 share no factor, so no exact band: one 512-row block row, reduced
    // to 7001 wide, and every band's reduced rows, 7001 × 10000.
    expect(exactBands(10000, 10000, 7001, 7001, 512)).toBeUndefined();
    expect(estimate(7001)).toBe((2 * 10000 * 512 + 7001 * 512 + 7001 * 10000 + 2 * 7001 * 7001) * 3);
  });

  it("derives the largest area a whole image renders in, none when it renders at full size", () => {
    const big = { levels: [{ width: 20000, height: 20000 }, { width: 10000, height: 10000 }, { width: 5000, height: 5000 }], tileWidth: 512, tileHeight: 512 };
    const region = { x: 0, y: 0, w: 20000, h: 20000 };
    const ceiling = 512 * 1024 * 1024;
    const cost = (maxArea: number) => {
      const size = resolveSize({ kind: "max", upscale: false }, region, { width: 20000, height: 20000, maxArea });
      return estimatePeakBytes({ ...big, channels: 3, region, ...size, degrees: 0 });
    };
    const area = maxRenderArea(big, 3, ceiling)!;
    expect(cost(area)).toBeLessThanOrEqual(ceiling);
    expect(cost(area + 1)).toBeGreaterThan(ceiling);
    expect(area).toBeGreaterThan(6000 * 6000); // read from the 10000² overview, in bands
    expect(maxRenderArea(pyramid, 3, ceiling)).toBeUndefined(); // 4000² at full size: 192 MB
  });

  it("classifies at the threshold: at or above it is a full", () => {
    expect(classify(33554431, 33554432)).toBe("tile");
    expect(classify(33554432, 33554432)).toBe("full");
  });
});

describe("detectMemoryLimit", () => {
  let root: string;
  afterEach(() => rm(root, { recursive: true, force: true }));
  // Fake cgroup trees (the real one is the machine's): v2 first, then v1, then total memory.
  async function cgroup(files: Record<string, string>): Promise<string> {
    root = await mkdtemp(path.join(tmpdir(), "tessera-cgroup-"));
    for (const [name, text] of Object.entries(files)) {
      await mkdir(path.dirname(path.join(root, name)), { recursive: true });
      await writeFile(path.join(root, name), text);
    }
    return root;
  }

  it("reads cgroup v2 memory.max", async () => {
    expect(await detectMemoryLimit(await cgroup({ "memory.max": "2147483648\n" }))).toBe(2147483648);
  });
  it("falls back to total memory when v2 says max", async () => {
    expect(await detectMemoryLimit(await cgroup({ "memory.max": "max\n" }))).toBe(totalmem());
  });
  it("reads cgroup v1 when there is no v2 file, ignoring v1's 'unlimited'", async () => {
    expect(await detectMemoryLimit(await cgroup({ "memory/memory.limit_in_bytes": "1073741824\n" }))).toBe(1073741824);
    await rm(root, { recursive: true, force: true });
    expect(await detectMemoryLimit(await cgroup({ "memory/memory.limit_in_bytes": "9223372036854771712\n" }))).toBe(totalmem());
  });
});
