// The work memory a render takes at its peak, computed from the header alone before any pixel
// is fetched: the blocks it reads (stored and decoded) and the window they are copied into
// (Cog.windowCost), plus the resized output and the encoder's input and output buffers.
// It is what a public request reserves from the work budget, and a request whose estimate
// exceeds the whole budget is refused (413) without doing anything.

import type { ResolvedImageRequest } from "../shared/iiif/resolve";
import type { Cog } from "./cog/cog";
import { chooseLevel } from "../shared/levels";

/** Output bytes per pixel we account for: RGBA resize output plus the encoder's buffers. */
const OUTPUT_BYTES_PER_PIXEL = 4 * 2;

export function renderCost(cog: Cog, req: ResolvedImageRequest): number {
  const level = chooseLevel(cog.levels, req.region, req.width, req.height);
  return cog.windowCost(level, req.region) + req.width * req.height * OUTPUT_BYTES_PER_PIXEL;
}
