// The work memory a render takes at its peak: the one cost formula of both tiers (shared/cost.ts's
// estimateRequest), fed with what the decoder knows once the header is open: the source's real
// channel count and block layout. Computed before any pixel is fetched, it is what a request
// reserves from the work budget, what it checks against the admission DO's grant, and what the
// answer reports to the DO in ESTIMATE_HEADER.

import { estimateRequest } from "../../shared/cost";
import type { ResolvedImageRequest } from "../../shared/iiif/resolve";
import type { Cog } from "../cog/cog";

export function renderCost(cog: Cog, req: ResolvedImageRequest): number {
  const full = cog.levels[0];
  return estimateRequest({ levels: cog.levels, tileWidth: full.tileWidth, tileHeight: full.tileHeight }, req, cog.channels);
}
