// The shared cost estimate (both tiers' formula), the decoder's figure of JPEG blocks against
// what their decode holds, and the decoder's memory-limit detection.
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir, totalmem } from "node:os";
import path from "node:path";
import { execFileSync } from "node:child_process";
import jpegTurbo from "@julusian/jpeg-turbo";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { LocalCatalog } from "../../regional/source/local";
import { classify, ESTIMATE_HEADER, estimatePeakBytes, estimateRequest, exactBands, maxRenderArea, STRIP_MIN_PIXELS } from "../../shared/cost";
import { DECODER, type SourceInfo } from "../../shared/protocol";
import { imageWork, WORK_PER_MEGASAMPLE, type Codec } from "../../shared/work";
import { resolveSize } from "../../shared/iiif/resolve";
import { detectMemoryLimit } from "../../regional/runtime/heartbeat";
import { REFERENCE_PNG, signedGet, startDecoder, type Decoder } from "./regional-helpers";

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

  it("derives the largest area a whole image renders in within the budget's bytes", () => {
    const big = { levels: [{ width: 20000, height: 20000 }, { width: 10000, height: 10000 }, { width: 5000, height: 5000 }], tileWidth: 512, tileHeight: 512 };
    const region = { x: 0, y: 0, w: 20000, h: 20000 };
    const ceiling = { bytes: 512 * 1024 * 1024, work: Infinity };
    const cost = (maxArea: number) => {
      const size = resolveSize({ kind: "max", upscale: false }, region, { width: 20000, height: 20000, maxArea });
      return estimatePeakBytes({ ...big, channels: 3, region, ...size, degrees: 0 });
    };
    const area = maxRenderArea(big, 3, "jpeg", ceiling);
    expect(cost(area)).toBeLessThanOrEqual(ceiling.bytes);
    expect(cost(area + 1)).toBeGreaterThan(ceiling.bytes);
    expect(area).toBeGreaterThan(6000 * 6000); // read from the 10000² overview, in bands
  });

  it("declares a finite area for an image that renders whole: the largest upscale the bytes and the work allow", () => {
    const region = { x: 0, y: 0, w: 4000, h: 4000 };
    const at = (area: number) => {
      const size = resolveSize({ kind: "max", upscale: true }, region, { width: 4000, height: 4000, maxArea: area });
      const shape = { ...pyramid, channels: 3, region, ...size, degrees: 0 };
      return { bytes: estimatePeakBytes(shape), work: imageWork({ ...shape, codec: "jpeg" }) };
    };
    const byBytes = maxRenderArea(pyramid, 3, "jpeg", { bytes: 512 * 1024 * 1024, work: Infinity });
    expect(byBytes).toBeGreaterThan(4000 * 4000); // 4000² at full size is 192 MB: upscaled within 512 MiB
    expect(at(byBytes).bytes).toBeLessThanOrEqual(512 * 1024 * 1024);
    expect(at(byBytes + 10_000).bytes).toBeGreaterThan(512 * 1024 * 1024);
    // A work limit tighter than the bytes: the area follows it, and never exceeds either.
    const limit = at(4000 * 4000).work * 1.5;
    const byWork = maxRenderArea(pyramid, 3, "jpeg", { bytes: 512 * 1024 * 1024, work: limit });
    expect(byWork).toBeLessThan(byBytes);
    expect(at(byWork).work).toBeLessThanOrEqual(limit);
    expect(at(byWork + 10_000).work).toBeGreaterThan(limit);
  });

  it("declares for a source that renders whole at no size (no overviews) the area a full-resolution region may have", () => {
    const flat = { levels: [{ width: 65536, height: 65536 }], tileWidth: 512, tileHeight: 512 };
    const area = maxRenderArea(flat, 3, "deflate", { bytes: 512 * 1024 * 1024, work: 30_000 });
    expect(area).toBeGreaterThan(2048 * 2048); // a viewer's tiles, and more, pass the edge
    expect(area).toBeLessThan(65536 * 65536);
    // A thumbnail of the whole is then refused for its work, not its size: every block decoded.
    const thumbnail = imageWork({ ...flat, channels: 3, codec: "deflate", region: { x: 0, y: 0, w: 65536, h: 65536 }, width: 256, height: 256, degrees: 0, format: "jpg" });
    expect(thumbnail).toBeGreaterThan(30_000);
  });

  it("classifies at the thresholds: at or above either is a full", () => {
    const thresholds = { bytes: 33554432, work: 250 };
    expect(classify({ bytes: 33554431, work: 249 }, thresholds)).toBe("tile");
    expect(classify({ bytes: 33554432, work: 0 }, thresholds)).toBe("full");
    expect(classify({ bytes: 0, work: 250 }, thresholds)).toBe("full");
  });
});

describe("JPEG blocks, decoded in whole MCUs", () => {
  // GDAL's JPEG strips of the 1000 px wide pattern, 48 rows each (the last 40), YCbCr 4:2:0:
  // each strip decodes in 16 px MCUs, 1008 wide. TurboJPEG's buffer size for a block is what its
  // MCUs hold, 2 bytes a coefficient (3 a pixel in 4:2:0), and 2048 bytes of headers.
  let dir: string;
  let d: Decoder;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "tessera-mcu-"));
    const options = ["-co", "TILED=NO", "-co", "BLOCKYSIZE=48", "-co", "COMPRESS=JPEG", "-co", "PHOTOMETRIC=YCBCR"];
    execFileSync("gdal_translate", ["-q", ...options, REFERENCE_PNG, path.join(dir, "strips.tif")], { stdio: "pipe" });
    d = await startDecoder(new LocalCatalog(dir));
  });
  afterAll(async () => {
    await d?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it.each([
    { strip: "the first", region: "0,0,1000,48", rows: 48 },
    { strip: "the last, shorter", region: "0,960,1000,40", rows: 40 },
  ])("the decoder's estimate of a read of $strip strip covers the strip in whole MCUs besides the window, the output and the encoder's input", async ({ region, rows }) => {
    const info = (await (await signedGet(d, DECODER.info("strips"))).json()) as SourceInfo;
    expect(info).toMatchObject({ tileWidth: 1000, tileHeight: 48, codec: "jpeg" });
    const res = await signedGet(d, DECODER.image("strips", `${region}/max/0/default.jpg`, info.version));
    expect(res.status).toBe(200);
    const inMcus = jpegTurbo.bufferSize({ width: 1000, height: rows, subsampling: jpegTurbo.SAMP_420 }) - 2048;
    expect(inMcus).toBe(1008 * 48 * 3);
    const window = 1000 * rows * 3;
    expect(Number(res.headers.get(ESTIMATE_HEADER))).toBeGreaterThanOrEqual(inMcus + 3 * window);
  });

  it("the edge, which knows no subsampling (nor, before a decoder said so, the codec), counts MCUs of 32 px, never less than the decoder", () => {
    const strips = { levels: [{ width: 1000, height: 1000 }], tileWidth: 1000, tileHeight: 48 };
    const req = { region: { x: 0, y: 0, w: 1000, h: 48 }, width: 1000, height: 48, degrees: 0 };
    const estimate = (codec?: Codec) => estimateRequest({ ...strips, codec }, { ...req, format: "jpg" } as never, 3);
    expect(estimate("jpeg")).toBe((2 * 1024 * 64 + 2 * 1000 * 48) * 3);
    expect(estimate(undefined)).toBe(estimate("jpeg"));
    expect(estimate("deflate")).toBe((2 * 1000 * 48 + 2 * 1000 * 48) * 3);
    // Tiles of a multiple of 32 px (GDAL's COGs: 256, 512) have no partial MCU: nothing changes.
    const cog = { ...pyramid, codec: "jpeg" as const };
    expect(estimatePeakBytes({ ...cog, channels: 3, region: full, width: 4000, height: 4000, degrees: 0 })).toBe(192_000_000);
  });
});

describe("work", () => {
  const request = (over: Partial<Parameters<typeof imageWork>[0]> = {}) =>
    imageWork({ ...pyramid, channels: 3, codec: "jpeg", region: full, width: 1000, height: 1000, degrees: 0, format: "jpg", ...over });

  it("counts every stored block a read decodes, at the level it reads", () => {
    // One zoom down reads the 2000² overview (64 blocks of 256²), not the full level's 256.
    const down = request({ width: 2000, height: 2000 });
    const native = request({ width: 4000, height: 4000 });
    expect(native - down).toBeGreaterThan((4000 * 4000 - 2000 * 2000) * 3 * 1e-6 * WORK_PER_MEGASAMPLE.decode.jpeg);
    // A source without overviews decodes the whole full level for a thumbnail.
    const flat = { levels: [{ width: 65536, height: 65536 }], tileWidth: 512, tileHeight: 512 };
    const thumbnail = imageWork({ ...flat, channels: 3, codec: "jpeg", region: { x: 0, y: 0, w: 65536, h: 65536 }, width: 256, height: 256, degrees: 0, format: "jpg" });
    expect(thumbnail).toBeGreaterThan(65536 * 65536 * 3 * 1e-6 * WORK_PER_MEGASAMPLE.decode.jpeg);
  });

  it("costs the codec read, the rotation and the format encoded", () => {
    expect(request({ codec: "lzw" })).toBeGreaterThan(request({ codec: "none" }));
    expect(request({ degrees: 17 })).toBeGreaterThan(request());
    expect(request({ mirror: true })).toBeGreaterThan(request());
    expect(request({ format: "png" })).toBeGreaterThan(request({ format: "jpg" }));
    expect(request({ format: "jp2" })).toBeGreaterThan(request({ format: "png" }));
    // An unknown codec (metadata from before decoders said it) is costed as the dearest known.
    expect(request({ codec: undefined })).toBeGreaterThanOrEqual(request({ codec: "lzw" }));
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
