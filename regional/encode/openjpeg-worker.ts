// The worker thread that runs OpenJPEG (WebAssembly): an encode is synchronous CPU work of tens
// of milliseconds a tile and seconds for a large image, which on the main thread would stall
// every other request, heartbeat and deadline of the decoder. The module is instantiated once,
// when the worker starts; each encode has its own encoder object, deleted afterwards so its
// buffers return to the module's allocator (WebAssembly memory itself never shrinks: it stays
// at the largest encode's). Messages: a J2kRequest in, a J2kReply out.

import { parentPort } from "node:worker_threads";
import createOpenJpeg, { type J2KEncoder } from "@cornerstonejs/codec-openjpeg/wasmjs";

export interface J2kInput {
  /** Interleaved 8-bit samples, row by row. */
  pixels: Uint8Array;
  width: number;
  height: number;
  components: 1 | 3;
  /** Reversible 5/3 wavelet, every bit kept; else the 9/7 wavelet at LOSSY_RATIO. */
  lossless: boolean;
}

export type J2kRequest = { id: number; input: J2kInput };
export type J2kReply = { id: number; codestream: Uint8Array } | { id: number; error: string };

/**
 * The compression ratio of lossy answers against the raw samples: 1.6 bits per pixel for RGB,
 * about the size of a JPEG at quality 85, with no visible artefact on photographs or scans.
 */
const LOSSY_RATIO = 15;
/** Wavelet levels, as OpenJPEG's default; fewer for images too small to halve that often. */
const MAX_DECOMPOSITIONS = 5;

/** OpenJPEG's last message: it prints why an encode failed (when it says), then throws a bare C++ exception pointer. */
let lastMessage = "";
const keepMessage = (text: string) => (lastMessage = text.trim());
const codec = await createOpenJpeg({ print: keepMessage, printErr: keepMessage });

parentPort!.on("message", ({ id, input }: J2kRequest) => {
  const encoder = new codec.J2KEncoder();
  lastMessage = "";
  try {
    const codestream = encodeWith(encoder, input);
    parentPort!.postMessage({ id, codestream } satisfies J2kReply, [codestream.buffer as ArrayBuffer]);
  } catch (err) {
    const reason = err instanceof Error ? err.message : lastMessage;
    const error = `OpenJPEG could not encode a ${input.width}x${input.height} image${reason ? `: ${reason}` : ""}`;
    parentPort!.postMessage({ id, error } satisfies J2kReply);
  } finally {
    encoder.delete();
  }
});

/** Sets the encoder up for `input`, encodes, and copies the codestream out. */
function encodeWith(encoder: J2KEncoder, input: J2kInput): Uint8Array {
  const { pixels, width, height, components } = input;
  encoder.getDecodedBuffer({ width, height, componentCount: components, bitsPerSample: 8, isSigned: false }).set(pixels);
  encoder.setDecompositions(Math.min(MAX_DECOMPOSITIONS, Math.floor(Math.log2(Math.min(width, height)))));
  encoder.setQuality(input.lossless, 1);
  // A ratio of 0 is OpenJPEG's "no rate limit": with the 5/3 wavelet, every bit is kept.
  encoder.setCompressionRatio(0, input.lossless ? 0 : LOSSY_RATIO);
  encoder.encode();
  // The view is into WebAssembly memory, which the next encode reuses: copy it out.
  return encoder.getEncodedBuffer().slice();
}
