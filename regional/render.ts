// Renders a resolved IIIF request from an opened COG: pick the level, read the window,
// scale to exactly the requested size, encode. What the grammar accepts but this decoder
// does not do yet is a 501 naming the feature, checked before any read.

import sharp from "sharp";
import { unsupported } from "../shared/errors";
import type { ResolvedImageRequest } from "../shared/iiif/resolve";
import type { Cog } from "./cog/cog";
import { chooseLevel } from "./cog/levels";
import type { Reservation } from "./work-budget";

/** JPEG quality of encoded answers. */
const JPEG_QUALITY = 85;

const CONTENT_TYPES: Partial<Record<ResolvedImageRequest["format"], string>> = {
  jpg: "image/jpeg",
};

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

/** Throws 501 for valid requests this decoder cannot render yet. */
export function checkSupported(req: ResolvedImageRequest): void {
  if (req.mirror) throw unsupported("mirroring is not supported yet");
  if (req.degrees !== 0) throw unsupported(`rotation ${req.degrees} is not supported yet`);
  if (req.quality !== "default" && req.quality !== "color") {
    throw unsupported(`quality ${req.quality} is not supported yet`);
  }
  if (!CONTENT_TYPES[req.format]) throw unsupported(`format ${req.format} is not supported yet`);
}

/** `work`: the request's admitted work reservation (else the read reserves its own, fail-fast). */
export async function render(cog: Cog, req: ResolvedImageRequest, signal?: AbortSignal, work?: Reservation): Promise<RenderedImage> {
  checkSupported(req);
  const level = chooseLevel(cog.levels, req.region, req.width, req.height);
  const pixels = await cog.readWindow(level, req.region, signal, work);
  signal?.throwIfAborted();
  const body = await sharp(pixels.data, {
    raw: { width: pixels.width, height: pixels.height, channels: pixels.channels },
  })
    .resize(req.width, req.height, { fit: "fill", kernel: "lanczos3" })
    // JPEG has no alpha: composite on white rather than showing premultiplied black.
    .flatten({ background: "#ffffff" })
    // No Huffman optimisation: it is a second entropy pass costing ~40% of a tile's encode for
    // ~5% fewer bytes; tiles are cached at the edge, so encode time is what matters here.
    .jpeg({ quality: JPEG_QUALITY, mozjpeg: false, optimiseCoding: false })
    .toBuffer();
  signal?.throwIfAborted();
  return { body, contentType: CONTENT_TYPES[req.format]! };
}
