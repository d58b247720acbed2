// The degraded image of a restricted source, `{id}~degraded`: an image service of its own that
// anyone may see, the source scaled to `degradedWidth` pixels wide. It is an image of that size
// to every client (its info.json, its regions, its tiles), so viewers show it as they show any
// image; each request maps onto the source's pixels, at no more than the degraded resolution:
// detail finer than it, in a small region or by upscaling, is 401 (the probe named).
import { HttpError } from "../../shared/errors";
import type { ImageLimits, Rect, ResolvedImageRequest } from "../../shared/iiif/resolve";
import type { SourceInfo } from "../../shared/protocol";

/** The degraded image's metadata: its own size, and the source's levels smaller than it. */
export function degradedInfo(info: SourceInfo, degradedWidth: number): SourceInfo {
  const width = Math.min(degradedWidth, info.width);
  const height = Math.max(1, Math.round((info.height * width) / info.width));
  const smaller = info.levels.filter((level) => level.width < width);
  return { ...info, width, height, levels: [{ width, height }, ...smaller] };
}

/**
 * The request on the degraded image (resolved against `degraded`, its own limits) as a request
 * for the source's pixels, at the same output size: a region x0..x1 of the degraded image is the
 * source's round(x0·k)..round(x1·k), so neighbouring tiles share their edges. 401 (`refused`)
 * for output finer than the degraded image's own pixels.
 */
export function onSource(asked: ResolvedImageRequest, degraded: ImageLimits, info: SourceInfo, refused: () => HttpError): ResolvedImageRequest {
  const { region, width, height } = asked;
  if (width > region.w || height > region.h) throw refused();
  const kx = info.width / degraded.width;
  const ky = info.height / degraded.height;
  const x = Math.round(region.x * kx);
  const y = Math.round(region.y * ky);
  const mapped: Rect = {
    x,
    y,
    w: Math.max(1, Math.min(info.width, Math.round((region.x + region.w) * kx)) - x),
    h: Math.max(1, Math.min(info.height, Math.round((region.y + region.h) * ky)) - y),
  };
  return { ...asked, region: mapped };
}
