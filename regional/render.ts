// Renders a resolved IIIF request from an opened COG, in the order the Image API defines:
// region (read at the best stored level) → size → mirror → rotation → quality → format.

import sharp, { type Sharp } from "sharp";
import type { ResolvedImageRequest } from "../shared/iiif/resolve";
import type { Cog } from "./cog/cog";
import { chooseLevel } from "../shared/levels";
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
  const level = chooseLevel(cog.levels, req.region, req.width, req.height);
  const pixels = await cog.readWindow(level, req.region, signal, work);
  signal?.throwIfAborted();
  let img = sharp(pixels.data, {
    raw: { width: pixels.width, height: pixels.height, channels: pixels.channels },
  }).resize(req.width, req.height, { fit: "fill", kernel: "lanczos3" });
  if (req.mirror || req.degrees !== 0) img = await orient(img, req, encoder);
  img = quality(img, req);
  // Formats without alpha are composited on white rather than showing premultiplied black.
  if (!encoder.alpha) img = img.flatten({ background: WHITE });
  const body = await encoder.encode(img);
  signal?.throwIfAborted();
  return { body, contentType: encoder.contentType };
}

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
