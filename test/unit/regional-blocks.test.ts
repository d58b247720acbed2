// The block pipeline on real COGs: pixels against GDAL's own read of the same window, the
// decoded-block cache's byte cap and snapshot identity, request coalescing, and codec
// passthrough answering with exactly the stored tile.

import { execFileSync } from "node:child_process";
import { copyFile, readFile, rm } from "node:fs/promises";
import path from "node:path";
import jpegTurbo from "@julusian/jpeg-turbo";
import { fromFile } from "geotiff";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DecodedBlockCache, snapshotIdentity } from "../../regional/cog/block-cache";
import { coalesce, storedBytes } from "../../regional/cog/block-reader";
import { Cog } from "../../regional/cog/cog";
import { collectGarbage } from "../../regional/runtime/settle";
import { LocalCatalog } from "../../regional/source/local";
import { DECODER, type SourceInfo } from "../../shared/protocol";
import {
  decodeRgb,
  fixtureDir,
  GatedCatalog,
  meanAbsDiff,
  metricValue,
  REFERENCE_PNG,
  signedGet,
  startDecoder,
  type Decoder,
} from "./regional-helpers";

let fixtures: Awaited<ReturnType<typeof fixtureDir>>;
beforeAll(async () => {
  fixtures = await fixtureDir();
});
afterAll(async () => {
  await fixtures?.remove();
});

const versionOf = async (d: Decoder, id: string) => ((await (await signedGet(d, DECODER.info(id))).json()) as SourceInfo).version;

async function image(d: Decoder, id: string, canonical: string): Promise<Buffer> {
  const res = await signedGet(d, DECODER.image(id, canonical, await versionOf(d, id)));
  expect(res.status, canonical).toBe(200);
  return Buffer.from(await res.arrayBuffer());
}

/** GDAL's decode of a window of a file (optionally of one overview) as RGB. */
async function gdalWindow(file: string, window: [number, number, number, number], overview?: number) {
  const out = path.join(fixtures.dir, `gdal-${window.join("-")}-${overview ?? "full"}.png`);
  const oo = overview === undefined ? [] : ["-oo", `OVERVIEW_LEVEL=${overview}`];
  execFileSync("gdal_translate", ["-q", ...oo, "-of", "PNG", "-srcwin", ...window.map(String), file, out]);
  const rgb = await decodeRgb(out);
  await rm(out);
  return rgb;
}

describe("pixels", () => {
  it("match GDAL's read of the same window of the JPEG COG, within JPEG tolerance", async () => {
    const d = await startDecoder(new LocalCatalog(fixtures.dir));
    try {
      const file = path.join(fixtures.dir, "jpeg.tif");
      // Crosses four blocks; not aligned to anything.
      const got = await decodeRgb(await image(d, "jpeg", "100,37,300,250/max/0/default.jpg"));
      const want = await gdalWindow(file, [100, 37, 300, 250]);
      expect(meanAbsDiff(got, want)).toBeLessThan(2.5);
      // The comparison can fail: a window one block off is far away.
      expect(meanAbsDiff(got, await gdalWindow(file, [356, 37, 300, 250]))).toBeGreaterThan(10);
      // Inside one block (encoded in place from the cached block, with a row stride).
      const inside = await decodeRgb(await image(d, "jpeg", "300,290,100,60/max/0/default.jpg"));
      expect(meanAbsDiff(inside, await gdalWindow(file, [300, 290, 100, 60]))).toBeLessThan(2.5);
      expect(meanAbsDiff(inside, await gdalWindow(file, [350, 290, 100, 60]))).toBeGreaterThan(10); // half a 100 px square off
      // Inside one block, touching its bottom edge right of its left edge (copied out, not strided).
      const corner = await decodeRgb(await image(d, "jpeg", "300,400,100,112/max/0/default.jpg"));
      expect(meanAbsDiff(corner, await gdalWindow(file, [300, 400, 100, 112]))).toBeLessThan(2.5);
      // An overview at its own resolution: GDAL's overview 0 is the 500 px level.
      const small = await decodeRgb(await image(d, "jpeg", "full/500,500/0/default.jpg"));
      expect(meanAbsDiff(small, await gdalWindow(file, [0, 0, 500, 500], 0))).toBeLessThan(2.5);
    } finally {
      await d.close();
    }
  });
});

describe("gray JPEG", () => {
  it("decodes and answers one-band JPEG COGs (gray in, gray JPEG out)", async () => {
    const file = path.join(fixtures.dir, "gray.tif");
    execFileSync("gdal_translate", ["-q", "-b", "1", "-of", "COG", "-co", "COMPRESS=JPEG", "-co", "BLOCKSIZE=256", REFERENCE_PNG, file]);
    const d = await startDecoder(new LocalCatalog(fixtures.dir));
    try {
      const body = await image(d, "gray", "300,290,100,60/max/0/default.jpg");
      expect((await sharp(body).metadata()).channels).toBe(1);
      const got = await decodeRgb(body);
      expect(meanAbsDiff(got, await gdalWindow(file, [300, 290, 100, 60]))).toBeLessThan(2.5);
      expect(meanAbsDiff(got, await gdalWindow(file, [350, 290, 100, 60]))).toBeGreaterThan(10);
    } finally {
      await d.close();
    }
  });
});

describe("decoded-block cache", () => {
  it("never holds more than its byte cap, and serves repeats from memory", async () => {
    const block = 256 * 256 * 3;
    const cache = new DecodedBlockCache(3 * block);
    const d = await startDecoder(new LocalCatalog(fixtures.dir), 3, { blockCache: cache });
    try {
      await image(d, "deflate", "full/max/0/default.jpg"); // 16 blocks through a 3-block cache
      expect(cache.bytes).toBeLessThanOrEqual(3 * block);
      expect(await metricValue(d, "tessera_decoder_block_cache_bytes")).toBe(cache.bytes);
      expect(await metricValue(d, "tessera_decoder_block_cache_limit_bytes")).toBe(3 * block);
      await image(d, "deflate", "768,768,232,232/max/0/default.jpg");
      const decoded = await metricValue(d, "tessera_decoder_blocks_decoded_total");
      await image(d, "deflate", "768,768,232,232/max/0/default.jpg"); // the same block again
      expect(await metricValue(d, "tessera_decoder_blocks_decoded_total")).toBe(decoded);
      expect(await metricValue(d, "tessera_decoder_block_cache_hits_total")).toBeGreaterThan(0);
    } finally {
      await d.close();
    }
  });

  it("keys blocks by snapshot: a replaced source is never served the old pixels", async () => {
    const negative = path.join(fixtures.dir, "negative.png");
    await sharp(REFERENCE_PNG).removeAlpha().negate().png().toFile(negative);
    const negativeTif = path.join(fixtures.dir, "negative-src.tif");
    execFileSync("gdal_translate", ["-q", "-of", "COG", "-co", "COMPRESS=DEFLATE", "-co", "BLOCKSIZE=256", negative, negativeTif]);
    const swap = path.join(fixtures.dir, "swap.tif");
    await copyFile(path.join(fixtures.dir, "deflate.tif"), swap);
    const d = await startDecoder(new LocalCatalog(fixtures.dir));
    try {
      const region = "0,0,256,256/max/0/default.jpg";
      const before = await decodeRgb(await image(d, "swap", region));
      const old = await versionOf(d, "swap");
      await copyFile(negativeTif, swap);
      expect(await versionOf(d, "swap")).not.toBe(old);
      const after = await decodeRgb(await image(d, "swap", region));
      const want = await decodeRgb(await sharp(negative).extract({ left: 0, top: 0, width: 256, height: 256 }).png().toBuffer());
      expect(meanAbsDiff(after, want)).toBeLessThan(2);
      expect(meanAbsDiff(after, before)).toBeGreaterThan(50);
    } finally {
      await d.close();
    }
  });

  it("holds its cap in memory, not more, with blocks of mixed sizes", () => {
    // What a decoder serving viewers (512² RGB) beside a mosaic (256²) and gray sources feeds
    // its cache. Each block decodes into `memory` with a row to spare, as the block reader asks.
    const cap = 32 * 2 ** 20;
    const cache = new DecodedBlockCache(cap);
    let n = 0;
    const feed = (side: number, channels: number) => {
      const bytes = side * side * channels;
      const slot = cache.memory(bytes + side * channels);
      const block = { data: slot.subarray(0, bytes), width: side, height: side, channels, readers: 0, evicted: false, slot };
      cache.set(`b${n++}`, block);
    };
    const held = () => {
      collectGarbage("sync");
      return process.memoryUsage().arrayBuffers - baseline;
    };
    collectGarbage("sync");
    const baseline = process.memoryUsage().arrayBuffers;
    let random = 1;
    const next = () => (random = (random * 48271) % 2147483647) / 2147483647;
    const phases: [string, () => void][] = [
      ["512² RGB", () => feed(512, 3)],
      ["256² RGB", () => feed(256, 3)],
      ["512² RGB again", () => feed(512, 3)],
      ["a random mix of sizes and bands", () => feed([256, 512][Math.floor(next() * 2)], [1, 3, 4][Math.floor(next() * 3)])],
    ];
    for (const [name, step] of phases) {
      for (let i = 0; i < 600; i++) step();
      expect(cache.bytes, name).toBeLessThanOrEqual(cap);
      // The arena, plus at most the few spare blocks kept outside it (four of 1 MiB at most).
      expect(held() / 2 ** 20, name).toBeLessThanOrEqual(cap / 2 ** 20 + 4);
    }
  });

  it("holds its cap in memory, not more, with blocks of every codec (JPEG, deflate)", async () => {
    const cap = 4 * 2 ** 20; // 21 of the fixtures' 256² RGB blocks; each source has 16
    /** ArrayBuffers held once a fresh cache has taken 64 blocks of both codecs, in MiB. */
    const held = async () => {
      const cache = new DecodedBlockCache(cap);
      collectGarbage("sync");
      const baseline = process.memoryUsage().arrayBuffers;
      for (const id of ["jpeg", "deflate", "jpeg", "deflate"]) {
        const cog = await Cog.open(await new LocalCatalog(fixtures.dir).open(id, undefined), { cache, prefetchRing: 0 });
        for (let y = 0; y < 1000; y += 256) for (let x = 0; x < 1000; x += 256) await cog.readWindow(0, { x, y, w: 16, h: 16 });
        await cog.close();
      }
      collectGarbage("sync");
      expect(cache.bytes).toBeGreaterThan(cap - 256 * 256 * 3);
      return (process.memoryUsage().arrayBuffers - baseline) / 2 ** 20;
    };
    // The best of up to three: under the whole suite, buffers of this process's other work come
    // and go during a measurement (10 MiB once); blocks beside the arena held 16 MiB every time.
    let best = Infinity;
    for (let i = 0; i < 3 && best > cap / 2 ** 20 + 1; i++) best = Math.min(best, await held());
    expect(best).toBeLessThanOrEqual(cap / 2 ** 20 + 1);
  });

  it("identity includes version and size", () => {
    const base = { label: "s3://b/k.tif", version: "v1", size: 10 };
    expect(snapshotIdentity(base)).not.toBe(snapshotIdentity({ ...base, version: "v2" }));
    expect(snapshotIdentity(base)).not.toBe(snapshotIdentity({ ...base, size: 11 }));
  });
});

describe("request coalescing", () => {
  it("concurrent requests for the same block share one fetch and one decode", async () => {
    const catalog = new GatedCatalog(new LocalCatalog(fixtures.dir));
    const d = await startDecoder(catalog, 3, { blockCache: new DecodedBlockCache(0), prefetchRing: 0 });
    try {
      const version = await versionOf(d, "deflate");
      // Three different answers from the same full-resolution block (0,0): a crop, a scale, the whole block.
      const urls = ["0,0,100,100/max/0/default.jpg", "0,0,200,200/150,150/0/default.jpg", "0,0,256,256/max/0/default.jpg"];
      const pending = urls.map((u) => signedGet(d, DECODER.image("deflate", u, version)));
      await catalog.readsStarted(1);
      await new Promise((r) => setTimeout(r, 50)); // the others arrive and join
      catalog.pass();
      for (const res of await Promise.all(pending)) expect(res.status).toBe(200);
      expect(catalog.tileReads).toHaveLength(1);
      expect(await metricValue(d, "tessera_decoder_blocks_decoded_total")).toBe(1);
    } finally {
      catalog.pass();
      await d.close();
    }
  });

  it("a newcomer never joins a shared fetch that was already aborted", async () => {
    const catalog = new GatedCatalog(new LocalCatalog(fixtures.dir), { noticesAbort: false });
    const cog = await Cog.open(await catalog.open("deflate", undefined), { cache: new DecodedBlockCache(0), prefetchRing: 0 });
    try {
      const block = { x: 0, y: 0, w: 256, h: 256 };
      const gone = new AbortController();
      const first = cog.readWindow(0, block, gone.signal);
      await catalog.readsStarted(1);
      gone.abort(new DOMException("client disconnected", "AbortError"));
      await expect(first).rejects.toMatchObject({ name: "AbortError" });
      // The abandoned fetch's read is still under way when the next request for the block comes.
      const second = cog.readWindow(0, block);
      catalog.pass();
      expect((await second).width).toBe(256);
    } finally {
      catalog.pass();
      await cog.close();
    }
  });

  it("joins neighbours, never sparse blocks or distant ones", () => {
    const runs = coalesce([
      { index: 3, offset: 10_000_000, count: 10 },
      { index: 0, offset: 0, count: 0 }, // sparse: nothing stored
      { index: 2, offset: 150, count: 50 },
      { index: 1, offset: 100, count: 50 },
    ]);
    expect(runs.map((run) => run.map((r) => r.index))).toEqual([[0], [1, 2], [3]]);
  });

  it("reads neighbouring blocks with one ranged read", async () => {
    const catalog = new GatedCatalog(new LocalCatalog(fixtures.dir));
    catalog.pass();
    const d = await startDecoder(catalog, 3, { blockCache: new DecodedBlockCache(0), prefetchRing: 0 });
    try {
      await image(d, "deflate", "full/max/0/default.jpg");
      expect(await metricValue(d, "tessera_decoder_blocks_decoded_total")).toBe(16);
      expect(catalog.tileReads.length).toBeLessThan(4); // 16 blocks, stored one after the other
    } finally {
      await d.close();
    }
  });
});

describe("codec passthrough", () => {
  /** The stored tile of a level as a standalone JPEG: SOI, the IFD's tables, then the tile. */
  async function storedTile(file: string, levelIfd: number, index: number): Promise<Buffer> {
    const tiff = await fromFile(file);
    const dir = (await tiff.getImage(levelIfd)).getFileDirectory();
    const offsets = (await dir.loadValue("TileOffsets")) as ArrayLike<number>;
    const counts = (await dir.loadValue("TileByteCounts")) as ArrayLike<number>;
    const tables = Buffer.from(Uint8Array.from((await dir.loadValue("JPEGTables")) as ArrayLike<number>));
    const bytes = await readFile(file);
    const tile = bytes.subarray(offsets[index], offsets[index] + counts[index]);
    await tiff.close();
    return Buffer.concat([tile.subarray(0, 2), tables.subarray(2, tables.length - 2), tile.subarray(2)]);
  }

  it("answers a request that is exactly one stored JPEG tile with the stored bytes", async () => {
    const d = await startDecoder(new LocalCatalog(fixtures.dir));
    try {
      const file = path.join(fixtures.dir, "jpeg.tif");
      const before = await metricValue(d, "tessera_decoder_passthrough_total");
      // Block (1, 0) of the full level; block (0, 0) of the 500 px overview (IFD 1).
      expect((await image(d, "jpeg", "256,0,256,256/max/0/default.jpg")).equals(await storedTile(file, 0, 1))).toBe(true);
      expect((await image(d, "jpeg", "0,0,512,512/256,256/0/default.jpg")).equals(await storedTile(file, 1, 0))).toBe(true);
      expect(await metricValue(d, "tessera_decoder_passthrough_total")).toBe(before + 2);
      // And it is the right picture.
      const got = await decodeRgb(await image(d, "jpeg", "256,0,256,256/max/0/default.jpg"));
      expect(meanAbsDiff(got, await gdalWindow(file, [256, 0, 256, 256]))).toBeLessThan(1);
    } finally {
      await d.close();
    }
  });

  it("answers stored tiles many at a time from reused memory, each with its own bytes", async () => {
    const d = await startDecoder(new LocalCatalog(fixtures.dir));
    try {
      const file = path.join(fixtures.dir, "jpeg.tif");
      // The nine whole blocks of the full level (four across, the fourth padded).
      const blocks = [0, 1, 2].flatMap((by) => [0, 1, 2].map((bx) => ({ bx, by })));
      const want = await Promise.all(blocks.map(({ bx, by }) => storedTile(file, 0, by * 4 + bx)));
      // Each pass's answers are in flight together; later passes read into the memory earlier ones gave back.
      for (let pass = 0; pass < 3; pass++) {
        const got = await Promise.all(blocks.map(({ bx, by }) => image(d, "jpeg", `${bx * 256},${by * 256},256,256/max/0/default.jpg`)));
        got.forEach((bytes, i) => expect(bytes.equals(want[i]), `block ${blocks[i].bx},${blocks[i].by} pass ${pass}`).toBe(true));
      }
    } finally {
      await d.close();
    }
  });

  it("answers a request that is exactly one stored WebP tile, as webp, with the stored bytes", async () => {
    const file = path.join(fixtures.dir, "webp.tif");
    execFileSync("gdal_translate", ["-q", "-of", "COG", "-co", "COMPRESS=WEBP", "-co", "QUALITY=90", "-co", "BLOCKSIZE=256", REFERENCE_PNG, file]);
    const d = await startDecoder(new LocalCatalog(fixtures.dir));
    try {
      const before = await metricValue(d, "tessera_decoder_passthrough_total");
      const tiff = await fromFile(file);
      const dir = (await tiff.getImage(0)).getFileDirectory();
      const offsets = (await dir.loadValue("TileOffsets")) as ArrayLike<number>;
      const counts = (await dir.loadValue("TileByteCounts")) as ArrayLike<number>;
      await tiff.close();
      const stored = (await readFile(file)).subarray(offsets[1], offsets[1] + counts[1]);
      const got = await image(d, "webp", "256,0,256,256/max/0/default.webp");
      expect(got.equals(stored)).toBe(true);
      expect(await metricValue(d, "tessera_decoder_passthrough_total")).toBe(before + 1);
      // The same tile as jpg is decoded and re-encoded, and shows the same picture.
      await image(d, "webp", "256,0,256,256/max/0/default.jpg");
      expect(await metricValue(d, "tessera_decoder_passthrough_total")).toBe(before + 1);
      expect(meanAbsDiff(await decodeRgb(got), await gdalWindow(file, [256, 0, 256, 256]))).toBeLessThan(1);
    } finally {
      await d.close();
    }
  });

  it("re-encodes everything else: padded edge tiles, other sizes, lossless sources", async () => {
    const d = await startDecoder(new LocalCatalog(fixtures.dir));
    try {
      const before = await metricValue(d, "tessera_decoder_passthrough_total");
      await image(d, "jpeg", "768,768,232,232/max/0/default.jpg"); // stored padded to 256²
      await image(d, "jpeg", "0,0,256,256/128,128/0/default.jpg");
      await image(d, "jpeg", "1,0,256,256/max/0/default.jpg");
      await image(d, "deflate", "0,0,256,256/max/0/default.jpg");
      expect(await metricValue(d, "tessera_decoder_passthrough_total")).toBe(before);
    } finally {
      await d.close();
    }
  });
});

describe("reused memory", () => {
  const BLOCK = 256 * 256 * 3;
  /** The 16 tiles of 128² over the top-left 2×2 blocks, in an order that evicts as it goes. */
  const tiles = [0, 128, 256, 384].flatMap((y) => [0, 128, 256, 384].map((x) => `${x},${y},128,128/128,128/0/default.jpg`));

  it("answers tiles from recycled blocks and pooled encoder buffers with exactly the TurboJPEG encoding of their pixels", async () => {
    // Two blocks' room for four blocks: every pass evicts, and later blocks decode into the
    // memory of evicted ones while other requests still encode from theirs.
    const d = await startDecoder(new LocalCatalog(fixtures.dir), 3, { blockCache: new DecodedBlockCache(2 * BLOCK) });
    const reference = await Cog.open(await new LocalCatalog(fixtures.dir).open("jpeg", undefined), { cache: new DecodedBlockCache(0), prefetchRing: 0 });
    try {
      const want = await Promise.all(
        tiles.map(async (t) => {
          const [x, y] = t.split(",").map(Number);
          const { data } = await reference.readWindow(0, { x, y, w: 128, h: 128 });
          const options = { width: 128, height: 128, format: jpegTurbo.FORMAT_RGB, subsampling: jpegTurbo.SAMP_420, quality: 85 };
          return jpegTurbo.compressSync(Buffer.from(data.buffer, data.byteOffset, data.byteLength), options);
        }),
      );
      for (let pass = 0; pass < 3; pass++) {
        const got = await Promise.all(tiles.map((t) => image(d, "jpeg", t)));
        got.forEach((bytes, i) => expect(bytes.equals(want[i]), `${tiles[i]} pass ${pass}`).toBe(true));
      }
      expect(await metricValue(d, "tessera_decoder_block_buffers_recycled_total")).toBeGreaterThan(0);
      // Without a cache every block is evicted as it is decoded: its memory is reused only once
      // the requests encoding from it are done.
      const uncached = await startDecoder(new LocalCatalog(fixtures.dir), 3, { blockCache: new DecodedBlockCache(0) });
      try {
        for (let pass = 0; pass < 2; pass++) {
          const got = await Promise.all(tiles.map((t) => image(uncached, "jpeg", t)));
          got.forEach((bytes, i) => expect(bytes.equals(want[i]), `${tiles[i]} uncached, pass ${pass}`).toBe(true));
        }
      } finally {
        await uncached.close();
      }
      // 48 answers, at most one encoder buffer per answer in flight at once (3 passes of 16).
      const allocated = await metricValue(d, "tessera_decoder_jpeg_buffers_allocated_total");
      for (const t of tiles) await image(d, "jpeg", t);
      expect(await metricValue(d, "tessera_decoder_jpeg_buffers_allocated_total")).toBe(allocated); // one at a time: all reused
    } finally {
      await reference.close();
      await d.close();
    }
  });

  it("takes no reused memory for a source that reads into buffers of its own, as a store's answers arrive", async () => {
    const local = await new LocalCatalog(fixtures.dir).open("jpeg", undefined);
    // The same file, read as S3 and HTTP sources read: into memory of the source's, never the caller's.
    const storeLike = Object.assign(Object.create(local) as typeof local, {
      read: (offset: number, length: number, signal?: AbortSignal) => local.read(offset, length, signal),
    });
    const cog = await Cog.open(storeLike, { cache: new DecodedBlockCache(0), prefetchRing: 0 });
    try {
      const allocated = storedBytes.allocated;
      const pixels = await cog.readWindow(0, { x: 0, y: 0, w: 1000, h: 768 }); // a run of twelve blocks
      expect(pixels.width).toBe(1000);
      expect(storedBytes.allocated).toBe(allocated);
    } finally {
      await cog.close();
    }
  });

  it("never decodes into a block a reader holds that the cache refused (no cache at all)", async () => {
    const cog = await Cog.open(await new LocalCatalog(fixtures.dir).open("jpeg", undefined), { cache: new DecodedBlockCache(0), prefetchRing: 0 });
    try {
      const held = await cog.readWindowView(0, { x: 0, y: 0, w: 128, h: 128 });
      const before = Uint8Array.from(held.data);
      await cog.readWindow(0, { x: 256, y: 0, w: 128, h: 128 });
      expect(Buffer.from(held.data).equals(before)).toBe(true);
      held.release?.();
    } finally {
      await cog.close();
    }
  });

  it("never decodes into a block a reader still holds, even once it is evicted", async () => {
    const cache = new DecodedBlockCache(BLOCK);
    const cog = await Cog.open(await new LocalCatalog(fixtures.dir).open("jpeg", undefined), { cache, prefetchRing: 0 });
    try {
      const held = await cog.readWindowView(0, { x: 0, y: 0, w: 128, h: 128 });
      const before = Uint8Array.from(held.data);
      // A whole block read as pixels is the caller's own copy, whatever happens to the block.
      const whole = await cog.readWindow(0, { x: 0, y: 0, w: 256, h: 256 });
      const wholeBefore = Uint8Array.from(whole.data);
      // Evicts the held block, then decodes two more: neither may take its memory.
      await cog.readWindow(0, { x: 256, y: 0, w: 128, h: 128 });
      await cog.readWindow(0, { x: 512, y: 0, w: 128, h: 128 });
      expect(Buffer.from(held.data).equals(before)).toBe(true);
      const recycled = cache.recycled;
      held.release?.();
      await cog.readWindow(0, { x: 768, y: 0, w: 128, h: 128 });
      expect(cache.recycled).toBe(recycled + 1); // released and evicted: its memory takes the next block
      expect(Buffer.from(whole.data).equals(wholeBefore)).toBe(true);
    } finally {
      await cog.close();
    }
  });
});
