// Large renders read a band of block rows at a time, so their memory follows the output, not
// the source: pixels against a whole-window render, the work memory they take, and the output
// limit a decoder derives from its work budget (info's maxArea, where `max` resolves).
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Cog } from "../../regional/cog/cog";
import { render } from "../../regional/render/render";
import { LocalCatalog } from "../../regional/source/local";
import { WorkBudget } from "../../regional/runtime/work-budget";
import { DECODER, type SourceInfo } from "../../shared/protocol";
import { patternCog } from "../support/pattern-cog";
import { metricValue, signedGet, startDecoder, type Decoder } from "./regional-helpers";

const MIB = 1024 * 1024;
const SIDE = 6000;
/** A full through the server runs on the render pool, whose first thread starts with it (a second or more). */
const FIRST_POOL_RENDER_MS = 30_000;
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "tessera-strips-"));
  patternCog(path.join(dir, "big.tif"), SIDE);
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const catalog = () => new LocalCatalog(dir);
const open = async (budget: WorkBudget) => Cog.open(await catalog().open("big", undefined), { budget });

describe("a render of a window larger than the work budget", () => {
  // Windows just over the 16 Mpx where bands start. Exact bands (heights in a ratio of small
  // integers: 4:3, 42:29, the second from row 300) give the whole-window resize's very pixels;
  // rows reduced across first (unscaled, read straight into the output rows; 4200:2999, whose
  // period is the whole window) differ from it within ±1 almost everywhere.
  it.each([
    { region: { x: 0, y: 0, w: 5000, h: 4000 }, width: 4000, height: 3000, exact: true },
    { region: { x: 100, y: 300, w: 4500, h: 4200 }, width: 3600, height: 2900, exact: true },
    { region: { x: 0, y: 0, w: 4200, h: 4200 }, width: 4200, height: 4200, exact: false },
    { region: { x: 0, y: 0, w: 4200, h: 4200 }, width: 3000, height: 2999, exact: false },
  ])("reads $region.w×$region.h in bands to $width×$height (exact: $exact)", async ({ region, exact, ...size }) => {
    // The reference: the window read whole and resized in one libvips pass.
    const roomy = await open(new WorkBudget(2048 * MIB));
    const window = await roomy.readWindow(0, region);
    const raw = { width: window.width, height: window.height, channels: window.channels };
    const expected = await sharp(window.data, { raw }).resize(size.width, size.height, { fit: "fill", kernel: "lanczos3" }).raw().toBuffer();

    // 160 MiB cannot hold the window read whole (~200 MB of blocks and copies), only bands.
    const budget = new WorkBudget(160 * MIB);
    const cog = await open(budget);
    const req = { region, ...size, mirror: false, degrees: 0, quality: "default", format: "png" } as const;
    const png = await render(cog, req);
    const actual = await sharp(png.body).raw().toBuffer();

    expect(actual.length).toBe(expected.length);
    let sum = 0;
    let beyondOne = 0;
    for (let i = 0; i < actual.length; i++) {
      const d = Math.abs(actual[i] - expected[i]);
      sum += d;
      if (d > 1) beyondOne++;
    }
    if (exact) expect(sum).toBe(0);
    // Reduced across first, the passes' order differs: rounding and clipping of the kernel's
    // overshoot at the pattern's hard edges differ in a few samples only.
    expect(sum / actual.length).toBeLessThan(0.05);
    expect(beyondOne / actual.length).toBeLessThan(1e-4);
    // Each band reserved its own read: a row of 512² blocks or two (decoded and stored) and the band.
    expect(budget.peakBytes).toBeLessThan(64 * MIB);
    await Promise.all([roomy.close(), cog.close()]);
  });
});

describe("full/max of a 6000² RGB JPEG COG", () => {
  let d: Decoder;
  afterAll(() => d?.close());

  async function get(d: Decoder, canonical: string) {
    const info = (await (await signedGet(d, DECODER.info("big"))).json()) as SourceInfo;
    const res = await signedGet(d, DECODER.image("big", canonical, info.version));
    return { info, res };
  }

  it("is the whole image under the default 512 MiB budget, its work memory bounded by its output", async () => {
    d = await startDecoder(catalog(), 3, { budget: new WorkBudget() });
    const { info, res } = await get(d, "full/max/0/default.jpg");
    expect(info.maxArea).toBeGreaterThanOrEqual(SIDE * SIDE); // it renders whole, upscaled up to the declared area
    expect(res.status, await res.clone().text()).toBe(200);
    expect(await sharp(Buffer.from(await res.arrayBuffer())).metadata()).toMatchObject({ width: SIDE, height: SIDE });
    // Three output rasters (the rows reduced, the sized image, the encoder's input) and one
    // band: below what the whole 6000² window read twice took (432 MB).
    const outputRaw = SIDE * SIDE * 3;
    expect(await metricValue(d, "tessera_decoder_work_budget_peak_bytes")).toBeLessThanOrEqual(3 * outputRaw + 64 * MIB);
    await d.close();
  }, FIRST_POOL_RENDER_MS);

  it("is the declared maxArea under a budget too small for the whole image; a larger size is 413", async () => {
    const budget = new WorkBudget(128 * MIB);
    d = await startDecoder(catalog(), 3, { budget });
    const { info, res } = await get(d, "full/max/0/default.jpg");
    expect(res.status, await res.clone().text()).toBe(200);
    const { width, height } = await sharp(Buffer.from(await res.arrayBuffer())).metadata();
    const maxArea = info.maxArea!;
    // About 3,050² by the cost model (read from the full level, in bands), a full within it
    // fits the 128 MiB.
    expect(maxArea).toBeGreaterThan(3000 * 3000);
    expect(maxArea).toBeLessThan(SIDE * SIDE);
    expect(width).toBe(height);
    expect(width! * height!).toBeLessThanOrEqual(maxArea);
    expect((width! + 1) * (height! + 1)).toBeGreaterThan(maxArea);
    expect(budget.peakBytes).toBeLessThanOrEqual(128 * MIB);
    // The edge refuses it with 400 (it declares the limit); the decoder's own budget with 413.
    const beyond = (await get(d, `full/${width! + 1},/0/default.jpg`)).res;
    expect(beyond.status).toBe(413);
  }, FIRST_POOL_RENDER_MS);
});
