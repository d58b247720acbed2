// What a render costs: the one cost formula of both tiers (shared/cost.ts's peak memory,
// shared/work.ts's work), fed with what the decoder knows once the header is open: the source's
// real channels, block layout (the samples a block stores) and codec (a JPEG block counts in
// whole MCUs). Computed before any pixel is fetched, it is what a
// request reserves from the work budget, what it checks against the admission DO's grant, and
// what the answer reports to the DO.

import { estimateRequest, type Cost } from "../../shared/cost";
import type { ResolvedImageRequest } from "../../shared/iiif/resolve";
import { imageWork } from "../../shared/work";
import type { Cog } from "../cog/cog";

export function renderCost(cog: Cog, req: ResolvedImageRequest): Cost {
  const full = cog.levels[0];
  const source = { levels: cog.levels, tileWidth: full.tileWidth, tileHeight: full.tileHeight, codec: cog.codec, blockSamples: cog.blockSamples };
  return {
    bytes: estimateRequest(source, req, cog.channels),
    work: imageWork({ ...source, channels: cog.channels, ...req }),
  };
}
