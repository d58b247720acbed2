// GET /point/{id}/{x},{y}: the values at a point, titiler's /point. Parse (400 before the source is
// looked up) → the source as a map, under the same access rule as its tiles → a lon/lat point
// outside its bounds 404 from the edge alone → the canonical
// point through the cache, admission (costed as one block an asset, a tile's partition) and the
// decoder, as a tile is.
import type { IRequest } from "itty-router";
import { ASSUMED_CHANNELS } from "../../shared/cost";
import { notFound } from "../../shared/errors";
import { holdsPoint } from "../../shared/maps/antimeridian";
import { canonicalPoint, DEFAULT_COORD_CRS, parsePointRequest } from "../../shared/maps/point-request";
import { mosaicPointCost, pointCost } from "../../shared/maps/tile-cost";
import { segment } from "../../shared/path-segment";
import type { SourceInfo } from "../../shared/protocol";
import { cacheControlFor } from "../access/gate";
import { coarseCost } from "../admission-client";
import { edgeConfig, type Env } from "../env";
import { bytesCacheControl } from "../http-cache";
import { cachedDecode } from "./cached-decode";
import type { SourceHandler } from "./follow-version";
import { georeferencedSource } from "./map-source";
import { pathId, publicBase, type SourceRef } from "./params";

export const pointHandler: SourceHandler = async (source: SourceRef, req: IRequest, env: Env, ctx: ExecutionContext) => {
  const config = edgeConfig(env);
  const point = parsePointRequest(segment(req.params.coords, "point"), new URL(req.url).searchParams);
  const { info, georeference, restriction } = await georeferencedSource(source, req, env, config, ctx);
  // A lon/lat point outside the bounds is outside the data: answered here, without admission.
  if (point.coordCrs === DEFAULT_COORD_CRS && !holdsPoint(georeference.lonLatBounds, point.x, point.y)) {
    throw notFound(`point (${point.x}, ${point.y}) is outside the data`);
  }
  const canonical = canonicalPoint(point);
  return cachedDecode(
    {
      route: "point",
      id: source.id,
      canonical,
      version: info.version,
      headers: {
        "cache-control": cacheControlFor(bytesCacheControl(config, source), restriction),
        link: `<${publicBase(req, config)}/point/${pathId(source)}/${canonical}>;rel="canonical"`,
      },
      cost: () => coarseCost(coarsePointCost(info), config),
      restriction,
    },
    req,
    env,
    config,
    ctx,
  );
};

/**
 * The edge's estimate before any decode: the block holding the pixel, with every band the source
 * stores and its mask (a chunky block decodes them all), in samples as wide as its widest band
 * type (float32 when the decoder has not said); a mosaic's every asset one quadkey lists.
 */
function coarsePointCost(info: SourceInfo) {
  const bands = (info.bands?.length ?? info.channels ?? ASSUMED_CHANNELS) + 1;
  if (info.mosaic) return mosaicPointCost(info.mosaic, bands);
  const bytesPerSample = info.bands ? Math.max(...info.bands.map((b) => sampleBytes(b.dtype))) : 4;
  return pointCost([{ tileWidth: info.tileWidth, tileHeight: info.tileHeight, bands, bytesPerSample, codec: info.codec }]);
}

/** Bytes of a NumPy sample type: the digits of its name are its bits (uint16, float32). */
const sampleBytes = (dtype: string) => Math.max(1, Number(/\d+$/.exec(dtype)?.[0] ?? 32) / 8);
