// Renders a resolved IIIF request from an opened COG, in the order the Image API defines:
// region (read at the best stored level) → size → mirror → rotation → quality → format.
// A large window is read and reduced a band of block rows at a time (see `inBands`), so its
// memory follows the output, not the source; shared/cost.ts decides which and counts it.

import sharp, { type Sharp } from "sharp";
import type { ResolvedImageRequest } from "../shared/iiif/resolve";
import type { Cog, LevelWindow } from "./cog/cog";
import { compactWindow, type Pixels } from "./cog/pixels";
import { chooseLevel, windowAtLevel } from "../shared/levels";
import { bandRows, rendersInStrips } from "../shared/cost";
import { encoderFor, type Encoder } from "./encode/formats";
import type { Reservation } from "./work-budget";

export interface RenderedImage {
  body: Buffer;
  contentType: string;
}

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

/** Throws 501 for valid requests this decoder cannot render, before any read. */
export function checkSupported(req: ResolvedImageRequest): void {
  encoderFor(req.format);
}

const WHITE = { r: 255, g: 255, b: 255, alpha: 1 };
const TRANSPARENT = { r: 0, g: 0, b: 0, alpha: 0 };

/** `work`: the request's admitted work reservation (else the read reserves its own, fail-fast). */
export async function render(
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
  const body = await encoder.encode(img);
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
 * A large window, a band of whole block rows at a time: each band is read and reduced to the
 * output width into one buffer of every band's rows, which libvips then reduces to the output
 * height while it encodes. Rows are independent under a horizontal resize, so bands need no
 * overlap and meet without seams; the result differs from one 2-D resize of the whole window
 * only where the two orders of the passes round and clip differently (within ±1 almost
 * everywhere; test/unit/regional-strips.test.ts). Peak: one band, plus output width × window
 * height, instead of the whole window twice.
 */
async function inBands(
  cog: Cog,
  level: number,
  [x0, y0, x1, y1]: LevelWindow,
  req: ResolvedImageRequest,
  signal?: AbortSignal,
  work?: Reservation,
): Promise<Sharp> {
  const band = bandRows(cog.levels[level].tileHeight);
  const width = req.width;
  const resizes = x1 - x0 !== width;
  let rows: Buffer | undefined;
  // Once the channel count is known (first band), bands are read into memory already touched:
  // the rows themselves when no resize is needed, else one reused band. Fresh pages cost more
  // to fault in than the copy itself.
  let scratch: Uint8Array | undefined;
  let channels: Pixels["channels"] = 3;
  for (let top = y0; top < y1; top = nextBand(top, band, y1)) {
    const bottom = nextBand(top, band, y1);
    const at = (top - y0) * width * channels; // 0 for the first band, whatever the channels
    const into = resizes ? scratch : rows?.subarray(at);
    const pixels = compactWindow(await cog.readLevelWindow(level, [x0, top, x1, bottom], signal, work, into));
    signal?.throwIfAborted();
    channels = pixels.channels;
    rows ??= Buffer.allocUnsafe(width * (y1 - y0) * channels);
    if (pixels.data.buffer !== rows.buffer) rows.set(await toWidth(pixels, width), at);
    if (resizes) scratch ??= new Uint8Array(band * (x1 - x0) * channels);
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
