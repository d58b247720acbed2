// JPEG answers straight from decoded pixels with TurboJPEG, for the common tile request that
// needs no libvips step at all: JPEG out, no rotation or mirror, default/color quality, the
// output exactly the window read at the chosen level (no resize), gray or RGB samples (no
// alpha to flatten). A window inside one cached block is encoded in place (TurboJPEG's row
// stride), without a copy, and the JPEG is written into a pooled buffer that is sent as it is
// and taken back once the answer is written: a tile allocates no memory of its own, so the
// garbage collector has nothing to chase. Measured on one core: 0.25 ms for a 256² tile
// against ~0.8 ms through a sharp pipeline. Anything else, and a window large enough to be
// read in bands, returns undefined and goes to render.ts (libvips).

import jpegTurbo from "@julusian/jpeg-turbo";
import type { ResolvedImageRequest } from "../../shared/iiif/resolve";
import type { Cog } from "../cog/cog";
import { chooseLevel, windowAtLevel } from "../../shared/levels";
import { rendersInStrips } from "../../shared/cost";
import { compactWindow, type PixelView } from "../cog/pixels";
import type { EncodedAnswer } from "./prepared-decode";
import { BufferPool } from "../runtime/buffer-pool";
import type { Reservation } from "../runtime/work-budget";

// CommonJS whose exports Node's ESM loader cannot detect statically: take them off the default.
const { bufferSize, compress, FORMAT_GRAY, FORMAT_RGB, SAMP_420, SAMP_GRAY } = jpegTurbo;

/** As render.ts's JPEG answers. */
const JPEG_QUALITY = 85;

/**
 * Worst-case output buffers, reused. TurboJPEG encodes into a buffer of its worst-case size
 * (~200 KB for a 256² tile whose JPEG is ~25 KB); allocating one per tile (or copying the
 * JPEG out of it) made V8 run a full GC every few dozen requests. At most 16 buffers of at most
 * 1 MiB are kept, one per answer being written at once; `allocated` counts the rest
 * (tessera_decoder_jpeg_buffers_allocated_total).
 */
export const jpegBuffers = new BufferPool(16, 1 << 20);

/**
 * The answer to `req` encoded by TurboJPEG, or undefined when it needs libvips. Its body lies in
 * a pooled buffer: `done` gives it back once the body is written, and the memory it holds is its
 * whole `body.buffer`.
 */
export async function renderDirectJpeg(
  cog: Cog,
  req: ResolvedImageRequest,
  signal: AbortSignal,
  work: Reservation,
): Promise<EncodedAnswer | undefined> {
  if (req.format !== "jpg" || req.mirror || req.degrees !== 0) return undefined;
  const index = chooseLevel(cog.levels, req.region, req.width, req.height);
  const level = cog.levels[index];
  const channels = level.blocks?.layout.channels;
  if (channels !== 1 && channels !== 3) return undefined;
  if (req.quality !== "default" && !(req.quality === "color" && channels === 3)) return undefined;
  const window = windowAtLevel(cog.levels[0], level, req.region);
  const [x0, y0, x1, y1] = window;
  // A large window is read in bands by render.ts, never whole.
  if (x1 - x0 !== req.width || y1 - y0 !== req.height || rendersInStrips(window)) return undefined;
  const view = await cog.readWindowView(index, req.region, signal, work);
  try {
    signal.throwIfAborted();
    return { ...(await encode(view)), contentType: "image/jpeg" };
  } finally {
    view.release?.(); // the block may be recycled once evicted: nothing reads it after the encode
  }
}

async function encode(view: PixelView): Promise<{ body: Buffer; done: () => void }> {
  const { crop, channels, data } = view;
  const offset = (crop.top * view.width + crop.left) * channels;
  // TurboJPEG wants `stride × height` samples after the window's first pixel; a window at the
  // block's bottom edge and right of its left edge ends short of that unless the block's memory
  // has a row to spare past its end (blocks decoded here do), else it is copied out.
  const room = data.buffer.byteLength - data.byteOffset - offset;
  const inPlace = room >= view.width * crop.height * channels;
  const input = inPlace ? Buffer.from(data.buffer, data.byteOffset + offset, room) : toBuffer(compactWindow(view).data);
  const gray = channels === 1;
  const options = {
    width: crop.width,
    height: crop.height,
    stride: inPlace ? view.width : crop.width, // pixels per row of `input`
    format: gray ? FORMAT_GRAY : FORMAT_RGB,
    subsampling: gray ? SAMP_GRAY : SAMP_420, // as sharp's default
    quality: JPEG_QUALITY,
  };
  const out = jpegBuffers.take(bufferSize(options));
  try {
    return { body: await compress(input, out, options), done: () => jpegBuffers.giveBack(out) };
  } catch (e) {
    jpegBuffers.giveBack(out);
    throw e;
  }
}

const toBuffer = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength);
