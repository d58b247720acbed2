// A corpus of malformed and hostile TIFFs: each must be answered with a clear error from the
// one table (never a crash, a hang or an OOM), and the decoder must keep serving afterwards.
// Also: every registered codec decodes GDAL's output of the same picture correctly, so the
// bounds do not reject honest files.

import { execFileSync } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { deflateSync } from "node:zlib";
import { fromFile } from "geotiff";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jpegFrame } from "../../regional/cog/jpeg-tables";
import { LocalCatalog } from "../../regional/source/local";
import { DECODER, type SourceInfo } from "../../shared/protocol";
import { buildTiff, type Tag } from "../support/tiff-builder";
import { decodeRgb, fixtureDir, meanAbsDiff, referenceRgb, SAMPLES, signedGet, startDecoder, type Decoder } from "./regional-helpers";

let fixtures: Awaited<ReturnType<typeof fixtureDir>>;
let d: Decoder;
beforeAll(async () => {
  fixtures = await fixtureDir();
  d = await startDecoder(new LocalCatalog(fixtures.dir));
});
afterAll(async () => {
  await d?.close();
  await fixtures?.remove();
});

const rgbTile = (w: number, h: number) => new Uint8Array(w * h * 3).fill(200);
const write = (id: string, bytes: Uint8Array) => writeFile(path.join(fixtures.dir, `${id}.tif`), bytes);

/** info, then (if info works) one image request; returns the first failure. */
async function firstFailure(id: string, canonical = "0,0,16,16/max/0/default.jpg") {
  const info = await signedGet(d, DECODER.info(id));
  if (info.status !== 200) return { status: info.status, body: (await info.json()) as { error: string; message: string } };
  const { version } = (await info.json()) as SourceInfo;
  const res = await signedGet(d, DECODER.image(id, canonical, version));
  const body = res.headers.get("content-type")?.includes("json") ? ((await res.json()) as { error: string; message: string }) : undefined;
  return { status: res.status, body };
}

/** The test pattern as a 256²-tiled TIFF made by GDAL. */
function gdalTiff(compress: string, extra: string[], out: string): void {
  // GDAL's stderr is kept out of the run (it warns that lossless WebP ignores its default
  // WEBP_LEVEL) and comes back inside the error if gdal_translate fails.
  execFileSync("gdal_translate", ["-q", "-of", "GTiff", "-co", "TILED=YES", "-co", `COMPRESS=${compress}`, ...extra, path.join(SAMPLES, "test-pattern.png"), out], { stdio: "pipe" });
}

/** A tile payload as GDAL writes it for a 256² tiled TIFF of the test pattern. */
async function gdalTile(compress: string, extra: string[] = []): Promise<{ tile: Uint8Array; tables?: number[]; compression: number; photometric: number }> {
  const out = path.join(fixtures.dir, `gdal-${compress}.tif.src`);
  gdalTiff(compress, extra, out);
  const tiff = await fromFile(out);
  const dir = (await tiff.getImage(0)).getFileDirectory();
  const offsets = (await dir.loadValue("TileOffsets")) as ArrayLike<number>;
  const counts = (await dir.loadValue("TileByteCounts")) as ArrayLike<number>;
  const tables = (await dir.loadValue("JPEGTables")) as ArrayLike<number> | undefined;
  const bytes = await readFile(out);
  await tiff.close();
  return {
    tile: bytes.subarray(offsets[0], offsets[0] + counts[0]),
    tables: tables && Array.from(tables),
    compression: dir.getValue("Compression") as number,
    photometric: dir.getValue("PhotometricInterpretation") as number,
  };
}

describe("malformed TIFFs", () => {
  const cases: { name: string; make: () => Promise<Uint8Array> | Uint8Array; status: number; message: RegExp }[] = [
    { name: "not a TIFF", make: () => new TextEncoder().encode("GIF89a, certainly not a TIFF"), status: 502, message: /no II\/MM byte-order mark/ },
    { name: "empty", make: () => new Uint8Array(0), status: 502, message: /too short for a TIFF header/ },
    {
      name: "header cut inside the IFD",
      make: async () => (await readFile(path.join(SAMPLES, "test-pattern.tif"))).subarray(0, 60),
      status: 502,
      message: /past the end/,
    },
    {
      name: "IFD loop",
      make: () => buildTiff({ width: 16, height: 16, tileWidth: 16, tileHeight: 16, tiles: [rgbTile(16, 16)], nextIfd: "self" }),
      status: 502,
      message: /IFD chain loops back/,
    },
    {
      name: "next IFD past the end",
      make: () => buildTiff({ width: 16, height: 16, tileWidth: 16, tileHeight: 16, tiles: [rgbTile(16, 16)], nextIfd: 1 << 30 }),
      status: 502,
      message: /IFD offset \d+ is past the end/,
    },
    {
      name: "absurd dimensions",
      make: () => buildTiff({ width: 2 ** 31, height: 2 ** 31, tileWidth: 16, tileHeight: 16, tiles: [rgbTile(16, 16)] }),
      status: 502,
      message: /exceeds the \d+-pixel side limit/,
    },
    {
      name: "absurd tile size",
      make: () => buildTiff({ width: 16, height: 16, tileWidth: 65536, tileHeight: 65536, tiles: [rgbTile(16, 16)] }),
      status: 502,
      message: /tiles exceed/,
    },
    {
      name: "absurd tag count",
      make: () =>
        buildTiff({
          width: 16, height: 16, tileWidth: 16, tileHeight: 16, tiles: [rgbTile(16, 16)],
          edit: (tags) => (tags.get(324)!.count = 0x40000000),
        }),
      status: 502,
      message: /tag 324 declares 1073741824 values/,
    },
    {
      name: "tile table shorter than the tile grid",
      make: () => buildTiff({ width: 64, height: 16, tileWidth: 16, tileHeight: 16, tiles: [rgbTile(16, 16)] }),
      status: 502,
      message: /needs 4 tile offsets and byte counts, found 1 and 1/,
    },
    {
      name: "tile offset past the end",
      make: () =>
        buildTiff({
          width: 16, height: 16, tileWidth: 16, tileHeight: 16, tiles: [rgbTile(16, 16)],
          edit: (tags, { fileEnd }) => (tags.get(324)!.values = [fileEnd + 1000]),
        }),
      status: 502,
      message: /block 0 lies past the end of the file/,
    },
    {
      name: "truncated file (tiles cut off)",
      make: async () => {
        const whole = buildTiff({ width: 16, height: 32, tileWidth: 16, tileHeight: 16, tiles: [rgbTile(16, 16), rgbTile(16, 16)] });
        return whole; // the tiles come first; the cut below removes the second tile's bytes
      },
      status: 502,
      message: /lies past the end|decodes to \d+ bytes, not the declared/,
    },
    {
      name: "Deflate bomb (4 MiB of zeros in a 16² tile)",
      make: () => buildTiff({ width: 16, height: 16, tileWidth: 16, tileHeight: 16, compression: 8, tiles: [deflateSync(new Uint8Array(4 << 20))] }),
      status: 502,
      message: /Deflate block decodes to more than the declared 768 bytes/,
    },
    {
      name: "uncompressed tile shorter than declared",
      make: () => buildTiff({ width: 16, height: 16, tileWidth: 16, tileHeight: 16, tiles: [rgbTile(8, 8)] }),
      status: 502,
      message: /block 0 decodes to 192 bytes, not the declared 768/,
    },
    {
      name: "duplicate tags in one IFD",
      make: () =>
        buildTiff({
          width: 16, height: 16, tileWidth: 16, tileHeight: 16, tiles: [rgbTile(16, 16)],
          duplicates: [{ tag: 256, type: 4, values: [1 << 20] }],
        }),
      status: 502,
      message: /tag 256 appears twice in the IFD at \d+/,
    },
    {
      name: "unknown Predictor value",
      make: () => buildTiff({ width: 16, height: 16, tileWidth: 16, tileHeight: 16, tiles: [rgbTile(16, 16)], extraTags: [{ tag: 317, type: 3, values: [7] }] }),
      status: 501,
      message: /Predictor 7 is not supported/,
    },
    {
      name: "floating-point Predictor on 8-bit integer samples",
      make: () => buildTiff({ width: 16, height: 16, tileWidth: 16, tileHeight: 16, tiles: [rgbTile(16, 16)], extraTags: [{ tag: 317, type: 3, values: [3] }] }),
      status: 501,
      message: /Predictor 3 is not supported/,
    },
    {
      name: "overview larger than the full-resolution image",
      make: () =>
        buildTiff({
          width: 16, height: 16, tileWidth: 16, tileHeight: 16, tiles: [rgbTile(16, 16)],
          overview: { width: 64, height: 64, tileWidth: 16, tileHeight: 16, tiles: Array.from({ length: 16 }, () => rgbTile(16, 16)) },
        }),
      status: 502,
      message: /overview 1 \(64x64\) is larger than the full-resolution image \(16x16\)/,
    },
    {
      name: "strip byte counts past the end of the object",
      make: () =>
        buildTiff({
          width: 16, height: 16, tileWidth: 16, tileHeight: 16, tiles: [rgbTile(16, 16)],
          edit: (tags, { tileOffsets }) => {
            for (const tag of [322, 323, 324, 325]) tags.delete(tag);
            tags.set(273, { tag: 273, type: 4, values: tileOffsets });
            tags.set(278, { tag: 278, type: 4, values: [16] });
            tags.set(279, { tag: 279, type: 4, values: [1 << 30] });
          },
        }),
      status: 502,
      message: /strip 0 lies past the end of the file/,
    },
    {
      name: "external tag data over the total cap (each tag under its own)",
      make: () =>
        buildTiff({
          width: 16, height: 16, tileWidth: 16, tileHeight: 16, tiles: [rgbTile(16, 16), new Uint8Array(24 << 20)],
          // Three private tags of 24 MiB each, all over the same bytes of the file.
          extraTags: [65000, 65001, 65002].map((tag) => ({ tag, type: 7, values: [0, 0, 0, 0, 0], count: 24 << 20, offset: 8 })),
          edit: (tags) => (tags.get(325)!.values = [768]),
        }),
      status: 502,
      message: /tag data of the file totals more than 67108864 bytes/,
    },
    {
      name: "oversized JPEGTables",
      make: () =>
        buildTiff({
          width: 16, height: 16, tileWidth: 16, tileHeight: 16, compression: 7, photometric: 6, tiles: [new Uint8Array(100_000)],
          extraTags: [{ tag: 347, type: 7, values: [0, 0, 0, 0, 0], count: 100_000, offset: 8 }],
        }),
      status: 502,
      message: /JPEGTables of 100000 bytes exceeds 65536/,
    },
  ];

  for (const c of cases) {
    it(`${c.name}: ${c.status} with a clear message`, async () => {
      let bytes = await c.make();
      if (c.name.startsWith("truncated")) bytes = cutSecondTile(bytes);
      const id = c.name.replace(/[^a-z0-9]+/gi, "-").replace(/^-|-$/g, "").toLowerCase();
      await write(id, bytes);
      const failure = await firstFailure(id, c.name.startsWith("truncated") ? "0,16,16,16/max/0/default.jpg" : undefined);
      expect(failure.status).toBe(c.status);
      expect(failure.body?.message).toMatch(c.message);
      expect((await fetch(d.url + DECODER.health)).status).toBe(200);
    });
  }

  // Honest tile payloads from GDAL, 256² each, placed where the IFD declares 16² tiles.
  for (const [compress, extra] of [
    ["LZW", []],
    ["DEFLATE", []],
    ["ZSTD", []],
    ["PACKBITS", []],
    ["JPEG", ["-co", "PHOTOMETRIC=YCBCR"]],
    ["WEBP", ["-co", "WEBP_LOSSLESS=TRUE"]],
  ] as [string, string[]][]) {
    it(`a ${compress} tile larger than its declared 16² block is refused (502), not decoded`, async () => {
      const { tile, tables, compression, photometric } = await gdalTile(compress, extra);
      const extraTags: Tag[] = tables ? [{ tag: 347, type: 7, values: tables }] : [];
      const id = `inflated-${compress.toLowerCase()}`;
      await write(id, buildTiff({ width: 16, height: 16, tileWidth: 16, tileHeight: 16, compression, photometric, tiles: [tile], extraTags }));
      // A whole 16² tile (JPEG: the passthrough path) and a crop (the decode path).
      for (const canonical of ["0,0,16,16/max/0/default.jpg", "0,0,8,8/max/0/default.jpg"]) {
        const failure = await firstFailure(id, canonical);
        expect(failure.status, canonical).toBe(502);
        // PackBits' payload is refused by its stored size before it is even fetched.
        expect(failure.body?.message).toMatch(/declared|stores \d+ bytes for 768 decoded/);
      }
    });
  }
});

describe("JPEG tiles whose markers hide a decoy frame header", () => {
  // A segment libjpeg skips (COM, at 6) hides a 16² frame header (at 14) from it; a parser
  // that reads a length after a parameterless marker (RST0) or stuffed bytes (FF 00) at 2
  // jumps straight onto the decoy. libjpeg reads the tile's real 256² frame after the COM.
  const decoySof = [0xff, 0xc0, 0x00, 0x11, 0x08, 0x00, 0x10, 0x00, 0x10, 0x03, 0x01, 0x22, 0x00, 0x02, 0x11, 0x01, 0x03, 0x11, 0x01];
  const hide = (marker: number, tile: Uint8Array) =>
    Uint8Array.from([0xff, 0xd8, 0xff, marker, 0x00, 0x0a, 0xff, 0xfe, 0x00, 14 + decoySof.length - 8, 0, 0, 0, 0, ...decoySof, ...tile.subarray(2)]);

  for (const [what, marker] of [["a restart marker", 0xd0], ["stuffed bytes", 0x00]] as const) {
    it(`${what} before the decoy: the real 256² frame is read and refused (502)`, async () => {
      const { tile, tables, compression, photometric } = await gdalTile("JPEG", ["-co", "PHOTOMETRIC=YCBCR"]);
      expect(jpegFrame(hide(marker, tile))).toEqual({ width: 256, height: 256, components: 3 });
      const id = `decoy-${marker}`;
      await write(id, buildTiff({ width: 16, height: 16, tileWidth: 16, tileHeight: 16, compression, photometric, tiles: [hide(marker, tile)], extraTags: [{ tag: 347, type: 7, values: tables! }] }));
      // The whole tile (passed through as stored) and a crop (decoded).
      for (const canonical of ["0,0,16,16/max/0/default.jpg", "0,0,8,8/max/0/default.jpg"]) {
        const failure = await firstFailure(id, canonical);
        expect(failure.status, canonical).toBe(502);
        expect(failure.body?.message, canonical).toMatch(/JPEG block is 256x256x3, declared 16x16x3/);
      }
    });
  }

  it("a stream libjpeg reads is read the same way: fill bytes, garbage, restart markers, tables", async () => {
    const { tile } = await gdalTile("JPEG", ["-co", "PHOTOMETRIC=YCBCR"]);
    const noisy = Uint8Array.from([0xff, 0xd8, 0xff, 0xff, 0xd7, 0x12, 0x34, 0xff, 0x01, ...tile.subarray(2)]);
    expect(jpegFrame(noisy)).toEqual({ width: 256, height: 256, components: 3 });
    expect(jpegFrame(Uint8Array.from([0xff, 0xd8, 0xff, 0xda, 0x00, 0x02]))).toBeUndefined();
  });
});

describe("every registered codec decodes honest files", () => {
  for (const [compress, extra, tolerance] of [
    ["NONE", [], 1],
    ["LZW", ["-co", "PREDICTOR=2"], 1],
    ["DEFLATE", [], 1],
    ["ZSTD", [], 1],
    ["PACKBITS", [], 1],
    ["WEBP", ["-co", "WEBP_LOSSLESS=TRUE"], 1],
    ["JPEG", ["-co", "PHOTOMETRIC=YCBCR"], 4],
    ["JPEG", ["-co", "PHOTOMETRIC=RGB"], 4],
  ] as [string, string[], number][]) {
    it(`${compress} ${extra.join(" ")}`, async () => {
      const id = `codec-${compress.toLowerCase()}${extra.join("").replace(/[^a-z]/gi, "").toLowerCase()}`;
      gdalTiff(compress, extra, path.join(fixtures.dir, `${id}.tif`));
      const rect = { x: 100, y: 150, w: 300, h: 200 };
      const info = (await (await signedGet(d, DECODER.info(id))).json()) as SourceInfo;
      const res = await signedGet(d, DECODER.image(id, "100,150,300,200/max/0/default.jpg", info.version));
      expect(res.status).toBe(200);
      const got = await decodeRgb(Buffer.from(await res.arrayBuffer()));
      // The answer is JPEG q85, so even lossless sources differ a little from the reference.
      expect(meanAbsDiff(got, await referenceRgb(rect))).toBeLessThan(tolerance + 2);
    });
  }
});

/** Drops the bytes of the second of two uncompressed tiles (the file is cut, the IFD kept). */
function cutSecondTile(bytes: Uint8Array): Uint8Array {
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const ifd = v.getUint32(4, true);
  // The IFD still says tile 1 is at 8 + 768 with 768 bytes: remove them and move the IFD.
  const cut = new Uint8Array(bytes.length - 768);
  cut.set(bytes.subarray(0, 8 + 768), 0);
  cut.set(bytes.subarray(8 + 1536), 8 + 768);
  const moved = new DataView(cut.buffer);
  moved.setUint32(4, ifd - 768, true);
  // Out-of-line values (BitsPerSample, tile tables) moved too: fix their offsets.
  const count = moved.getUint16(ifd - 768, true);
  for (let i = 0; i < count; i++) {
    const e = ifd - 768 + 2 + 12 * i;
    const type = moved.getUint16(e + 2, true);
    const n = moved.getUint32(e + 4, true);
    if (n * (type === 3 ? 2 : type === 4 ? 4 : 1) > 4) moved.setUint32(e + 8, moved.getUint32(e + 8, true) - 768, true);
  }
  return cut;
}
