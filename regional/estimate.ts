// The decoder's precise peak-memory estimate for a request (shared/cost.ts's formula with the
// opened source's real channel count), returned to the admission DO in ESTIMATE_HEADER so it
// can count where the edge's coarse verdict disagreed.
import { estimateRequest } from "../shared/cost";
import type { ResolvedImageRequest } from "../shared/iiif/resolve";
import type { Cog } from "./cog/cog";

const RGB = 2;
const BLACK_IS_ZERO = 1;

export function preciseEstimate(cog: Cog, req: ResolvedImageRequest): number {
  const full = cog.levels[0];
  const photometric = full.image.getFileDirectory().getValue("PhotometricInterpretation");
  // RGB and grey are read as stored (colour + alpha); every other model is converted to RGB.
  const stored = photometric === RGB || photometric === BLACK_IS_ZERO;
  const channels = stored ? Math.min(full.image.getSamplesPerPixel(), 4) : 3;
  return estimateRequest({ levels: cog.levels, tileWidth: full.tileWidth, tileHeight: full.tileHeight }, req, channels);
}
