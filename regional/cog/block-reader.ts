// Windowed reads of one tiled level, block by block: the decoded-block cache first; blocks
// another request is already fetching are joined, not fetched again (request coalescing);
// the remaining blocks are fetched with as few ranged reads as their byte layout allows (range
// coalescing: neighbours in the file, as COGs store a row of tiles, become one GET); each
// block is decoded by the bounded codec of its compression, checked against the declared shape
// and cached; the window is then copied out of the blocks.
//
// Everything that can be checked from the header (tile table sizes, a tile's byte range, its
// compressed size) is checked before the fetch. The request's signal is checked between
// stages; a shared fetch is aborted only when every request waiting for it has gone, and it
// keeps a share of the work reservation of the request that started it until it settles.

import type { BaseDecoder, ImageFileDirectory } from "geotiff";
import { untilAborted } from "../../shared/abort";
import type { Source } from "../source/source";
import { BufferPool } from "../runtime/buffer-pool";
import type { Reservation } from "../runtime/work-budget";
import type { DecodedBlock, DecodedBlockCache } from "./block-cache";
import { blockBytes, COMPRESSION, decodeJpegBlock, type BlockParameters } from "./codecs";
import type { BlockView } from "./pixels";
import { malformed } from "./tiff-guard";

/**
 * Memory stored blocks are read into (to decode them, or to pass a tile on as stored), reused
 * from one read to the next: one spare per read or answer in flight (a viewer or the edge keeps
 * dozens), each up to 512 KiB (a 512² JPEG block is ~200 KB).
 */
export const storedBytes = new BufferPool(32, 512 * 1024);

/** Largest gap (bytes) between two blocks' ranges that still joins them into one read. */
const MAX_GAP_BYTES = 64 * 1024;
/** Largest single coalesced read. */
const MAX_READ_BYTES = 16 * 1024 * 1024;

export interface LevelLayout {
  width: number;
  height: number;
  tileWidth: number;
  tileHeight: number;
  params: BlockParameters;
  /** TIFF Compression tag value. */
  compression: number;
  /** Channels the window has: colour (+ alpha), a prefix of the stored samples; or every stored sample. */
  channels: number;
  /** Bytes a sample takes: 1 for colour, more for 16-, 32- or 64-bit samples. */
  sampleBytes: number;
}


interface TileTables {
  offsets: number[];
  counts: number[];
}

/** One fetch-and-decode of a run of neighbouring blocks, shared by every request that needs them. */
interface SharedFetch {
  controller: AbortController;
  waiters: number;
  settled: boolean;
}

interface Pending {
  block: Promise<DecodedBlock>;
  fetch: SharedFetch;
}

export class BlockReader {
  readonly tilesAcross: number;
  readonly tilesDown: number;
  private tablesPromise: Promise<TileTables> | undefined;
  private readonly pending = new Map<number, Pending>();

  constructor(
    private readonly source: Source,
    /** Snapshot identity + level: the prefix of this level's cache keys. */
    private readonly keyPrefix: string,
    readonly layout: LevelLayout,
    private readonly dir: ImageFileDirectory,
    private readonly decoder: BaseDecoder,
    private readonly cache: DecodedBlockCache,
  ) {
    this.tilesAcross = Math.ceil(layout.width / layout.tileWidth);
    this.tilesDown = Math.ceil(layout.height / layout.tileHeight);
  }

  /** Decoded bytes of one block. */
  get blockBytes(): number {
    return blockBytes(this.layout.params);
  }

  /** Loads (once) and validates the tile offset and byte-count tables. */
  tables(): Promise<TileTables> {
    this.tablesPromise ??= this.loadTables();
    this.tablesPromise.catch(() => (this.tablesPromise = undefined));
    return this.tablesPromise;
  }

  /**
   * The stored (compressed) bytes of block (bx, by), for codec passthrough; read into
   * `room(bytes)` when given, if the source reads into the caller's memory (Source.read).
   */
  async storedBlock(bx: number, by: number, signal: AbortSignal, room?: (bytes: number) => Uint8Array): Promise<Uint8Array> {
    const index = by * this.tilesAcross + bx;
    const { offset, count } = this.range(await untilAborted(this.tables(), signal), index);
    return this.source.read(offset, count, signal, room);
  }

  /** Pixels of window [x0, y0, x1, y1) of this level, copied into `into` when given. */
  async read(window: [number, number, number, number], signal: AbortSignal, work: Reservation, into?: Uint8Array): Promise<BlockView> {
    const [x0, y0, x1, y1] = window;
    const { tileWidth: tw, tileHeight: th, channels, sampleBytes } = this.layout;
    const bx0 = Math.floor(x0 / tw);
    const by0 = Math.floor(y0 / th);
    const bx1 = Math.ceil(x1 / tw);
    const by1 = Math.ceil(y1 / th);
    const indices: number[] = [];
    for (let by = by0; by < by1; by++) for (let bx = bx0; bx < bx1; bx++) indices.push(by * this.tilesAcross + bx);

    const blocks = await this.blocks(indices, signal, work);
    const done = () => blocks.forEach((b) => this.cache.release(b));
    const width = x1 - x0;
    const height = y1 - y0;
    // A window inside one block needs no copy: hand over the block and where the window lies,
    // marked as read until the caller releases it.
    if (!signal.aborted && !into && blocks.length === 1 && blocks[0].channels === channels) {
      const { data, width: bw, height: bh } = blocks[0];
      return { data, width: bw, height: bh, channels, sampleBytes, crop: { left: x0 - bx0 * tw, top: y0 - by0 * th, width, height }, release: once(done) };
    }
    try {
      signal.throwIfAborted();
      const bytes = width * height * channels * sampleBytes;
      const out = into ? into.subarray(0, bytes) : new Uint8Array(bytes);
      indices.forEach((index, i) => copyInto(out, window, blocks[i], (index % this.tilesAcross) * tw, Math.floor(index / this.tilesAcross) * th, this.layout));
      return { data: out, width, height, channels, sampleBytes, crop: { left: 0, top: 0, width, height } };
    } finally {
      done();
    }
  }

  /**
   * The blocks at `indices`, each marked as read (the caller releases them). A block is marked
   * the moment this request holds it, cached or just decoded, so its memory cannot be reused
   * while the request waits for the others.
   */
  private async blocks(indices: number[], signal: AbortSignal, work: Reservation): Promise<DecodedBlock[]> {
    const found = new Map<number, Promise<DecodedBlock>>();
    const joined: SharedFetch[] = [];
    const missing: number[] = [];
    const held: DecodedBlock[] = [];
    let failed = false;
    const hold = (b: DecodedBlock) => {
      if (!failed) {
        b.readers++;
        held.push(b);
      }
      return b;
    };
    // Marked on arrival (observed here too: a failure is this request's to throw, or nobody's).
    const holding = (block: Promise<DecodedBlock>) => {
      const p = block.then(hold);
      p.catch(() => {});
      return p;
    };
    for (const index of indices) {
      const cached = this.cache.get(this.key(index));
      const p = this.pending.get(index);
      if (cached) found.set(index, Promise.resolve(hold(cached)));
      // A fetch every waiter has left is aborted but may not have settled yet: it would only
      // fail this request, so the block is fetched anew.
      else if (p && !p.fetch.controller.signal.aborted) {
        found.set(index, holding(p.block));
        // Counted at once, before any await: the fetch must not be aborted under us.
        if (!joined.includes(p.fetch)) {
          joined.push(p.fetch);
          p.fetch.waiters++;
        }
      } else missing.push(index);
    }
    const leave = () => {
      for (const f of joined) {
        // The last request to leave passes its reason on (client gone, deadline) to the GETs;
        // made only then: an exception captures a stack, work every request would do for nothing.
        if (--f.waiters !== 0 || f.settled) continue;
        f.controller.abort(signal.aborted ? signal.reason : new DOMException("no request waits for these blocks", "AbortError"));
      }
    };
    try {
      if (missing.length > 0) {
        const tables = await untilAborted(this.tables(), signal);
        // Validate every range before the first byte is fetched.
        const ranges = missing.map((index) => ({ index, ...this.range(tables, index) }));
        for (const run of coalesce(ranges)) {
          const fetch = this.startFetch(run, found, work);
          fetch.waiters++;
          joined.push(fetch);
          for (const r of run) found.set(r.index, holding(found.get(r.index)!));
        }
      }
      return await untilAborted(Promise.all(indices.map((i) => found.get(i)!)), signal);
    } catch (e) {
      failed = true;
      for (const b of held) this.cache.release(b);
      throw e;
    } finally {
      leave();
    }
  }

  /** Fetches one run of neighbouring blocks with one read, then decodes each into the cache. */
  private startFetch(run: Range[], found: Map<number, Promise<DecodedBlock>>, work: Reservation): SharedFetch {
    const fetch: SharedFetch = { controller: new AbortController(), waiters: 0, settled: false };
    const hold = work.share(); // a fetch outlives a cancelled caller: it keeps its memory accounted
    const signal = fetch.controller.signal;
    const start = run[0].offset;
    const end = run[run.length - 1].offset + run[run.length - 1].count;
    // Read into reused memory where the source reads into the caller's (a local file; a store
    // asks for none), given back once every block of the run is decoded: nothing reads the
    // stored bytes after their decode.
    let room: Buffer | undefined;
    const take = (bytes: number) => (room = storedBytes.take(bytes));
    const bytes = end > start ? this.source.read(start, end - start, signal, take) : Promise.resolve(new Uint8Array(0));
    const settled: Promise<unknown>[] = [];
    for (const r of run) {
      const block = bytes.then((all) => {
        signal.throwIfAborted();
        return this.decode(r, all.subarray(r.offset - start, r.offset - start + r.count));
      });
      block.catch(() => {}); // observed by the requests that wait for it
      const entry = { block, fetch };
      this.pending.set(r.index, entry);
      found.set(r.index, block);
      settled.push(
        block
          .then(
            (b) => (this.cache.set(this.key(r.index), b), b),
            () => undefined,
          )
          .then((b) => {
            // The decode's own mark, dropped only now: every waiter's mark was queued before this
            // step, so a block the cache refused or evicted at once is not reused under them.
            if (b) this.cache.release(b);
            if (this.pending.get(r.index) === entry) this.pending.delete(r.index);
          }),
      );
    }
    void Promise.all(settled).finally(() => {
      fetch.settled = true;
      hold.release();
      if (room) storedBytes.giveBack(room);
    });
    return fetch;
  }

  private async decode(r: Range, stored: Uint8Array): Promise<DecodedBlock> {
    const { tileWidth: width, tileHeight: height, params } = this.layout;
    // Every block lies in the cache's memory (one-bit blocks unpacked, a byte a sample), with a
    // row to spare after it: a window at its bottom edge can then be encoded in place with the
    // block's row stride (jpeg-encode.ts). Blocks in memory of their own would sit beside the
    // cache's, uncounted by its cap.
    const bytes = params.bitsPerSample[0] === 1 ? width * height : blockBytes(params);
    const slot = this.cache.memory(bytes + bytes / height);
    try {
      const data = await this.decodeInto(r, stored, slot.subarray(0, bytes));
      // One reader from the start: the fetch's, until its waiters hold the block (startFetch).
      return { data, width, height, channels: params.samplesPerPixel, readers: 1, evicted: false, slot };
    } catch (e) {
      this.cache.reuse(slot);
      throw e;
    }
  }

  private async decodeInto(r: Range, stored: Uint8Array, data: Uint8Array): Promise<Uint8Array> {
    const { tileWidth: width, tileHeight: height, params } = this.layout;
    if (r.count === 0) return data.fill(0); // a sparse block (GDAL's SPARSE_OK): all zeros
    const expected = blockBytes(params);
    const wrongSize = (got: number) => malformed(this.source.label, `block ${r.index} decodes to ${got} bytes, not the declared ${expected} bytes`);
    if (this.layout.compression === COMPRESSION.jpeg) {
      const decoded = await decodeJpegBlock(stored, params, data);
      if (decoded.byteLength !== expected) throw wrongSize(decoded.byteLength);
      return decoded;
    }
    // geotiff.js codecs take an ArrayBuffer and answer one of their own, copied in: a block read
    // alone is one already; a block cut from a coalesced read is copied out.
    const whole = stored.byteOffset === 0 && stored.byteLength === stored.buffer.byteLength;
    const decoded = new Uint8Array(await this.decoder.decode((whole ? stored : stored.slice()).buffer));
    if (decoded.byteLength !== expected) throw wrongSize(decoded.byteLength);
    if (params.bitsPerSample[0] === 1) unpackBits(decoded, data, width, height);
    else data.set(decoded);
    return data;
  }

  private range(tables: TileTables, index: number): { offset: number; count: number } {
    const offset = tables.offsets[index];
    const count = tables.counts[index];
    checkStoredRange(this.source, "block", index, offset, count, this.blockBytes);
    return { offset, count };
  }

  private async loadTables(): Promise<TileTables> {
    // Both tables at once: from a remote store each may be a round trip of its own.
    const [offsets, counts] = (await Promise.all([this.dir.loadValue("TileOffsets"), this.dir.loadValue("TileByteCounts")])) as (ArrayLike<number | bigint> | undefined)[];
    const want = this.tilesAcross * this.tilesDown;
    if (!offsets || !counts || offsets.length !== want || counts.length !== want) {
      throw malformed(this.source.label, `a ${this.layout.width}x${this.layout.height} level needs ${want} tile offsets and byte counts, found ${offsets?.length ?? 0} and ${counts?.length ?? 0}`);
    }
    return { offsets: Array.from(offsets, Number), counts: Array.from(counts, Number) };
  }

  private key(index: number): string {
    return `${this.keyPrefix}/${index}`;
  }
}

/** `fn`, callable any number of times, run at most once. */
function once(fn: () => void): () => void {
  let called = false;
  return () => {
    if (!called) fn();
    called = true;
  };
}

/** Throws unless stored block `index` lies inside the file and is no larger than any codec makes it. */
export function checkStoredRange(source: Source, noun: "block" | "strip", index: number, offset: number, count: number, decodedBytes: number): void {
  if (!Number.isSafeInteger(offset) || !Number.isSafeInteger(count) || offset < 0 || count < 0) {
    throw malformed(source.label, `${noun} ${index} has an invalid byte range`);
  }
  if (offset + count > source.size) throw malformed(source.label, `${noun} ${index} lies past the end of the file`);
  // No codec here makes a block bigger than twice its raw size plus headers.
  const maxStored = 2 * decodedBytes + 65536;
  if (count > maxStored) throw malformed(source.label, `${noun} ${index} stores ${count} bytes for ${decodedBytes} decoded`);
}

interface Range {
  index: number;
  offset: number;
  count: number;
}

/** Groups ranges that lie close together in the file into runs read with one GET each. */
export function coalesce(ranges: Range[]): Range[][] {
  const sorted = [...ranges].sort((a, b) => a.offset - b.offset);
  const runs: Range[][] = [];
  for (const r of sorted) {
    const run = runs[runs.length - 1];
    const last = run?.[run.length - 1];
    // Sparse blocks (no bytes stored, offset often 0) are never joined: they need no read.
    const joinable = run && last && r.count > 0 && last.count > 0;
    if (joinable && r.offset - (last.offset + last.count) <= MAX_GAP_BYTES && r.offset >= last.offset + last.count && r.offset + r.count - run[0].offset <= MAX_READ_BYTES) {
      run.push(r);
    } else runs.push([r]);
  }
  return runs;
}

/** A 1-bit block (a transparency mask: rows padded to whole bytes, first pixel in the high bit) as a byte a pixel, 0 or 1. */
function unpackBits(packed: Uint8Array, out: Uint8Array, width: number, height: number): void {
  const rowBytes = Math.ceil(width / 8);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) out[y * width + x] = (packed[y * rowBytes + (x >> 3)] >> (7 - (x & 7))) & 1;
  }
}

/** Copies the part of `block` (placed at bx, by in level pixels) inside `window` into `out`, as `layout`'s samples. */
function copyInto(out: Uint8Array, window: [number, number, number, number], block: DecodedBlock, bx: number, by: number, { channels, sampleBytes }: LevelLayout): void {
  const [x0, y0, x1, y1] = window;
  const left = Math.max(x0, bx);
  const right = Math.min(x1, bx + block.width);
  const top = Math.max(y0, by);
  const bottom = Math.min(y1, by + block.height);
  if (right <= left || bottom <= top) return;
  const pixel = channels * sampleBytes;
  const outStride = (x1 - x0) * pixel;
  const s = block.channels;
  for (let y = top; y < bottom; y++) {
    const src = ((y - by) * block.width + (left - bx)) * s * sampleBytes;
    const dst = (y - y0) * outStride + (left - x0) * pixel;
    if (s === channels) {
      out.set(block.data.subarray(src, src + (right - left) * pixel), dst);
    } else {
      // Only colour readers (8-bit samples) take a prefix of the stored samples.
      // Extra stored samples beyond colour and alpha are dropped.
      for (let x = 0; x < right - left; x++) for (let c = 0; c < channels; c++) out[dst + x * channels + c] = block.data[src + x * s + c];
    }
  }
}
