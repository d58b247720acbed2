// A corpus of malformed and hostile TIFFs: each must be answered with a clear error from the
// one table (never a crash, a hang or an OOM), and the decoder must keep serving afterwards.
// Also: every registered codec decodes GDAL's output of the same picture correctly, so the
// bounds do not reject honest files.

import { execFileSync } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { deflateSync } from "node:zlib";
import { fromFile } from "geotiff";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { asHttpError } from "../../regional/cog/cog";
import { jpegFrame } from "../../regional/cog/jpeg-tables";
import { WorkBudget } from "../../regional/runtime/work-budget";
import { LocalCatalog } from "../../regional/source/local";
import type { Source } from "../../regional/source/source";
import { DECODER, type SourceInfo } from "../../shared/protocol";
import { buildTiff, type Tag } from "../support/tiff-builder";
import { decodeRgb, fixtureDir, meanAbsDiff, metricValue, referenceRgb, refusalLog, SAMPLES, signedGet, startDecoder, type Decoder } from "./regional-helpers";

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
/** Bytes no codec reads as a block. */
const garbage = Uint8Array.from({ length: 50 }, (_, i) => i * 7);
const write = (id: string, bytes: Uint8Array) => writeFile(path.join(fixtures.dir, `${id}.tif`), bytes);

/**
 * info, then (if info works) one image request; returns the first failure: its status, its body
 * and the detail the decoder logged for it (by the answer's request id), if it logged one.
 */
async function firstFailure(id: string, canonical = "0,0,16,16/max/0/default.jpg") {
  let res = await signedGet(d, DECODER.info(id));
  if (res.status === 200) {
    const { version } = (await res.json()) as SourceInfo;
    res = await signedGet(d, DECODER.image(id, canonical, version));
  }
  const body = res.headers.get("content-type")?.includes("json") ? ((await res.json()) as { error: string; message: string }) : undefined;
  return { status: res.status, body, detail: refusalLog(d, res.headers.get("x-request-id"))?.detail as string | undefined };
}

/** What no answer may tell a client: the source's label, the directory it is read from. */
function expectNothingInternal(body: unknown, id: string): void {
  const text = JSON.stringify(body);
  expect(text).not.toContain(`local:${id}`);
  expect(text).not.toContain(fixtures.dir);
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
  /**
   * What the decoder logs beside an answer, by its request id: the answer's message after the
   * source's label, which the answer leaves out; a pattern (a library's own words, also left
   * out); or nothing, for a message that leaves nothing out.
   */
  type Logged = "label" | RegExp | "nothing";
  /** `canonical`: the image request made after info (a 16² crop unless said). */
  const cases: { name: string; make: () => Promise<Uint8Array> | Uint8Array; status: number; message: RegExp; logged: Logged; canonical?: string }[] = [
    { name: "not a TIFF", make: () => new TextEncoder().encode("GIF89a, certainly not a TIFF"), status: 502, message: /no II\/MM byte-order mark/, logged: "label" },
    { name: "empty", make: () => new Uint8Array(0), status: 502, message: /too short for a TIFF header/, logged: "label" },
    {
      name: "header cut inside the IFD",
      make: async () => (await readFile(path.join(SAMPLES, "test-pattern.tif"))).subarray(0, 60),
      status: 502,
      message: /past the end/,
      logged: "label",
    },
    {
      name: "IFD loop",
      make: () => buildTiff({ width: 16, height: 16, tileWidth: 16, tileHeight: 16, tiles: [rgbTile(16, 16)], nextIfd: "self" }),
      status: 502,
      message: /IFD chain loops back/,
      logged: "label",
    },
    {
      name: "next IFD past the end",
      make: () => buildTiff({ width: 16, height: 16, tileWidth: 16, tileHeight: 16, tiles: [rgbTile(16, 16)], nextIfd: 1 << 30 }),
      status: 502,
      message: /IFD offset \d+ is past the end/,
      logged: "label",
    },
    {
      name: "absurd dimensions",
      make: () => buildTiff({ width: 2 ** 31, height: 2 ** 31, tileWidth: 16, tileHeight: 16, tiles: [rgbTile(16, 16)] }),
      status: 502,
      message: /exceeds the \d+-pixel side limit/,
      logged: "label",
    },
    {
      name: "absurd tile size",
      make: () => buildTiff({ width: 16, height: 16, tileWidth: 65536, tileHeight: 65536, tiles: [rgbTile(16, 16)] }),
      status: 502,
      message: /tiles exceed/,
      logged: "label",
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
      logged: "label",
    },
    {
      name: "tile table shorter than the tile grid",
      make: () => buildTiff({ width: 64, height: 16, tileWidth: 16, tileHeight: 16, tiles: [rgbTile(16, 16)] }),
      status: 502,
      message: /needs 4 tile offsets and byte counts, found 1 and 1/,
      logged: "label",
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
      logged: "label",
    },
    {
      name: "truncated file (tiles cut off)",
      make: async () => {
        const whole = buildTiff({ width: 16, height: 32, tileWidth: 16, tileHeight: 16, tiles: [rgbTile(16, 16), rgbTile(16, 16)] });
        return whole; // the tiles come first; the cut below removes the second tile's bytes
      },
      status: 502,
      message: /lies past the end|decodes to \d+ bytes, not the declared/,
      logged: "label",
    },
    {
      name: "Deflate bomb (4 MiB of zeros in a 16² tile)",
      make: () => buildTiff({ width: 16, height: 16, tileWidth: 16, tileHeight: 16, compression: 8, tiles: [deflateSync(new Uint8Array(4 << 20))] }),
      status: 502,
      message: /Deflate block decodes to more than the declared 768 bytes/,
      logged: "nothing",
    },
    {
      name: "uncompressed tile shorter than declared",
      make: () => buildTiff({ width: 16, height: 16, tileWidth: 16, tileHeight: 16, tiles: [rgbTile(8, 8)] }),
      status: 502,
      message: /block 0 decodes to 192 bytes, not the declared 768/,
      logged: "label",
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
      logged: "label",
    },
    {
      name: "unknown Predictor value",
      make: () => buildTiff({ width: 16, height: 16, tileWidth: 16, tileHeight: 16, tiles: [rgbTile(16, 16)], extraTags: [{ tag: 317, type: 3, values: [7] }] }),
      status: 501,
      message: /Predictor 7 is not supported/,
      logged: "nothing",
    },
    ...[34712, 33003, 33005].map((compression) => ({
      name: `JPEG 2000 blocks (Compression ${compression})`,
      make: () => buildTiff({ width: 16, height: 16, tileWidth: 16, tileHeight: 16, compression, tiles: [Uint8Array.from([0xff, 0x4f, 0xff, 0x51])] }),
      status: 501,
      message: /JPEG 2000-compressed sources are not supported/,
      logged: "nothing" as const,
    })),
    {
      name: "floating-point Predictor on 8-bit integer samples",
      make: () => buildTiff({ width: 16, height: 16, tileWidth: 16, tileHeight: 16, tiles: [rgbTile(16, 16)], extraTags: [{ tag: 317, type: 3, values: [3] }] }),
      status: 501,
      message: /Predictor 3 is not supported/,
      logged: "nothing",
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
      logged: "label",
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
      logged: "label",
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
      logged: "label",
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
      logged: "label",
    },
    {
      name: "unknown compression (99)",
      make: () => buildTiff({ width: 16, height: 16, tileWidth: 16, tileHeight: 16, compression: 99, tiles: [rgbTile(16, 16)] }),
      status: 501,
      message: /^this source uses a TIFF compression the decoder does not read \(code 99\)$/,
      logged: /^local:unknown-compression-99: /,
    },
    {
      name: "corrupt Deflate block",
      make: () => buildTiff({ width: 16, height: 16, tileWidth: 16, tileHeight: 16, compression: 8, tiles: [garbage] }),
      status: 502,
      message: /^malformed TIFF: corrupt Deflate block$/,
      logged: /^malformed TIFF: corrupt Deflate block \(incorrect header check\)$/, // zlib's words
    },
    {
      name: "corrupt WebP block",
      make: () => buildTiff({ width: 16, height: 16, tileWidth: 16, tileHeight: 16, compression: 50001, tiles: [garbage] }),
      status: 502,
      message: /^malformed TIFF: corrupt WebP block$/,
      logged: /^malformed TIFF: corrupt WebP block \(.*unsupported image format\)$/, // libvips' words
    },
    {
      // A progressive frame holds all of its coefficients while it decodes (2 bytes a sample, in
      // whole MCUs): twice a 4:4:4 block's pixels beside them, past what its estimate counts.
      name: "progressive JPEG tile",
      make: async () => {
        const tile = await sharp({ create: { width: 16, height: 16, channels: 3, background: "#c08040" } }).jpeg({ progressive: true, chromaSubsampling: "4:4:4" }).toBuffer();
        return buildTiff({ width: 16, height: 16, tileWidth: 16, tileHeight: 16, compression: 7, photometric: 2, tiles: [tile] });
      },
      status: 501,
      message: /^progressive or multi-scan JPEG blocks are not supported/,
      logged: "nothing",
      // Decoded (the whole tile as JPEG would pass the stored bytes through, undecoded).
      canonical: "0,0,8,8/max/0/default.png",
    },
    {
      name: "palette without a ColorMap",
      make: () => buildTiff({ width: 16, height: 16, tileWidth: 16, tileHeight: 16, samples: 1, photometric: 3, tiles: [new Uint8Array(256)] }),
      status: 502,
      message: /^unreadable TIFF$/,
      logged: /^local:palette-without-a-colormap: unreadable TIFF \(Cannot read properties of undefined/, // geotiff.js's
    },
  ];

  for (const c of cases) {
    it(`${c.name}: ${c.status} with a clear message`, async () => {
      let bytes = await c.make();
      if (c.name.startsWith("truncated")) bytes = cutSecondTile(bytes);
      const id = c.name.replace(/[^a-z0-9]+/gi, "-").replace(/^-|-$/g, "").toLowerCase();
      await write(id, bytes);
      const failure = await firstFailure(id, c.canonical ?? (c.name.startsWith("truncated") ? "0,16,16,16/max/0/default.jpg" : undefined));
      expect(failure.status).toBe(c.status);
      expect(failure.body?.message).toMatch(c.message);
      expectNothingInternal(failure.body, id);
      if (c.logged === "label") expect(failure.detail).toBe(`local:${id}: ${failure.body?.message}`);
      else if (c.logged === "nothing") expect(failure.detail).toBeUndefined();
      else expect(failure.detail).toMatch(c.logged);
      expect((await fetch(d.url + DECODER.health)).status).toBe(200);
    });
  }

  it("geotiff.js's own refusal of a feature: 501 in the client's terms, its words and the label for the log", () => {
    const refusal = asHttpError(new Error("Unsupported SamplesPerPixel value: 7"), { label: "s3://bucket/maps/a.tif" } as Source);
    expect(refusal).toMatchObject({ status: 501, message: "this source uses a TIFF feature the decoder does not read" });
    expect(refusal.detail).toBe("s3://bucket/maps/a.tif: Unsupported SamplesPerPixel value: 7");
  });

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
        expectNothingInternal(failure.body, id);
      }
    });
  }
});

const GEO_KEYS = 34735;
const PIXEL_SCALE = 33550;
const TIEPOINT = 33922;
const TRANSFORMATION = 34264;
const GEO_DOUBLES = 34736;
const GEOGRAPHIC = { 1024: 2, 1025: 1, 2048: 4326 };
/** GeoKeys as GDAL writes them: SHORT values in the directory, doubles in GeoDoubleParams. */
function geoKeys(keys: Record<number, number>, doubles: Record<number, number> = {}): Tag[] {
  const ids = [...Object.keys(keys), ...Object.keys(doubles)].map(Number).sort((a, b) => a - b);
  const doubleIds = Object.keys(doubles).map(Number);
  const entries = ids.flatMap((id) => (doubleIds.includes(id) ? [id, GEO_DOUBLES, 1, doubleIds.indexOf(id)] : [id, 0, 1, keys[id]]));
  return [
    { tag: GEO_KEYS, type: 3, values: [1, 1, 0, ids.length, ...entries] },
    ...(doubleIds.length ? [{ tag: GEO_DOUBLES, type: 12 as const, values: doubleIds.map((id) => doubles[id]) }] : []),
  ];
}
/** Upper-left corner at (x, y), pixels of `sx` × `sy` CRS units. */
const placed = (x: number, y: number, sx: number, sy = sx): Tag[] => [
  { tag: PIXEL_SCALE, type: 12, values: [sx, sy, 0] },
  { tag: TIEPOINT, type: 12, values: [0, 0, 0, x, y, 0] },
];

describe("hostile georeferences on the map routes", () => {
  // A 16² grey picture, its west half 100 and its east half 200, with GeoTIFF tags that lie.
  // Each is still an image; its map tiles are served correctly or refused with the table's
  // status and a message saying why, never a 5xx.
  const halves = Uint8Array.from({ length: 256 }, (_, i) => (i % 16 < 8 ? 100 : 200));
  const geoTiff = (tags: Tag[]) => buildTiff({ width: 16, height: 16, tileWidth: 16, tileHeight: 16, samples: 1, tiles: [halves], extraTags: tags });

  async function mapAnswer(id: string, tags: Tag[], canonical: string) {
    await write(id, geoTiff(tags));
    const info = await signedGet(d, DECODER.info(id));
    expect(info.status, "info").toBe(200);
    const source = (await info.json()) as SourceInfo;
    const res = await signedGet(d, DECODER.tile(id, canonical, source.version));
    const json = res.headers.get("content-type")?.includes("json");
    return { source, status: res.status, message: json ? ((await res.json()) as { message: string }).message : "", body: json ? undefined : Buffer.from(await res.arrayBuffer()) };
  }

  const refused: { name: string; tags: Tag[]; status: number; message: RegExp }[] = [
    { name: "an EPSG code no table knows", tags: [...geoKeys({ 1024: 1, 1025: 1, 3072: 9999 }), ...placed(500000, 5000000, 10)], status: 404, message: /is not georeferenced/ },
    {
      name: "a user-defined transverse Mercator with scale 0 and no central meridian",
      tags: [...geoKeys({ 1024: 1, 1025: 1, 2048: 4326, 3072: 32767, 3074: 32767, 3075: 1, 3076: 9001 }, { 3080: Number.NaN, 3092: 0 }), ...placed(500000, 5000000, 10)],
      status: 404,
      message: /is not georeferenced/,
    },
    { name: "a ModelTransformation of determinant 0", tags: [...geoKeys(GEOGRAPHIC), { tag: TRANSFORMATION, type: 12, values: [1, 2, 0, 10, 2, 4, 0, 50, 0, 0, 0, 0, 0, 0, 0, 1] }], status: 404, message: /is not georeferenced/ },
    { name: "a ModelTransformation holding NaN", tags: [...geoKeys(GEOGRAPHIC), { tag: TRANSFORMATION, type: 12, values: [Number.NaN, 0, 0, 10, 0, -1, 0, 50, 0, 0, 0, 0, 0, 0, 0, 1] }], status: 404, message: /is not georeferenced/ },
    { name: "UTM pixels of 1e300 metres", tags: [...geoKeys({ 1024: 1, 1025: 1, 3072: 32633 }), ...placed(500000, 5000000, 1e300)], status: 404, message: /is not georeferenced/ },
    { name: "lon/lat pixels of 1e300 degrees", tags: [...geoKeys(GEOGRAPHIC), ...placed(10, 50, 1e300)], status: 404, message: /is not georeferenced/ },
    { name: "lon/lat past the poles", tags: [...geoKeys(GEOGRAPHIC), ...placed(10, 140, 1, 12.5)], status: 404, message: /is not georeferenced/ },
  ];
  for (const c of refused) {
    it(`${c.name}: ${c.status} on the tile route, the image still served`, async () => {
      const id = `geo-${c.name.replace(/[^a-z0-9]+/gi, "-").toLowerCase()}`;
      const answer = await mapAnswer(id, c.tags, "WorldCRS84Quad/0/1/0.png");
      expect(answer.status).toBe(c.status);
      expect(answer.message).toMatch(c.message);
      expect((await firstFailure(id, "0,0,16,16/max/0/default.png")).status).toBe(200);
    });
  }

  const across = [
    { name: "lon/lat from 172° to 188° east", tags: [...geoKeys(GEOGRAPHIC), ...placed(172, 8, 1)] },
    { name: "UTM zone 60 across 180°", tags: [...geoKeys({ 1024: 1, 1025: 1, 3072: 32660 }), ...placed(700000, 5000000, 10000)] },
  ];
  it.each(across)("$name: tiled on both sides of 180°, the image still served", async (c) => {
    const id = `geo-${c.name.replace(/[^a-z0-9]+/gi, "-").toLowerCase()}`;
    // WorldCRS84Quad's two zoom-0 tiles: 180°W to 0°, then 0° to 180°E; each holds a part at its outer column.
    for (const [tile, column] of [["WorldCRS84Quad/0/0/0.png", 0], ["WorldCRS84Quad/0/1/0.png", 255]] as const) {
      const answer = await mapAnswer(id, c.tags, tile);
      expect(answer.status, tile).toBe(200);
      const { data, info } = await sharp(answer.body!).raw().toBuffer({ resolveWithObject: true });
      const opaque = Array.from({ length: info.height }, (_, y) => data[(y * info.width + column) * info.channels + info.channels - 1]).filter((a) => a === 255);
      expect(opaque.length, `${tile}: opaque pixels in column ${column}`).toBeGreaterThan(0);
    }
    expect((await firstFailure(id, "0,0,16,16/max/0/default.png")).status).toBe(200);
  });

  /** [grey, alpha] of a PNG tile's first and last pixels on its middle row. */
  async function edgeColumns(png: Buffer) {
    // A tile opaque everywhere is written without alpha: read it back with its alpha, 255.
    const { data, info } = await sharp(png).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
    const at = (x: number) => {
      const i = ((info.height >> 1) * info.width + x) * info.channels;
      return [data[i], data[i + info.channels - 1]];
    };
    return { west: at(0), east: at(info.width - 1) };
  }

  it("a global lon/lat raster reaching the poles: tiled in WebMercatorQuad, halves where they lie", async () => {
    const global = [...geoKeys(GEOGRAPHIC), ...placed(-180, 90, 22.5, 11.25)];
    const answer = await mapAnswer("geo-global", global, "WebMercatorQuad/0/0/0.png");
    expect(answer.status).toBe(200);
    expect(answer.source.georeference?.lonLatBounds).toEqual([-180, -90, 180, 90]);
    expect(await edgeColumns(answer.body!)).toEqual({ west: [100, 255], east: [200, 255] });
  });

  it("a 0–360° global lon/lat raster: the whole world, its east half (180°–360°) shown west of 0°", async () => {
    const global = [...geoKeys(GEOGRAPHIC), ...placed(0, 90, 22.5, 11.25)];
    const answer = await mapAnswer("geo-global-360", global, "WebMercatorQuad/0/0/0.png");
    expect(answer.status).toBe(200);
    expect(answer.source.georeference?.lonLatBounds).toEqual([-180, -90, 180, 90]);
    expect(answer.source.georeference?.tiling.WorldCRS84Quad.bounds).toEqual([-180, -90, 180, 90]);
    expect(await edgeColumns(answer.body!)).toEqual({ west: [200, 255], east: [100, 255] });
  });

  it("one-band requests that do not fit the band: 400 naming it; nodata=nan on integers: served", async () => {
    const tags = [...geoKeys(GEOGRAPHIC), ...placed(-180, 90, 22.5, 11.25)];
    for (const [query, message] of [
      ["bidx=2", "bidx 2 is past the source's 1 band"],
      ["rescale=0,10&rescale=0,20&rescale=0,30", "rescale gives 3 ranges for the 1 band rendered"],
    ]) {
      const answer = await mapAnswer("geo-one-band", tags, `WebMercatorQuad/0/0/0.png?${query}`);
      expect(answer.status, query).toBe(400);
      expect(answer.message, query).toContain(message);
    }
    // Integer samples are never NaN: every pixel stays valid, as GDAL reads them.
    const answer = await mapAnswer("geo-one-band", tags, "WebMercatorQuad/0/0/0.png?nodata=nan");
    expect(answer.status).toBe(200);
    expect(await edgeColumns(answer.body!)).toEqual({ west: [100, 255], east: [200, 255] });
  });
});

describe("planar and 16-bit tiles that inflate to more or less than declared", () => {
  // As an attacker writes them: 16² tiles, PlanarConfiguration 2 (a tile a plane) or
  // BitsPerSample 16, each tile of one Deflate stream that inflates to 4 MiB (a bomb) or to
  // fewer bytes than the tile declares. Planar 8-bit RGB goes through the IIIF image route; 16-bit
  // sources serve map tiles only (IIIF images are 8-bit), so theirs go through the tile route.
  const SIDE = 16;
  const bomb = () => deflateSync(new Uint8Array(4 << 20));
  const short = () => deflateSync(new Uint8Array(100).fill(7));
  const honest = (bytes: number) => deflateSync(new Uint8Array(bytes).fill(9));
  const georeferenced = [...geoKeys(GEOGRAPHIC), ...placed(-180, 90, 22.5, 11.25)];
  /** A 16² tiled Deflate TIFF: `samples` of `bits`, chunky or planar, its last tile (plane) `broken`. */
  const file = (samples: number, bits: 8 | 16, planar: boolean, broken: Uint8Array, geo: boolean) => {
    const plane = SIDE * SIDE * (bits / 8) * (planar ? 1 : samples);
    const tiles: Uint8Array[] = Array.from({ length: planar ? samples : 1 }, () => honest(plane));
    tiles[tiles.length - 1] = broken;
    const extraTags: Tag[] = [
      { tag: 258, type: 3, values: Array(samples).fill(bits) },
      { tag: 284, type: 3, values: [planar ? 2 : 1] },
      ...(geo ? georeferenced : []),
    ];
    return buildTiff({ width: SIDE, height: SIDE, tileWidth: SIDE, tileHeight: SIDE, samples, compression: 8, tiles, extraTags });
  };
  const cases = [
    { name: "planar 8-bit RGB, a plane a bomb", bytes: () => file(3, 8, true, bomb(), false), declared: 256, route: "image" },
    { name: "planar 8-bit RGB, a plane short", bytes: () => file(3, 8, true, short(), false), declared: 256, route: "image" },
    { name: "16-bit grey, a bomb", bytes: () => file(1, 16, false, bomb(), true), declared: 512, route: "tile" },
    { name: "16-bit grey, short", bytes: () => file(1, 16, false, short(), true), declared: 512, route: "tile" },
    { name: "16-bit RGB, a bomb", bytes: () => file(3, 16, false, bomb(), true), declared: 1536, route: "tile" },
    { name: "16-bit RGB, short", bytes: () => file(3, 16, false, short(), true), declared: 1536, route: "tile" },
    { name: "planar 16-bit RGB, a plane a bomb", bytes: () => file(3, 16, true, bomb(), true), declared: 512, route: "tile" },
    { name: "planar 16-bit RGB, a plane short", bytes: () => file(3, 16, true, short(), true), declared: 512, route: "tile" },
  ] as const;

  for (const c of cases) {
    it(`${c.name}: 502 saying what the tile decodes to, the decoder still serving`, async () => {
      const id = `inflated-${c.name.replace(/[^a-z0-9]+/gi, "-").toLowerCase()}`;
      await write(id, c.bytes());
      const info = await signedGet(d, DECODER.info(id));
      expect(info.status).toBe(200);
      const { version } = (await info.json()) as SourceInfo;
      const path = c.route === "image" ? DECODER.image(id, "full/max/0/default.png", version) : DECODER.tile(id, "WebMercatorQuad/0/0/0.png", version);
      const res = await signedGet(d, path);
      expect(res.status).toBe(502);
      const body = (await res.json()) as { message: string };
      expect(body.message).toMatch(new RegExp(`block (\\d+ )?decodes to (more than the declared|\\d+ bytes, not the declared) ${c.declared} bytes`));
      expectNothingInternal(body, id);
      expect((await fetch(d.url + DECODER.health)).status).toBe(200);
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
      expect(jpegFrame(hide(marker, tile))).toEqual({ width: 256, height: 256, components: 3, onePass: true });
      const id = `decoy-${marker}`;
      await write(id, buildTiff({ width: 16, height: 16, tileWidth: 16, tileHeight: 16, compression, photometric, tiles: [hide(marker, tile)], extraTags: [{ tag: 347, type: 7, values: tables! }] }));
      // The whole tile (passed through as stored) and a crop (decoded).
      for (const canonical of ["0,0,16,16/max/0/default.jpg", "0,0,8,8/max/0/default.jpg"]) {
        const failure = await firstFailure(id, canonical);
        expect(failure.status, canonical).toBe(502);
        expect(failure.body?.message, canonical).toMatch(/JPEG block is 256x256x3, declared 16x16x3/);
        expectNothingInternal(failure.body, id);
      }
    });
  }

  it("a stream libjpeg reads is read the same way: fill bytes, garbage, restart markers, tables, its first scan", async () => {
    const { tile } = await gdalTile("JPEG", ["-co", "PHOTOMETRIC=YCBCR"]);
    const noisy = Uint8Array.from([0xff, 0xd8, 0xff, 0xff, 0xd7, 0x12, 0x34, 0xff, 0x01, ...tile.subarray(2)]);
    expect(jpegFrame(noisy)).toEqual({ width: 256, height: 256, components: 3, onePass: true });
    // A first scan of one component of three: more scans follow, so libjpeg buffers the frame.
    const sos = tile.findIndex((b, i) => b === 0xff && tile[i + 1] === 0xda);
    const oneComponent = Uint8Array.from(tile);
    oneComponent[sos + 4] = 1;
    expect(jpegFrame(oneComponent)).toMatchObject({ components: 3, onePass: false });
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

describe("blocks that decode to more than the bands a request asks for", () => {
  // A chunky block decodes every sample it stores, whichever bands a request reads: a 2048² tile
  // of sixteen 16-bit samples is 128 MiB decoded (its Deflate stream some 130 KB), for one band asked.
  const SIDE = 2048;
  const SAMPLES = 16;
  const decoded = SIDE * SIDE * SAMPLES * 2;
  let small: Decoder;
  beforeAll(async () => {
    // No tile-table prefetch: the budget then shows nothing but what the request reserved.
    small = await startDecoder(new LocalCatalog(fixtures.dir), 3, { budget: new WorkBudget(64 * 1024 * 1024), prefetchRing: 0 });
  });
  afterAll(() => small?.close());

  it("a one-band tile of a 16-sample 16-bit source reserves the whole block: 413 under a budget it exceeds, before any decode", async () => {
    const extraTags: Tag[] = [{ tag: 258, type: 3, values: Array(SAMPLES).fill(16) }, ...geoKeys(GEOGRAPHIC), ...placed(-180, 90, 360 / SIDE, 180 / SIDE)];
    await write("many-samples", buildTiff({ width: SIDE, height: SIDE, tileWidth: SIDE, tileHeight: SIDE, samples: SAMPLES, photometric: 1, compression: 8, tiles: [deflateSync(new Uint8Array(decoded))], extraTags }));
    const { version } = (await (await signedGet(small, DECODER.info("many-samples"))).json()) as SourceInfo;
    const res = await signedGet(small, DECODER.tile("many-samples", "WorldCRS84Quad/0/0/0.png?bidx=1", version));
    expect(res.status).toBe(413);
    expect(((await res.json()) as { message: string }).message).toMatch(/more than the whole 64\.0 MiB work budget/);
    expect(await metricValue(small, "tessera_decoder_work_budget_peak_bytes")).toBe(0);
  });

  it("a grey IIIF image of a 32-sample 8-bit source reserves the whole block: 413 under a budget it exceeds, before any decode", async () => {
    const samples = 32; // 128 MiB a decoded block, for a grey picture of 4 MiB
    const extraTags: Tag[] = [{ tag: 338, type: 3, values: Array(samples - 1).fill(0) }];
    await write("many-grey-samples", buildTiff({ width: SIDE, height: SIDE, tileWidth: SIDE, tileHeight: SIDE, samples, photometric: 1, compression: 8, tiles: [deflateSync(new Uint8Array(SIDE * SIDE * samples))], extraTags }));
    const { version } = (await (await signedGet(small, DECODER.info("many-grey-samples"))).json()) as SourceInfo;
    const res = await signedGet(small, DECODER.image("many-grey-samples", "full/max/0/default.png", version));
    expect(res.status).toBe(413);
    expect(((await res.json()) as { message: string }).message).toMatch(/more than the whole 64\.0 MiB work budget/);
    expect(await metricValue(small, "tessera_decoder_work_budget_peak_bytes")).toBe(0);
  });
});

describe("the layouts read through geotiff.js decode honest files", () => {
  // Strips of 64 rows (the last one 40), and planar tiles: every decoded block's size is checked.
  for (const [layout, options] of [
    ["strips", ["-co", "TILED=NO", "-co", "BLOCKYSIZE=64"]],
    ["planar tiles", ["-co", "TILED=YES", "-co", "INTERLEAVE=BAND"]],
  ] as [string, string[]][]) {
    it(layout, async () => {
      const id = `honest-${layout.replace(" ", "-")}`;
      execFileSync("gdal_translate", ["-q", "-co", "COMPRESS=DEFLATE", ...options, path.join(SAMPLES, "test-pattern.png"), path.join(fixtures.dir, `${id}.tif`)], { stdio: "pipe" });
      const info = (await (await signedGet(d, DECODER.info(id))).json()) as SourceInfo;
      const res = await signedGet(d, DECODER.image(id, "full/max/0/default.png", info.version));
      expect(res.status).toBe(200);
      const got = await decodeRgb(Buffer.from(await res.arrayBuffer()));
      expect(meanAbsDiff(got, await referenceRgb({ x: 0, y: 0, w: 1000, h: 1000 }))).toBe(0);
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
