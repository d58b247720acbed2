// The worker thread that runs OpenJPEG (WebAssembly): an encode is synchronous CPU work of tens
// of milliseconds a tile and seconds for a large image, which on the main thread would stall
// every other request, heartbeat and deadline of the decoder. The module is instantiated once,
// when the worker starts; each message is one tile (tiled-codestream.ts), coded as an image of
// its own by an encoder object deleted afterwards so that its buffers return to the module's
// allocator: the module's memory stays at one tile's encode (WebAssembly memory never shrinks).
// Idle for IDLE_RETIRE_MS, the thread ends itself (encoder-claim.ts), and its memory returns.
// Messages: a J2kRequest in, a J2kReply out.

import { parentPort, workerData } from "node:worker_threads";
import createOpenJpeg, { type J2KEncoder } from "@cornerstonejs/codec-openjpeg/wasmjs";
import { IDLE, RETIRED } from "./encoder-claim";
import { runInBackground } from "../runtime/priority";

/** How to code a tile whose samples are in the tile buffer (J2kWorkerData). */
export interface J2kTile {
  width: number;
  height: number;
  components: 1 | 3;
  /** Reversible 5/3 wavelet, every bit kept; else the 9/7 wavelet at LOSSY_RATIO. */
  lossless: boolean;
  /** The whole image's wavelet levels. */
  decompositions: number;
  /** Where on its own reference grid the tile is coded (Tile's originX, originY). */
  originX: number;
  originY: number;
  /** Main-header bytes the tiled codestream keeps once: not taken out of this tile's budget. */
  sharedHeaderBytes: number;
}

/** What the owner starts the thread with, shared by the two: the claim word, the tile buffer. */
export interface J2kWorkerData {
  claim: Int32Array;
  /** The tile's interleaved 8-bit samples, packed row after row from the start. */
  pixels: Uint8Array;
}

export type J2kRequest = { tile: J2kTile };
/** `memoryBytes`: the module's WebAssembly memory after the encode. */
export type J2kReply = { codestream: Uint8Array; memoryBytes: number } | { error: string };

/**
 * The compression ratio of lossy answers against the raw samples: 1.6 bits per pixel for RGB,
 * about the size of a JPEG at quality 85, with no visible artefact on photographs or scans.
 */
const LOSSY_RATIO = 15;

/**
 * How long an idle worker lives on: about 60 MiB (the thread, and OpenJPEG's 50 MiB of
 * WebAssembly memory, most of it touched by one tile) against a start-up of about 0.3 s, paid by
 * the first jp2 after a quiet spell. A viewer's tiles come sooner than that one after another.
 */
const IDLE_RETIRE_MS = 10_000;

/** OpenJPEG's last message: it prints why an encode failed (when it says), then throws a bare C++ exception pointer. */
let lastMessage = "";
const keepMessage = (text: string) => (lastMessage = text.trim());
// An encode is seconds of CPU for a large image: it yields the CPU to the decoder's tiles.
runInBackground();
const codec = await createOpenJpeg({ print: keepMessage, printErr: keepMessage });

const { claim, pixels } = workerData as J2kWorkerData;
let retirement = setTimeout(retireWhenIdle, IDLE_RETIRE_MS);

/** Ends the thread if its owner waits for no tile (and so hands it none until it starts another). */
function retireWhenIdle(): void {
  if (Atomics.compareExchange(claim, 0, IDLE, RETIRED) === IDLE) process.exit(0);
  retirement = setTimeout(retireWhenIdle, IDLE_RETIRE_MS);
}

parentPort!.on("message", ({ tile }: J2kRequest) => {
  clearTimeout(retirement);
  retirement = setTimeout(retireWhenIdle, IDLE_RETIRE_MS);
  const encoder = new codec.J2KEncoder();
  lastMessage = "";
  try {
    const codestream = encodeWith(encoder, tile);
    const memoryBytes = codec.HEAPU8.buffer.byteLength;
    parentPort!.postMessage({ codestream, memoryBytes } satisfies J2kReply, [codestream.buffer as ArrayBuffer]);
  } catch (err) {
    parentPort!.postMessage({ error: err instanceof Error ? err.message : lastMessage } satisfies J2kReply);
  } finally {
    encoder.delete();
  }
});

/** Sets the encoder up for `tile`, encodes, and copies the codestream out. */
function encodeWith(encoder: J2KEncoder, tile: J2kTile): Uint8Array {
  const { width, height, components, originX, originY } = tile;
  const samples = width * height * components;
  // The grid's far edge is the frame's size; OpenJPEG reads the tile's samples packed from the
  // start of the frame's buffer (its one tile is the image, whatever the frame's width).
  const frame = { width: originX + width, height: originY + height, componentCount: components, bitsPerSample: 8, isSigned: false };
  encoder.getDecodedBuffer(frame).set(pixels.subarray(0, samples));
  if (originX || originY) encoder.setImageOffset({ x: originX, y: originY });
  encoder.setDecompositions(tile.decompositions);
  encoder.setQuality(tile.lossless, 1);
  // A ratio of 0 is OpenJPEG's "no rate limit": with the 5/3 wavelet, every bit is kept. Else
  // OpenJPEG takes the main header out of the tile's bytes: the shared part is given back.
  encoder.setCompressionRatio(0, tile.lossless ? 0 : samples / (samples / LOSSY_RATIO + tile.sharedHeaderBytes));
  encoder.encode();
  // The view is into WebAssembly memory, which the next encode reuses: copy it out.
  return encoder.getEncodedBuffer().slice();
}
