// GET /v1/image/{id}/{region}/{size}/{rotation}/{quality}.{format}?version=V: an IIIF image of the
// pinned snapshot, its parts the canonical IIIF 3.0 ones the edge resolved. Syntax first (400
// before any I/O); then the request resolved against the source, costed and run as every decode
// is; the cheapest way first: the stored tile itself, else a render.
import { IMAGE_WORK_HELP, type Partition } from "../../shared/cost";
import { parseImageRequest } from "../../shared/iiif/image-request";
import { resolveImageRequest, type ResolvedImageRequest } from "../../shared/iiif/resolve";
import { mosaicIsMapOnly } from "../../shared/maps/mosaic-json";
import type { Cog } from "../cog/cog";
import type { DecoderContext } from "../decoder";
import type { Handler } from "../http/router";
import { Mosaic } from "../mosaic/mosaic";
import { passthroughTile, storedTile } from "../render/passthrough";
import type { PreparedDecode } from "../render/prepared-decode";
import { render } from "../render/render";
import { renderCost } from "../render/work-estimate";
import type { Reservation } from "../runtime/work-budget";
import { runDecode } from "./decode";
import { withSnapshot } from "./snapshot";

type ImageParams = { id: string; region: string; size: string; rotation: string; qualityFormat: string };

export const image: Handler<ImageParams> = ({ params, version, signal, grant }, decoder) => {
  const { id, ...parts } = params;
  const parsed = parseImageRequest(parts, 3);
  return withSnapshot(decoder, id, version, signal, async (cog) => {
    if (cog instanceof Mosaic) throw mosaicIsMapOnly(id);
    // Sources of other than 8-bit samples are map tiles only.
    if (cog.imageRefusal) throw cog.imageRefusal;
    // `max` resolves within what this decoder can render; explicit sizes are the edge's to
    // hold to the declared limits (400) and the work budget's to refuse (413).
    const resolved = resolveImageRequest(parsed, parsed.size.kind === "max" ? cog.limits : cog);
    const prepared: PreparedDecode = {
      cost: renderCost(cog, resolved),
      what: `${id} ${parts.region}/${parts.size}`,
      workHelp: IMAGE_WORK_HELP,
      render: (s, work, partition) => renderImage(decoder, cog, resolved, s, work, partition),
    };
    return runDecode(decoder, cog, prepared, signal, grant);
  });
};

/** Cheapest first: the stored tile itself, else render/render.ts (a TurboJPEG encode of cached pixels, libvips). */
async function renderImage(decoder: DecoderContext, cog: Cog, resolved: ResolvedImageRequest, signal: AbortSignal, work: Reservation, partition: Partition) {
  const tile = passthroughTile(cog, resolved);
  if (!tile) return render(cog, resolved, signal, work, partition);
  decoder.metrics.passthrough.inc();
  return storedTile(cog, tile, signal);
}
