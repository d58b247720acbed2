// Adapts a Tessera Source to the source interface geotiff.js reads through
// (`fetch(slices, signal) => ArrayBuffer[]` plus `fileSize`).
//
// geotiff.js (3.0) makes two kinds of reads, told apart by the signal:
// - Header reads (the TIFF header, 1 KiB per IFD, and for large tile tables one 4- or 8-byte
//   read per TileOffsets/TileByteCounts entry) come without a signal, and their promises are
//   shared and cached by geotiff across requests. Over S3 each would be a GET, so they are
//   served from aligned blocks kept in a small per-snapshot LRU (as GDAL and geotiff's own
//   BlockedSource do). A shared block fetch is never aborted by one caller: each caller stops
//   waiting on its own signal, and a failed block is dropped, not remembered. Header bytes the
//   Source read when it was opened are served from those, and the blocks of one read are
//   fetched at once, not one after another.
// - Tile reads (readRasters) carry the caller's signal and go straight to the Source as exact
//   ranges; Cog always passes a signal, so pixel data never crowds headers out of the cache.
//
// heldRead runs one raster read under a signal of its own and keeps the request's memory
// reserved until every fetch and decode that read started has settled.

import type { Pool } from "geotiff";
import { untilAborted } from "../../shared/abort";
import { DEFAULT_SHARED_WORK_TIMEOUT_MS, withSharedDeadline } from "../runtime/deadlines";
import type { Reservation } from "../runtime/work-budget";
import type { Source } from "../source/source";
import { decodeRasterBlock, type BlockParameters } from "./codecs";

export interface BlockCacheOptions {
  /** Alignment and size of cached blocks. */
  blockSize?: number;
  /** How many blocks one snapshot keeps. */
  maxBlocks?: number;
  /** Bound on each shared header read, which no request's signal may cancel. */
  sharedReadTimeoutMs?: number;
}

interface Slice {
  offset: number;
  length: number;
}

const DEFAULT_BLOCK_SIZE = 64 * 1024;
const DEFAULT_MAX_BLOCKS = 8;

export class GeoTiffSource {
  private readonly blockSize: number;
  private readonly maxBlocks: number;
  private readonly sharedReadTimeoutMs: number;
  /** Block index → pending or finished block bytes; Map order is the LRU order. */
  private readonly blocks = new Map<number, Promise<Uint8Array>>();

  constructor(
    private readonly source: Source,
    options: BlockCacheOptions = {},
  ) {
    this.blockSize = options.blockSize ?? DEFAULT_BLOCK_SIZE;
    this.maxBlocks = options.maxBlocks ?? DEFAULT_MAX_BLOCKS;
    this.sharedReadTimeoutMs = options.sharedReadTimeoutMs ?? DEFAULT_SHARED_WORK_TIMEOUT_MS;
  }

  get fileSize(): number {
    return this.source.size;
  }

  async fetch(slices: Slice[], signal?: AbortSignal): Promise<ArrayBuffer[]> {
    return Promise.all(slices.map((s) => this.fetchOne(s, signal)));
  }

  async close(): Promise<void> {
    this.blocks.clear();
    await this.source.close();
  }

  /**
   * Header bytes: from what the source read when it was opened if they lie in it, else through
   * the per-snapshot block cache when small, shared by every request.
   */
  async read(offset: number, length: number): Promise<Uint8Array> {
    const end = Math.min(offset + length, this.source.size);
    if (offset < 0 || end <= offset) return new Uint8Array(0);
    const opened = this.opened(offset, end);
    if (opened) return opened;
    if (end - offset > this.blockSize) return this.sharedRead(offset, end - offset);
    return this.fromBlocks(offset, end);
  }

  private async fetchOne({ offset, length }: Slice, signal?: AbortSignal): Promise<ArrayBuffer> {
    // geotiff.js asks for a fixed 1 KiB (4 KiB BigTIFF) at each IFD, which may run past
    // the end of a small file: answer with what exists, as its own sources do.
    if (!signal) return toArrayBuffer(await this.read(offset, length));
    const end = Math.min(offset + length, this.source.size);
    if (offset < 0 || end <= offset) return new ArrayBuffer(0);
    signal.throwIfAborted();
    return tracked(signal, this.source.read(offset, end - offset, signal).then((bytes) => {
      // Bytes that arrive for an abandoned read are dropped: geotiff.js would decode them for nobody.
      signal.throwIfAborted();
      return toArrayBuffer(bytes);
    }));
  }

  private async fromBlocks(offset: number, end: number): Promise<Uint8Array> {
    const first = Math.floor(offset / this.blockSize);
    const indexes = Array.from({ length: Math.floor((end - 1) / this.blockSize) - first + 1 }, (_, i) => first + i);
    const blocks = await Promise.all(indexes.map((b) => this.block(b)));
    const out = new Uint8Array(end - offset);
    for (const [i, block] of blocks.entries()) {
      const blockStart = indexes[i] * this.blockSize;
      const from = Math.max(offset, blockStart);
      const to = Math.min(end, blockStart + block.length);
      out.set(block.subarray(from - blockStart, to - blockStart), from - offset);
    }
    return out;
  }

  /**
   * A header read shared by every request of the snapshot: its waiters give up after its own
   * deadline and the block is dropped, so the next request reads again. The read itself goes
   * without a signal (that is what marks it a header read); the store client's own timeouts end it.
   */
  private sharedRead(offset: number, length: number): Promise<Uint8Array> {
    return withSharedDeadline(this.sharedReadTimeoutMs, "reading the source's header", this.source.label, () =>
      this.source.read(offset, length),
    );
  }

  /** Bytes offset..end from what the source read when it was opened, if they lie in it. */
  private opened(offset: number, end: number): Uint8Array | undefined {
    const first = this.source.firstBytes;
    return first && end <= first.length ? first.subarray(offset, end) : undefined;
  }

  private block(index: number): Promise<Uint8Array> {
    const start = index * this.blockSize;
    const length = Math.min(this.blockSize, this.source.size - start);
    const opened = this.opened(start, start + length);
    if (opened) return Promise.resolve(opened);
    const cached = this.blocks.get(index);
    if (cached) {
      this.blocks.delete(index);
      this.blocks.set(index, cached);
      return cached;
    }
    const pending = this.sharedRead(start, length);
    this.blocks.set(index, pending);
    pending.catch(() => {
      if (this.blocks.get(index) === pending) this.blocks.delete(index);
    });
    while (this.blocks.size > this.maxBlocks) {
      const oldest = this.blocks.keys().next().value as number;
      this.blocks.delete(oldest);
    }
    return pending;
  }
}

/** The fetches and decodes each heldRead's own signal has under way. */
const underWay = new WeakMap<AbortSignal, Set<Promise<unknown>>>();

/** `work`, counted under way for the read of `signal` (if it is a heldRead's) until it settles. */
function tracked<T>(signal: AbortSignal, work: Promise<T>): Promise<T> {
  const pending = underWay.get(signal);
  if (!pending) return work;
  pending.add(work);
  const done = () => pending.delete(work);
  work.then(done, done);
  return work;
}

/**
 * A geotiff.js "pool" that decodes here, with the registered codecs: each decode counted under
 * way, and its size checked as the block reader checks its own.
 */
function trackingPool(signal: AbortSignal): Pool {
  const bindParameters = (compression: number, parameters: BlockParameters) => ({
    decode: (buffer: ArrayBufferLike) => tracked(signal, decodeRasterBlock(compression, parameters, buffer)),
  });
  return { bindParameters } as unknown as Pool;
}

/**
 * One geotiff.js raster read (`read` passes the options on to readRasters or readRGB), under a
 * signal of its own that `signal` aborts. It answers as soon as the read does or `signal` aborts;
 * `hold` (a share of the request's reservation) is released only once the read and every fetch
 * and decode it started have settled: geotiff.js gives up at an abort or a block's failure while
 * its other blocks' reads and decodes run on, and their memory is in use until they end.
 */
export function heldRead<T>(read: (options: { signal: AbortSignal; pool: Pool }) => Promise<T>, signal: AbortSignal, hold: Reservation): Promise<T> {
  const own = new AbortController();
  const stop = () => own.abort(signal.reason);
  signal.addEventListener("abort", stop, { once: true });
  if (signal.aborted) stop();
  underWay.set(own.signal, new Set());
  const result = read({ signal: own.signal, pool: trackingPool(own.signal) });
  void settled(result, own).finally(() => {
    signal.removeEventListener("abort", stop);
    hold.release();
  });
  return untilAborted(result, signal);
}

/** Resolves once `result` and all that its read has under way have settled; stops what it would still start. */
async function settled(result: Promise<unknown>, own: AbortController): Promise<void> {
  await result.catch(() => {});
  own.abort(new DOMException("the read has ended", "AbortError"));
  const pending = underWay.get(own.signal)!;
  // A fetch that has just resolved hands its bytes to a decode a few microtasks later: a turn of
  // the event loop lets it start (and count) before the read is taken for settled.
  for (;;) {
    await new Promise((r) => setImmediate(r));
    if (pending.size === 0) return;
    await Promise.allSettled([...pending]);
  }
}

function toArrayBuffer(bytes: Uint8Array): ArrayBuffer {
  if (bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer) {
    return bytes.buffer;
  }
  return bytes.slice().buffer as ArrayBuffer;
}
