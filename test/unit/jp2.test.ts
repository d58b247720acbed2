// jp2 answers: the JP2 boxes as a reader walks them, the pixels as GDAL decodes them against the
// same request answered as tif (the same pipeline, lossless and without alpha, like jp2), lossy
// for colour and lossless for gray and bitonal, and the work estimate of the encode.

import { readdirSync, readFileSync } from "node:fs";
import { getPriority } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jp2File } from "../../regional/encode/jp2";
import { encodeJ2k } from "../../regional/encode/openjpeg";
import { LocalCatalog } from "../../regional/source/local";
import { WorkBudget } from "../../regional/runtime/work-budget";
import { ESTIMATE_HEADER, JP2_ENCODE_MULTIPLE } from "../../shared/cost";
import { infoJson } from "../../shared/iiif/info";
import { DECODER, type SourceInfo } from "../../shared/protocol";
import { boxes, difference, gdalDecodeJp2, jp2Header, rawPixels } from "../support/jp2";
import { fixtureDir, signedGet, startDecoder, type Decoder } from "./regional-helpers";

let fixtures: Awaited<ReturnType<typeof fixtureDir>>;
let decoder: Decoder;
let info: SourceInfo;
let version: string;

beforeAll(async () => {
  fixtures = await fixtureDir();
  decoder = await startDecoder(new LocalCatalog(fixtures.dir));
  info = (await (await signedGet(decoder, DECODER.info("deflate"))).json()) as SourceInfo;
  version = info.version;
});

afterAll(async () => {
  await decoder?.close();
  await fixtures?.remove();
});

async function answer(canonical: string, d = decoder): Promise<Response> {
  return signedGet(d, DECODER.image("deflate", canonical, version));
}

async function bytesOf(canonical: string): Promise<Buffer> {
  const res = await answer(canonical);
  expect(res.status, canonical).toBe(200);
  return Buffer.from(await res.arrayBuffer());
}

describe("the JP2 file", () => {
  it("is the signature, ftyp jp2, a jp2h with ihdr and colr, then the codestream", async () => {
    const res = await answer("150,250,200,100/max/0/default.jp2");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/jp2");
    const bytes = Buffer.from(await res.arrayBuffer());
    expect(bytes.subarray(0, 12).toString("hex")).toBe("0000000c6a5020200d0a870a");
    const top = boxes(bytes);
    expect(top.map((b) => b.type)).toEqual(["jP  ", "ftyp", "jp2h", "jp2c"]);
    // Brand "jp2 ", minor version 0, compatible with "jp2 ".
    expect(top[1].contents.toString("hex")).toBe("6a703220" + "00000000" + "6a703220");
    expect(jp2Header(bytes)).toEqual({
      boxes: ["ihdr", "colr"],
      width: 200,
      height: 100,
      components: 3,
      bitsPerComponent: 8,
      compression: 7,
      method: 1,
      colourspace: 16, // sRGB
    });
    expect(top[3].contents.subarray(0, 4).toString("hex")).toBe("ff4fff51");
  });

  it("writes every box's length and field at the byte Annex I puts it", () => {
    const codestream = Uint8Array.from([0xff, 0x4f, 0xff, 0x51, 0xff, 0xd9]);
    const file = jp2File([codestream], { width: 0x0102, height: 0x0304, components: 1 });
    expect(file.toString("hex")).toBe(
      ["0000000c", "6a502020", "0d0a870a"].join("") + // signature
        ["00000014", "66747970", "6a703220", "00000000", "6a703220"].join("") + // ftyp
        ["0000002d", "6a703268"].join("") + // jp2h: 8 + 22 + 15
        ["00000016", "69686472", "00000304", "00000102", "0001", "07", "07", "00", "00"].join("") + // ihdr
        ["0000000f", "636f6c72", "01", "00", "00", "00000011"].join("") + // colr: greyscale
        ["0000000e", "6a703263", "ff4fff51ffd9"].join(""), // jp2c
    );
  });

  it("states one greyscale component for gray and bitonal, with the size after rotation", async () => {
    for (const quality of ["gray", "bitonal"]) {
      const header = jp2Header(await bytesOf(`0,0,300,200/150,/90/${quality}.jp2`));
      expect(header, quality).toMatchObject({ width: 100, height: 150, components: 1, colourspace: 17 });
    }
  });
});

describe("info.json", () => {
  it("lists jp2: among 3.0's extraFormats, in 2.1's profile formats", () => {
    expect(infoJson(3, info, "https://iiif.example/deflate", {}, [])).toMatchObject({ extraFormats: expect.arrayContaining(["jp2"]) });
    const [, profile] = infoJson(2, info, "https://iiif.example/deflate", {}, []).profile as [string, { formats: string[] }];
    expect(profile.formats).toContain("jp2");
  });
});

describe("the pixels, decoded by GDAL, against the same request as tif", () => {
  const decoded = async (canonical: string) => ({
    jp2: await gdalDecodeJp2(await bytesOf(`${canonical}.jp2`)),
    tif: await rawPixels(await bytesOf(`${canonical}.tif`)),
  });

  // The 9/7 wavelet at a fifteenth of the raw size blurs the pattern's square edges a little:
  // mean |Δ| under 1 of 255, no sample off by more than 16. A 3-row strip has fewer bytes to
  // spend than its headers take, and only one wavelet level: mean under 4, largest 64.
  const good = { mean: 1, max: 16 };
  for (const [canonical, tolerance] of [
    ["150,250,200,100/max/0/default", good],
    ["full/300,/0/color", good],
    ["0,0,512,512/256,/45/default", good],
    ["full/1,1/0/default", good],
    ["full/1000,3/0/default", { mean: 4, max: 64 }],
    // Tiled (1024² tiles; ^ written %5E as a client sends it): three columns, the last 52 wide, and a last row 6 high, narrower
    // than the 32 pixels five wavelet levels need, coded at an offset of its own grid.
    ["full/%5E2100,1030/0/default", good],
  ] as const) {
    it(`lossy colour: ${canonical}`, async () => {
      const { jp2, tif } = await decoded(canonical);
      expect(jp2.channels).toBe(3);
      const { mean, max } = difference(jp2, tif);
      expect(mean, canonical).toBeLessThan(tolerance.mean);
      expect(max, canonical).toBeLessThanOrEqual(tolerance.max);
    });
  }

  for (const canonical of ["0,0,300,200/150,/90/gray", "full/250,/0/bitonal", "100,100,300,300/200,/22.5/gray", "full/300,/!180/bitonal", "full/%5E1030,2100/0/gray"]) {
    it(`lossless: ${canonical} is exactly the tif's pixels`, async () => {
      const { jp2, tif } = await decoded(canonical);
      expect(jp2.channels).toBe(1);
      expect(difference(jp2, tif)).toEqual({ mean: 0, max: 0 });
    });
  }

  it("the comparison can fail: a lossy answer is not exact, another region is far off", async () => {
    const { jp2, tif } = await decoded("150,250,200,100/max/0/default");
    expect(difference(jp2, tif).max).toBeGreaterThan(0);
    const elsewhere = await rawPixels(await bytesOf("170,250,200,100/max/0/default.tif"));
    expect(difference(jp2, elsewhere).mean).toBeGreaterThan(10);
  });
});

/** The nice value of each thread of this process named `name` (Linux: the nice value is per thread). */
function threadNice(name: string): number[] {
  return readdirSync("/proc/self/task").flatMap((tid) => {
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, "utf8");
    if (readFileSync(`/proc/self/task/${tid}/comm`, "utf8").trim() !== name) return [];
    return [Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[16])]; // field 19, after pid and (comm)
  });
}

describe("the encode's priority", () => {
  it("runs on a thread 10 below the event loop's priority, so a jp2 takes the CPU viewers' tiles leave", async () => {
    await bytesOf("full/64,/0/default.jp2"); // the thread lives on for a while after an encode
    // Each: an encoder started by a render-pool thread (itself at +10) is not lowered twice.
    const nice = threadNice("openjpeg");
    expect(nice.length).toBeGreaterThan(0);
    expect(new Set(nice)).toEqual(new Set([getPriority() + 10]));
  });
});

describe("the encode's memory", () => {
  it("is counted in the work estimate: the raw output JP2_ENCODE_MULTIPLE times, not once", async () => {
    const estimate = async (canonical: string) => Number((await answer(canonical)).headers.get(ESTIMATE_HEADER));
    const raw = 500 * 500 * 3;
    expect(await estimate("full/500,/0/default.jp2")).toBe((await estimate("full/500,/0/default.png")) + (JP2_ENCODE_MULTIPLE - 1) * raw);
  });

  it("a jp2 beyond the work budget is 413 where the same png is served", async () => {
    const png = Number((await answer("full/500,/0/default.png")).headers.get(ESTIMATE_HEADER));
    const d = await startDecoder(new LocalCatalog(fixtures.dir), 3, { budget: new WorkBudget(png + 1024 * 1024) });
    try {
      expect((await answer("full/500,/0/default.png", d)).status).toBe(200);
      const res = await answer("full/500,/0/default.jp2", d);
      expect(res.status).toBe(413);
      expect(((await res.json()) as { message: string }).message).toMatch(/work budget/);
    } finally {
      await d.close();
    }
  });

  it("a failed encode is an error saying what could not be encoded, and the next encode still works", async () => {
    const input = { pixels: new Uint8Array(0), width: 0, height: 0, components: 3, lossless: false } as const;
    await expect(encodeJ2k(input)).rejects.toThrow(/^OpenJPEG could not encode a 0x0 image/);
    const [codestream] = await encodeJ2k({ ...input, pixels: new Uint8Array(4 * 4 * 3), width: 4, height: 4 });
    expect(Buffer.from(codestream.subarray(0, 4)).toString("hex")).toBe("ff4fff51");
  });

  it("an incompressible image coded losslessly stays within the 1.5× codestream the multiple assumes", async () => {
    const [width, height] = [300, 200];
    const pixels = new Uint8Array(width * height * 3);
    let state = 1;
    for (let i = 0; i < pixels.length; i++) pixels[i] = (state = (state * 1_103_515_245 + 12_345) >>> 0) >>> 24;
    const [codestream] = await encodeJ2k({ pixels, width, height, components: 3, lossless: true });
    expect(codestream.length).toBeGreaterThan(pixels.length); // noise: no gain
    expect(codestream.length).toBeLessThanOrEqual(1.5 * pixels.length);
    // Lossless really is: GDAL gives back every sample.
    const back = await gdalDecodeJp2(jp2File([codestream], { width, height, components: 3 }));
    expect(difference(back, { data: Buffer.from(pixels), width, height, channels: 3 })).toEqual({ mean: 0, max: 0 });
  });
});
