// JPEG 2000 codestreams from 8-bit pixels, with OpenJPEG built to WebAssembly (libvips here has
// no JPEG 2000 encoder). The module is instantiated once per process, on the first jp2 answer;
// each encode has its own encoder object, deleted afterwards so its buffers return to the
// module's allocator (WebAssembly memory itself never shrinks: it stays at the largest encode's).

import createOpenJpeg, { type J2KEncoder, type OpenJpegModule } from "@cornerstonejs/codec-openjpeg/wasmjs";

export interface J2kInput {
  /** Interleaved 8-bit samples, row by row. */
  pixels: Uint8Array;
  width: number;
  height: number;
  components: 1 | 3;
  /** Reversible 5/3 wavelet, every bit kept; else the 9/7 wavelet at LOSSY_RATIO. */
  lossless: boolean;
}

/**
 * The compression ratio of lossy answers against the raw samples: 1.6 bits per pixel for RGB,
 * about the size of a JPEG at quality 85, with no visible artefact on photographs or scans.
 */
export const LOSSY_RATIO = 15;
/** Wavelet levels, as OpenJPEG's default; fewer for images too small to halve that often. */
const MAX_DECOMPOSITIONS = 5;

let openJpeg: Promise<OpenJpegModule> | undefined;
/** OpenJPEG's last message: it prints why an encode failed, and throws a bare C++ exception pointer. */
let lastMessage = "";
const keepMessage = (text: string) => (lastMessage = text.trim());

/** The J2K codestream (FF4F FF51 …) of `input`. */
export async function encodeJ2k(input: J2kInput): Promise<Uint8Array> {
  const codec = await (openJpeg ??= createOpenJpeg({ print: keepMessage, printErr: keepMessage }));
  const encoder = new codec.J2KEncoder();
  try {
    return encodeWith(encoder, input);
  } catch (err) {
    throw err instanceof Error ? err : new Error(`OpenJPEG could not encode a ${input.width}x${input.height} image: ${lastMessage}`);
  } finally {
    encoder.delete();
  }
}

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
