// JPEG 2000 codestreams from 8-bit pixels, with OpenJPEG built to WebAssembly (libvips here has
// no JPEG 2000 encoder), run on a worker thread (openjpeg-worker.ts) so that an encode never
// stalls the event loop. An image is coded a tile at a time (tiled-codestream.ts), each encode
// asking for its next tile when the last is back: the worker's memory stays at one tile's,
// encodes on one thread take turns tile by tile, and one whose request is cancelled stops at its
// next tile. The worker starts with a jp2 and ends itself once idle, so that its
// memory returns; if it dies, its tiles fail, and the next tile starts a new worker.

import { Worker } from "node:worker_threads";
import { workerScript } from "../decoder-files";
import { BUSY, IDLE, RETIRED, newClaim } from "./encoder-claim";
import type { J2kReply, J2kRequest, J2kTile, J2kWorkerData } from "./openjpeg-worker";
import { TILE_SIDE, decompositions, mainHeaderBytes, tiledCodestream, tilesOf, type Tile } from "./tiled-codestream";

export interface J2kInput {
  /** Interleaved 8-bit samples, row by row. */
  pixels: Uint8Array;
  width: number;
  height: number;
  components: 1 | 3;
  /** Reversible 5/3 wavelet, every bit kept; else the 9/7 wavelet at a fixed ratio. */
  lossless: boolean;
}

/** The J2K codestream (FF4F FF51 …) of `input`, in pieces to write one after another. */
export async function encodeJ2k(input: J2kInput, signal?: AbortSignal): Promise<Uint8Array[]> {
  const { width, height, components, lossless } = input;
  const levels = decompositions(width, height);
  const tiles = tilesOf(width, height);
  const codestreams: Uint8Array[] = [];
  for (const tile of tiles) {
    signal?.throwIfAborted();
    const sharedHeaderBytes = codestreams.length > 0 ? mainHeaderBytes(codestreams[0]) : 0;
    const { width: w, height: h, originX, originY } = tile;
    const coding = { width: w, height: h, originX, originY, components, lossless, decompositions: levels, sharedHeaderBytes };
    try {
      codestreams.push(await encoderThread().encode({ tile: coding, fill: (into) => copyTile(input, tile, into), signal }));
    } catch (err) {
      if (signal?.aborted) throw signal.reason;
      const where = tiles.length > 1 ? ` (its tile at ${tile.x},${tile.y})` : "";
      const reason = err instanceof Error && err.message ? `: ${err.message}` : "";
      throw new Error(`OpenJPEG could not encode a ${width}x${height} image${where}${reason}`);
    }
  }
  return tiledCodestream(width, height, codestreams);
}

/** Copies the tile's samples of `input`, packed row after row, to the start of `into`. */
function copyTile({ pixels, width, components }: J2kInput, tile: Tile, into: Uint8Array): void {
  const row = tile.width * components;
  for (let y = 0; y < tile.height; y++) {
    const from = ((tile.y + y) * width + tile.x) * components;
    into.set(pixels.subarray(from, from + row), y * row);
  }
}

/** One tile for the encoder thread: how to code it, and how to put its samples in the thread's tile buffer. */
interface TileJob {
  tile: J2kTile;
  fill(into: Uint8Array): void;
  /** A cancelled request's tile still waiting is dropped. */
  signal?: AbortSignal;
}

interface Queued extends TileJob {
  resolve(codestream: Uint8Array): void;
  reject(reason: unknown): void;
}

/** Samples per pixel at most (RGB). */
const MAX_COMPONENTS = 3;

/**
 * WebAssembly memory past which an idle encoder thread is ended at once, not after its idle
 * spell: a tile's encode fits the module's initial 50 MiB, so only an encode OpenJPEG could not
 * code in a tile's memory grows it, and that memory never shrinks while the thread lives.
 */
const RECYCLE_MEMORY_BYTES = 128 * 1024 * 1024;

/**
 * The encoder's worker thread. Tiles are handed over one at a time through a buffer the two
 * share, so that no tile is allocated, copied to the worker or collected: the rest wait here.
 */
class EncoderThread {
  /** The worker's WebAssembly memory after its latest tile. */
  private memoryBytes = 0;
  private readonly claim = newClaim();
  private readonly pixels = new Uint8Array(new SharedArrayBuffer(TILE_SIDE * TILE_SIDE * MAX_COMPONENTS));
  /** The tile the worker has first, then those waiting. */
  private readonly queue: Queued[] = [];
  private readonly worker: Worker;

  constructor() {
    const script = workerScript("encode/openjpeg-worker");
    const workerData: J2kWorkerData = { claim: this.claim, pixels: this.pixels };
    // Named, so that a thread listing (top -H, /proc) shows the encodes and their priority.
    this.worker = new Worker(script.url, { execArgv: script.execArgv, workerData, name: "openjpeg" });
    this.worker.on("message", (reply: J2kReply) => this.answered(reply));
    const fail = (err: Error) => {
      if (current === this) current = undefined;
      for (const job of this.queue.splice(0)) job.reject(err);
    };
    this.worker.on("error", fail);
    this.worker.on("exit", (code) => fail(new Error(`the OpenJPEG worker exited (code ${code})`)));
  }

  /** Claims the thread for a tile: false once it has retired (it takes no more). */
  claimed(): boolean {
    return Atomics.compareExchange(this.claim, 0, IDLE, BUSY) !== RETIRED;
  }

  /** Encodes a tile on the thread, which must be claimed. */
  encode(job: TileJob): Promise<Uint8Array> {
    return new Promise((resolve, reject) => {
      this.queue.push({ ...job, resolve, reject });
      if (this.queue.length === 1) this.handOver();
    });
  }

  private answered(reply: J2kReply): void {
    const job = this.queue.shift()!;
    if ("error" in reply) job.reject(new Error(reply.error));
    else {
      this.memoryBytes = reply.memoryBytes;
      job.resolve(reply.codestream);
    }
    this.handOver();
  }

  /** Gives the worker the first tile still wanted; with none, lets the thread retire. */
  private handOver(): void {
    for (let first = this.queue[0]; first?.signal?.aborted; first = this.queue[0]) this.queue.shift()!.reject(first.signal.reason);
    const job = this.queue[0];
    if (!job) return this.idle();
    job.fill(this.pixels);
    this.worker.ref();
    this.worker.postMessage({ tile: job.tile } satisfies J2kRequest);
  }

  /** With no tile to code: a thread that grew is ended now; else it may retire once idle. */
  private idle(): void {
    // An idle worker does not keep the process alive.
    this.worker.unref();
    if (this.memoryBytes <= RECYCLE_MEMORY_BYTES) {
      Atomics.compareExchange(this.claim, 0, BUSY, IDLE);
      return;
    }
    Atomics.store(this.claim, 0, RETIRED);
    void this.worker.terminate();
  }
}

let current: EncoderThread | undefined;
const encoderThread = () => (current?.claimed() ? current : (current = new EncoderThread()));
