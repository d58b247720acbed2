// Renders a resolved IIIF request from an opened COG, in the order the Image API defines:
// region (read at the best stored level) → size → mirror → rotation → quality → format.
// A large window is read and resized a band at a time (see `inBands`), so its memory follows
// the output, not the source; shared/cost.ts decides which and counts it. Work of the full
// partition runs in the render pool's processes (render-pool.ts), the rest on the calling thread.

import sharp, { type Sharp } from "sharp";
import type { ResolvedImageRequest } from "../../shared/iiif/resolve";
import type { Cog, LevelWindow } from "../cog/cog";
import { compactWindow, type Pixels } from "../cog/pixels";
import { chooseLevel, windowAtLevel } from "../../shared/levels";
import { bandRows, exactBands, rendersInStrips, type BandStep, type Partition } from "../../shared/cost";
import { encoderFor, type Encoder } from "../encode/formats";
import { renderDirectJpeg } from "./jpeg-encode";
import type { EncodedAnswer } from "./prepared-decode";
import type { Reservation } from "../runtime/work-budget";

/** An answer with no pooled memory to give back: what a render process can hand over. */
export type RenderedImage = Pick<EncodedAnswer, "body" | "contentType">;

/**
 * Configures libvips for a service that schedules its own work. Call once at decoder start.
 * - concurrency(1): each request runs on one libvips thread; the decoder's capacity (and
 *   later its request limiter and work budget) decides how many run at once, so libvips must
 *   not multiply every request by the core count behind the scheduler's back.
 * - cache(false): the libvips operation cache keeps recent images and results alive, memory
 *   the work budget cannot see; every request here reads fresh pixels anyway.
 */
export function configureSharp(): void {
  sharp.concurrency(1);
  sharp.cache(false);
}

const WHITE = { r: 255, g: 255, b: 255, alpha: 1 };
const TRANSPARENT = { r: 0, g: 0, b: 0, alpha: 0 };

/**
 * The cheapest way to answer `req`, in the right place. `work`: the request's admitted work
 * reservation; a decode of the full partition (by its memory or its work) renders in the render
 * pool's processes, off the event loop. Without one (a direct call), the read reserves its own,
 * fail-fast, and libvips renders.
 */
export async function render(cog: Cog, req: ResolvedImageRequest, signal?: AbortSignal, work?: Reservation, partition: Partition = "tile"): Promise<EncodedAnswer> {
  if (!work) return renderHere(cog, req, signal);
  if (partition === "full") {
    // Loaded here, not above: the pool's processes run renderCheapest and never load the pool.
    const { renderInPool } = await import("./render-pool");
    return renderInPool(cog, req, signal ?? NEVER_ABORTED, work);
  }
  return renderCheapest(cog, req, signal ?? NEVER_ABORTED, work);
}

const NEVER_ABORTED = new AbortController().signal;

/** A TurboJPEG encode of the decoded pixels when that is all it takes (jpeg-encode.ts), else libvips. */
export async function renderCheapest(cog: Cog, req: ResolvedImageRequest, signal: AbortSignal, work: Reservation): Promise<EncodedAnswer> {
  return (await renderDirectJpeg(cog, req, signal, work)) ?? renderHere(cog, req, signal, work);
}

/** The render itself, on the calling thread. */
export async function renderHere(
  cog: Cog,
  req: ResolvedImageRequest,
  signal?: AbortSignal,
  work?: Reservation,
): Promise<RenderedImage> {
  const encoder = encoderFor(req.format);
  let img = await sized(cog, req, signal, work);
  if (req.mirror || req.degrees !== 0) img = await orient(img, req, encoder);
  img = quality(img, req);
  // Formats without alpha are composited on white rather than showing premultiplied black.
  if (!encoder.alpha) img = img.flatten({ background: WHITE });
  const body = await encoder.encode(img, req.quality, signal);
  signal?.throwIfAborted();
  return { body, contentType: encoder.contentType };
}

const RESIZE = { fit: "fill", kernel: "lanczos3" } as const;

/** The region at the level read, resized to the output size: read whole, or in bands when large. */
async function sized(cog: Cog, req: ResolvedImageRequest, signal?: AbortSignal, work?: Reservation): Promise<Sharp> {
  const level = chooseLevel(cog.levels, req.region, req.width, req.height);
  const window = windowAtLevel(cog.levels[0], cog.levels[level], req.region);
  if (rendersInStrips(window)) return inBands(cog, level, window, req, signal, work);
  const pixels = await cog.readWindow(level, req.region, signal, work);
  signal?.throwIfAborted();
  return sharp(pixels.data, { raw: rawOf(pixels) }).resize(req.width, req.height, RESIZE);
}

/**
 * A large window, a band at a time, so that memory follows the output, not the window: in exact
 * bands when the height ratio allows (see exactBands), else as rows reduced across first.
 */
function inBands(
  cog: Cog,
  level: number,
  window: LevelWindow,
  req: ResolvedImageRequest,
  signal?: AbortSignal,
  work?: Reservation,
): Promise<Sharp> {
  const band = bandRows(cog.levels[level].tileHeight);
  const step = exactBands(window[2] - window[0], window[3] - window[1], req.width, req.height, band);
  const read = bandReader(cog, level, window, step ? step.rows + 2 * step.halo : band, signal, work);
  return step ? inExactBands(read, window, req, step) : inReducedRows(read, band, window, req);
}

/** Reads window rows [top, bottom) of a level: into `into`, else into one band's buffer reused. */
type BandRead = (top: number, bottom: number, into?: Uint8Array) => Promise<Pixels>;

function bandReader(cog: Cog, level: number, [x0, , x1]: LevelWindow, maxRows: number, signal?: AbortSignal, work?: Reservation): BandRead {
  // Fresh pages cost more to fault in than the copy itself: bands after the first (which tells
  // the channel count) reuse one buffer.
  let scratch: Uint8Array | undefined;
  let channels: number | undefined;
  return async (top, bottom, into) => {
    const target = into ?? (channels ? (scratch ??= new Uint8Array(maxRows * (x1 - x0) * channels)) : undefined);
    const pixels = compactWindow(await cog.readLevelWindow(level, [x0, top, x1, bottom], signal, work, target));
    signal?.throwIfAborted();
    channels = pixels.channels;
    return pixels;
  };
}

/**
 * Each band, with `halo` rows of context on each side, resized in both directions; its own rows
 * of the result are exactly those of one resize of the whole window (the band starts on a period
 * boundary of the height ratio, and the halo covers the kernel), copied into the output.
 * Peak: the output, plus one band with its halo and its resized rows.
 */
async function inExactBands(read: BandRead, [, y0, , y1]: LevelWindow, req: ResolvedImageRequest, step: BandStep): Promise<Sharp> {
  const { width, height } = req;
  const outRows = (rows: number) => (rows * step.outPeriod) / step.period; // whole rows: rows are whole periods
  let out: Buffer | undefined;
  let channels: Pixels["channels"] = 3;
  for (let top = y0, row = 0; top < y1; top += step.rows, row += step.outRows) {
    const from = Math.max(y0, top - step.halo);
    const to = Math.min(y1, top + step.rows + step.halo);
    const pixels = await read(from, to);
    channels = pixels.channels;
    out ??= Buffer.allocUnsafe(width * height * channels);
    const made = await sharp(pixels.data, { raw: rawOf(pixels) }).resize(width, outRows(to - from), RESIZE).raw().toBuffer();
    const skip = outRows(top - from) * width * channels;
    const keep = Math.min(step.outRows, height - row) * width * channels;
    out.set(made.subarray(skip, skip + keep), row * width * channels);
  }
  return sharp(out!, { raw: { width, height, channels } });
}

/**
 * Bands of whole block rows, each reduced to the output width into one buffer of every band's
 * rows, which libvips then reduces to the output height while it encodes. Rows are independent
 * under a horizontal resize, so bands meet without seams; the result differs from one 2-D
 * resize of the whole window only where the two orders of the passes round and clip differently
 * (within ±1 almost everywhere). Peak: one band, plus output width × window height.
 */
async function inReducedRows(read: BandRead, band: number, [x0, y0, x1, y1]: LevelWindow, req: ResolvedImageRequest): Promise<Sharp> {
  const width = req.width;
  const resizes = x1 - x0 !== width;
  let rows: Buffer | undefined;
  let channels: Pixels["channels"] = 3;
  for (let top = y0; top < y1; top = nextBand(top, band, y1)) {
    const at = (top - y0) * width * channels; // 0 for the first band, whatever the channels
    // Unresized, a band is read straight into its place in the rows.
    const pixels = await read(top, nextBand(top, band, y1), resizes ? undefined : rows?.subarray(at));
    channels = pixels.channels;
    rows ??= Buffer.allocUnsafe(width * (y1 - y0) * channels);
    if (pixels.data.buffer !== rows.buffer) rows.set(await toWidth(pixels, width), at);
  }
  return sharp(rows!, { raw: { width, height: y1 - y0, channels } }).resize(width, req.height, RESIZE);
}

/** The band boundary after `top`: bands start at multiples of `band` rows of the level. */
const nextBand = (top: number, band: number, end: number) => Math.min(end, (Math.floor(top / band) + 1) * band);

/** A band's rows resized to `width` (as they are when already that wide). */
async function toWidth(pixels: Pixels, width: number): Promise<Uint8Array> {
  if (pixels.width === width) return pixels.data;
  return sharp(pixels.data, { raw: rawOf(pixels) }).resize(width, pixels.height, RESIZE).raw().toBuffer();
}

const rawOf = ({ width, height, channels }: Pixels) => ({ width, height, channels });

/**
 * Mirror, then rotate clockwise. A second pipeline, because sharp orders its own operations
 * (rotation before resize) and IIIF needs the rotation applied to the sized image.
 */
async function orient(img: Sharp, req: ResolvedImageRequest, encoder: Encoder): Promise<Sharp> {
  const { data, info } = await img.raw().toBuffer({ resolveWithObject: true });
  let out = sharp(data, { raw: { width: info.width, height: info.height, channels: info.channels } });
  if (req.mirror) out = out.flop();
  if (req.degrees === 0) return out;
  if (req.degrees % 90 === 0) return out.rotate(req.degrees);
  // Arbitrary angles grow the canvas; the corners are transparent where the format allows.
  return (encoder.alpha ? out.ensureAlpha() : out).rotate(req.degrees, {
    background: encoder.alpha ? TRANSPARENT : WHITE,
  });
}

function quality(img: Sharp, req: ResolvedImageRequest): Sharp {
  // toColourspace("b-w") makes the output one channel; grayscale() alone keeps three.
  if (req.quality === "gray") return img.toColourspace("b-w");
  if (req.quality === "bitonal") return img.threshold(128).toColourspace("b-w");
  return img;
}
