// IIIF Image API conformance through the whole local stack (Worker + DO in workerd, the real
// decoder over local COGs), one test per feature of the compliance tables, in 3.0 and 2.1.
// Pixels are compared with the reference PNG transformed independently by sharp.
import { copyFile, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT } from "../../infra/root";
import { startStack, type Stack } from "../../infra/local/stack";
import { gdalDecodeJp2, jp2Header } from "../support/jp2";
import { meanAbsDiff, reference, TEST_PATTERN_PNG } from "../support/pixels";

// The lossless sample: only resampling and lossy output formats differ from the reference.
const ID = "test-pattern-deflate";
const LOSSLESS = 2;
const LOSSY = 6;
let stack: Stack;
let dataDir: string;

beforeAll(async () => {
  dataDir = await mkdtemp(`${tmpdir()}/tessera-conformance-`);
  await copyFile(`${ROOT}samples/${ID}.tif`, `${dataDir}/${ID}.tif`);
  await copyFile(`${ROOT}samples/test-pattern.tif`, `${dataDir}/changing.tif`);
  stack = await startStack({
    decoderEnv: { TESSERA_DATA_DIR: dataDir },
    vars: { MAX_WIDTH: "2000", INFO_MAX_AGE: "1", ERROR_MAX_AGE: "30" },
  });
});
afterAll(async () => {
  await stack?.stop();
  await rm(dataDir, { recursive: true, force: true });
});

const get = (path: string, init?: RequestInit) => fetch(stack.url + path, init);
async function image(path: string): Promise<Buffer> {
  const res = await get(path);
  expect(res.status, `${path}: ${res.status === 200 ? "" : await res.clone().text()}`).toBe(200);
  return Buffer.from(await res.arrayBuffer());
}
const dims = async (bytes: Buffer) => {
  const m = await sharp(bytes).metadata();
  return [m.width, m.height];
};
const full = { x: 0, y: 0, w: 1000, h: 1000 };
const box = { x: 100, y: 100, w: 100, h: 100 };

describe.each([3, 2] as const)("Image API %i.x", (v) => {
  const base = `/iiif/${v}/${ID}`;
  const maxSize = v === 3 ? "max" : "full";

  describe("region", () => {
    it("regionByPx: 100,100,100,100 is the known square of the pattern", async () => {
      const bytes = await image(`${base}/100,100,100,100/${maxSize}/0/default.png`);
      expect(await dims(bytes)).toEqual([100, 100]);
      const { data } = await sharp(bytes).extract({ left: 50, top: 50, width: 1, height: 1 }).raw().toBuffer({ resolveWithObject: true });
      expect([...data.subarray(0, 3)]).toEqual([171, 43, 102]); // the PNG's pixel at (150,150)
      expect(await meanAbsDiff(bytes, reference(box))).toBeLessThan(LOSSLESS);
    });
    it("regionByPct: pct:10,10,10,10 is the same square", async () => {
      const bytes = await image(`${base}/pct:10,10,10,10/${maxSize}/0/default.png`);
      expect(await meanAbsDiff(bytes, reference(box))).toBeLessThan(LOSSLESS);
    });
    it("regionSquare on a square image is the whole image", async () => {
      const bytes = await image(`${base}/square/200,/0/default.png`);
      expect(await meanAbsDiff(bytes, reference(full, 200, 200))).toBeLessThan(LOSSLESS);
    });
    it("a region reaching past the edge is cropped to the image", async () => {
      const bytes = await image(`${base}/900,900,500,500/${maxSize}/0/default.png`);
      expect(await meanAbsDiff(bytes, reference({ x: 900, y: 900, w: 100, h: 100 }))).toBeLessThan(LOSSLESS);
    });
    it("a region wholly outside the image is 400", async () => {
      expect((await get(`${base}/1000,0,10,10/${maxSize}/0/default.jpg`)).status).toBe(400);
    });
  });

  describe("size", () => {
    for (const [name, size, w, h] of [
      ["sizeByW", "250,", 250, 250],
      ["sizeByH", ",250", 250, 250],
      ["sizeByPct", "pct:25", 250, 250],
      ["sizeByConfinedWh", "!250,125", 125, 125],
      ["sizeByWh (distorting)", "250,125", 250, 125],
    ] as const) {
      it(`${name}: ${size} → ${w}x${h}`, async () => {
        const bytes = await image(`${base}/full/${size}/0/default.png`);
        expect(await dims(bytes)).toEqual([w, h]);
        expect(await meanAbsDiff(bytes, reference(full, w, h))).toBeLessThan(LOSSY);
      });
    }
    it("upscaling: ^ in 3.0, implicit in 2.1", async () => {
      const size = v === 3 ? "^200," : "200,";
      const bytes = await image(`${base}/100,100,100,100/${size}/0/default.png`);
      expect(await meanAbsDiff(bytes, reference(box, 200, 200))).toBeLessThan(LOSSY);
      if (v === 3) expect((await get(`${base}/100,100,100,100/200,/0/default.png`)).status).toBe(400);
    });
    it("a size that rounds to zero is 400", async () => {
      expect((await get(`${base}/0,0,10,10/pct:1/0/default.jpg`)).status).toBe(400);
    });
    it("maxWidth is declared and enforced", async () => {
      const size = v === 3 ? "^3000," : "3000,";
      expect((await get(`${base}/full/${size}/0/default.jpg`)).status).toBe(400);
    });
  });

  describe("rotation", () => {
    for (const rotation of ["90", "180", "270", "!0", "!90"]) {
      it(`${rotation.startsWith("!") ? "mirroring" : "rotationBy90s"}: ${rotation}`, async () => {
        const bytes = await image(`${base}/0,0,500,250/200,100/${rotation}/default.png`);
        let ref = reference({ x: 0, y: 0, w: 500, h: 250 }, 200, 100);
        ref = sharp(await ref.png().toBuffer());
        if (rotation.startsWith("!")) ref = ref.flop();
        const degrees = Number(rotation.replace("!", ""));
        if (degrees) ref = sharp(await ref.png().toBuffer()).rotate(degrees);
        expect(await meanAbsDiff(bytes, ref)).toBeLessThan(LOSSLESS);
      });
    }
    it("a tiny rotation is served, its canonical form a plain decimal", async () => {
      const res = await get(`${base}/full/100,100/0.0000001/default.png`);
      expect(res.status, await res.clone().text()).toBe(200);
      expect(res.headers.get("link")).toContain("/0.0000001/default.png>");
    });
    it("rotationArbitrary: 45° grows the canvas, transparent corners in png, white in jpg", async () => {
      const png = await image(`${base}/full/200,200/45/default.png`);
      const meta = await sharp(png).metadata();
      expect(meta.width).toBeGreaterThanOrEqual(282);
      expect(meta.width).toBeLessThanOrEqual(284);
      expect(meta.channels).toBe(4);
      const corner = await sharp(png).extract({ left: 0, top: 0, width: 1, height: 1 }).raw().toBuffer();
      expect(corner[3]).toBe(0);
      const jpg = await image(`${base}/full/200,200/45/default.jpg`);
      const white = await sharp(jpg).extract({ left: 1, top: 1, width: 1, height: 1 }).raw().toBuffer();
      expect(Math.min(...white)).toBeGreaterThan(245);
    });
  });

  describe("quality", () => {
    it("color equals default for this RGB image", async () => {
      const a = await image(`${base}/full/200,/0/color.png`);
      expect(await meanAbsDiff(a, reference(full, 200, 200))).toBeLessThan(LOSSY);
    });
    it("gray has one channel, the luminance of the reference", async () => {
      const bytes = await image(`${base}/full/200,/0/gray.png`);
      expect((await sharp(bytes).metadata()).channels).toBe(1);
      expect(await meanAbsDiff(bytes, sharp(await reference(full, 200, 200).toColourspace("b-w").png().toBuffer()))).toBeLessThan(LOSSY);
    });
    it("bitonal has only black and white", async () => {
      const bytes = await image(`${base}/full/200,/0/bitonal.png`);
      const { data } = await sharp(bytes).raw().toBuffer({ resolveWithObject: true });
      expect(new Set(data)).toEqual(new Set([0, 255]));
    });
  });

  describe("format", () => {
    for (const [format, type, magic] of [
      ["jpg", "image/jpeg", "ffd8ff"],
      ["png", "image/png", "89504e47"],
      ["webp", "image/webp", "52494646"],
      ["tif", "image/tiff", "49492a00"],
      ["gif", "image/gif", "47494638"],
    ] as const) {
      it(`${format} is ${type} and shows the pattern`, async () => {
        const res = await get(`${base}/100,100,100,100/${maxSize}/0/default.${format}`);
        expect(res.headers.get("content-type")).toBe(type);
        const bytes = Buffer.from(await res.arrayBuffer());
        expect(bytes.subarray(0, magic.length / 2).toString("hex")).toBe(magic);
        // GIF's 256-colour palette is the loosest of these
        expect(await meanAbsDiff(bytes, reference(box))).toBeLessThan(format === "gif" ? 12 : LOSSY);
      });
    }
    it("pdf is one page the size of the image", async () => {
      const res = await get(`${base}/full/300,200/0/default.pdf`);
      expect(res.headers.get("content-type")).toBe("application/pdf");
      const text = Buffer.from(await res.arrayBuffer()).toString("latin1");
      expect(text.startsWith("%PDF-")).toBe(true);
      expect(text.match(/\/Type \/Page\b/g)).toHaveLength(1);
      expect(text).toMatch(/\/MediaBox \[0 0 300 200\]/);
    });
    it("jp2 is image/jp2, a JP2 file of the pattern", async () => {
      const res = await get(`${base}/100,100,100,100/${maxSize}/0/default.jp2`);
      expect(res.headers.get("content-type")).toBe("image/jp2");
      const bytes = Buffer.from(await res.arrayBuffer());
      expect(bytes.subarray(0, 12).toString("hex")).toBe("0000000c6a5020200d0a870a");
      expect(jp2Header(bytes)).toMatchObject({ width: 100, height: 100, components: 3 });
      // GDAL decodes it; lossless PNG of the decoded pixels goes through the usual comparison.
      const { data, width, height, channels } = await gdalDecodeJp2(bytes);
      const png = await sharp(data, { raw: { width, height, channels: channels as 3 } }).png().toBuffer();
      expect(await meanAbsDiff(png, reference(box))).toBeLessThan(LOSSY);
    });
  });

  describe("info.json and HTTP features", () => {
    it("describes the image, its tiles from the real overviews, and the level-2 extras", async () => {
      const res = await get(`${base}/info.json`);
      expect(res.headers.get("content-type")).toBe("application/json");
      expect(res.headers.get("vary")).toBe("Accept");
      // PLAIN_ID_MODE "revalidate", the default: the id is the base URI asked for, as the
      // validator's info_json check wants.
      const id = `${stack.url}${base}`;
      const info = (await res.json()) as Record<string, unknown>;
      const common = {
        protocol: "http://iiif.io/api/image",
        width: 1000,
        height: 1000,
        tiles: [{ width: 256, height: 256, scaleFactors: [1, 2, 4] }],
        sizes: [
          { width: 250, height: 250 },
          { width: 500, height: 500 },
        ],
      };
      if (v === 3) {
        expect(info).toMatchObject({
          ...common,
          "@context": "http://iiif.io/api/image/3/context.json",
          id,
          type: "ImageService3",
          profile: "level2",
          maxWidth: 2000,
          extraFormats: ["webp", "tif", "gif", "pdf", "jp2"],
          extraQualities: ["bitonal"],
        });
        expect(info.extraFeatures).toEqual(expect.arrayContaining(["mirroring", "rotationArbitrary", "sizeUpscaling"]));
      } else {
        expect(info).toMatchObject({
          ...common,
          "@context": "http://iiif.io/api/image/2/context.json",
          "@id": id,
          profile: ["http://iiif.io/api/image/2/level2.json", { maxWidth: 2000, formats: ["jpg", "png", "webp", "tif", "gif", "pdf", "jp2"], qualities: ["default", "color", "gray", "bitonal"] }],
        });
      }
    });
    it("jsonldMediaType: application/ld+json when asked for", async () => {
      const res = await get(`${base}/info.json`, { headers: { accept: "application/ld+json" } });
      expect(res.headers.get("content-type")).toBe(`application/ld+json;profile="http://iiif.io/api/image/${v}/context.json"`);
    });
    it("baseUriRedirect: 303 to info.json", async () => {
      const res = await get(base, { redirect: "manual" });
      expect(res.status).toBe(303);
      expect(res.headers.get("location")).toBe(`${stack.url}${base}/info.json`);
    });
    it("cors: every answer, errors included", async () => {
      for (const path of [`${base}/info.json`, `${base}/full/100,/0/default.jpg`, `${base}/x/y/z/w.jpg`]) {
        expect((await get(path, { headers: { origin: "https://viewer.example" } })).headers.get("access-control-allow-origin")).toBe("*");
      }
    });
    it("canonicalLinkHeader and profileLinkHeader", async () => {
      const res = await get(`${base}/pct:10,10,10,10/pct:50/0/default.jpg`);
      const canonical = v === 3 ? "100,100,100,100/50,50/0/default.jpg" : "100,100,100,100/50,/0/default.jpg";
      expect(res.headers.get("link")).toBe(
        `<${stack.url}${base}/${canonical}>;rel="canonical", <http://iiif.io/api/image/${v}/level2.json>;rel="profile"`,
      );
    });
    it("a client's X-Forwarded-Host/-Proto do not change the public address in ids (TRUST_FORWARDED_HEADERS is false)", async () => {
      const headers = { "x-forwarded-host": "images.example.org", "x-forwarded-proto": "https" };
      const info = (await (await get(`${base}/info.json`, { headers })).json()) as Record<string, string>;
      // (The scheme is not checked: Miniflare's local HTTP server itself builds request.url with
      // X-Forwarded-Proto's scheme; Cloudflare reports the scheme the client connected with.)
      const id = new URL(info[v === 3 ? "id" : "@id"]);
      expect(id.host + id.pathname).toBe(`${new URL(stack.url).host}${base}`);
    });
  });
});

describe("the original file", () => {
  it("GET /iiif/3/{id}/file streams the stored bytes unchanged", async () => {
    const res = await get(`/iiif/3/${ID}/file`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/tiff");
    expect(Buffer.from(await res.arrayBuffer())).toEqual(await readFile(`${dataDir}/${ID}.tif`));
  });
});

describe("edge caching", () => {
  it("ETag per canonical URL and version; If-None-Match answers 304 without a body", async () => {
    const path = `/iiif/3/${ID}/0,0,256,256/128,/0/default.jpg`;
    const first = await get(path);
    const etag = first.headers.get("etag")!;
    expect(etag).toMatch(/^"[0-9a-f]{32}"$/);
    // A plain id's image in the default PLAIN_ID_MODE (revalidate): kept INFO_MAX_AGE (1 s here), then revalidated.
    expect(first.headers.get("cache-control")).toBe("public, max-age=1");
    const again = await get(path.replace("128,", "128,128"), { headers: { "if-none-match": etag } });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe("");
  });

  it("2.1 and 3.0 URLs for the same pixels share one entry", async () => {
    const v3 = await get(`/iiif/3/${ID}/0,256,256,256/64,/0/default.jpg`);
    expect(v3.headers.get("x-tessera-cache")).toBe("miss");
    await v3.arrayBuffer();
    await new Promise((r) => setTimeout(r, 100));
    const v2 = await get(`/iiif/2/${ID}/0,256,256,256/64,/0/default.jpg`);
    expect(v2.headers.get("x-tessera-cache")).toBe("hit");
    expect(v2.headers.get("etag")).toBe(v3.headers.get("etag"));
  });

  it("info.json carries an ETag and revalidates with 304", async () => {
    const first = await get(`/iiif/3/${ID}/info.json`);
    const etag = first.headers.get("etag")!;
    expect(first.headers.get("cache-control")).toBe("public, max-age=1, stale-while-revalidate=3600");
    expect((await get(`/iiif/3/${ID}/info.json`, { headers: { "if-none-match": etag } })).status).toBe(304);
  });

  it("client errors are cached briefly; overloads and timeouts never", async () => {
    expect((await get(`/iiif/3/${ID}/full/0,/0/default.jpg`)).headers.get("cache-control")).toBe("public, max-age=30");
    const unknown = await get(`/iiif/3/nope/info.json`);
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get("cache-control")).toBe("public, max-age=30");
  });

  it("a new version of a source is served within INFO_MAX_AGE, never an old tile for it; the old snapshot keeps what it answered, and what it must read again is 404", async () => {
    const tile = "0,0,200,200/100,/0/default.png";
    const path = `/iiif/3/changing/${tile}`;
    const before = await image(path);
    expect(await meanAbsDiff(before, reference({ x: 0, y: 0, w: 200, h: 200 }, 100, 100))).toBeLessThan(LOSSY);
    const version = (await get("/iiif/3/changing/info.json")).headers.get("x-tessera-version")!;
    const old = `/iiif/3/changing@${encodeURIComponent(version)}`;
    expect(await image(`${old}/${tile}`)).toEqual(before);
    // Publish a different picture under the same id: the pattern turned upside down.
    await sharp(TEST_PATTERN_PNG)
      .rotate(180)
      .tiff({ tile: true, tileWidth: 256, tileHeight: 256, pyramid: true, compression: "deflate" })
      .toFile(`${dataDir}/changing.tif`);
    await new Promise((r) => setTimeout(r, 1500)); // past INFO_MAX_AGE
    const after = await image(path);
    const flipped = sharp(await sharp(TEST_PATTERN_PNG).rotate(180).png().toBuffer());
    expect(await meanAbsDiff(after, flipped.extract({ left: 0, top: 0, width: 200, height: 200 }).resize(100, 100))).toBeLessThan(LOSSY);
    expect((await get("/iiif/3/changing/info.json")).headers.get("x-tessera-version")).not.toBe(version);
    // A local directory keeps only the current version. The old snapshot's cached tile is still
    // its own; a tile it must decode anew is never the new picture: the decoder's open copy of
    // the file finds it changed (502) or the version is gone (404), and from then on the old
    // snapshot is 404, its info.json too.
    expect(await image(`${old}/${tile}`)).toEqual(before);
    const anew = `${old}/full/50,/0/default.png`;
    expect([404, 502]).toContain((await get(anew)).status);
    expect((await get(anew)).status).toBe(404);
    expect((await get(`${old}/info.json`)).status).toBe(404);
  });
});
