// GET /statistics/{id} and POST /statistics/{id} (a GeoJSON Feature or FeatureCollection):
// titiler's statistics of a georeferenced COG or a mosaic. The query is parsed (400) before
// anything is read; a POST's body is read within BODY_READ_TIMEOUT (408) and 1 MiB (413),
// validated and canonicalised (shared/maps/feature.ts), and its SHA-256 names the answer: in
// the cache key, the DO's coalescing and the decoder's signed path. Then as a crop: the source
// may be seen (401), is a map (404), and its canonical statistics go through the cache,
// admission and the decoder, costed first by the edge's coarse estimate.
import type { IRequest } from "itty-router";
import { ASSUMED_CHANNELS, type Cost } from "../../shared/cost";
import { coarseAreaCost, fit } from "../../shared/maps/area-cost";
import { ontoBounds } from "../../shared/maps/antimeridian";
import { parseExpressions } from "../../shared/maps/expression";
import { boundsOf, MAX_FEATURE_BODY_BYTES, parseFeatureBody, type FeatureBody } from "../../shared/maps/feature";
import {
  canonicalStatistics,
  parseStatisticsRequest,
  STATISTICS_WORK_HELP,
  statisticsArea,
  statisticsCost,
  type StatisticsRequest,
} from "../../shared/maps/statistics-request";
import { BODY_DIGEST_PARAM, type SourceInfo } from "../../shared/protocol";
import { cacheControlFor } from "../access/gate";
import { coarseCost } from "../admission-client";
import { edgeConfig, type Env } from "../env";
import { bytesCacheControl } from "../http-cache";
import { readBodyWithin } from "../request-body";
import { cachedDecode } from "./cached-decode";
import { followVersion } from "./follow-version";
import { georeferencedSource } from "./map-source";
import { pathId, publicBase, type SourceRef } from "./params";

/** GET: the whole source at max_size (1024 by default). */
export const statisticsHandler = followVersion((source, req, env, ctx) =>
  statisticsDecode(source, parseStatisticsRequest("GET", new URL(req.url).searchParams), undefined, req, env, ctx),
);

/** POST: the body is read once, before the source is followed (a version gone asks again, without it). */
export async function statisticsPostHandler(req: IRequest, env: Env, ctx: ExecutionContext): Promise<Response> {
  const query = parseStatisticsRequest("POST", new URL(req.url).searchParams);
  const body = await parseFeatureBody(await readBodyWithin(req, edgeConfig(env).admission.bodyReadTimeoutMs, MAX_FEATURE_BODY_BYTES));
  return followVersion((source) => statisticsDecode(source, query, body, req, env, ctx))(req, env, ctx);
}

async function statisticsDecode(source: SourceRef, stats: StatisticsRequest, body: FeatureBody | undefined, req: IRequest, env: Env, ctx: ExecutionContext): Promise<Response> {
  const config = edgeConfig(env);
  const { info, restriction } = await georeferencedSource(source, req, env, config, ctx);
  const query = canonicalStatistics(stats);
  const canonical = body ? `${query}${query ? "&" : "?"}${BODY_DIGEST_PARAM}=${body.digest}` : query;
  return cachedDecode(
    {
      route: "statistics",
      id: source.id,
      canonical,
      version: info.version,
      headers: {
        "cache-control": cacheControlFor(bytesCacheControl(config, source), restriction),
        // A GET names its answer; a POST's is named by a body no URL carries.
        ...(!body && { link: `<${publicBase(req, config)}/statistics/${pathId(source)}${query}>;rel="canonical"` }),
      },
      cost: () => coarseCost(coarseStatisticsCost(info, stats, body), config),
      restriction,
      tooLargeHelp: STATISTICS_WORK_HELP,
      body: body?.canonical,
    },
    req,
    env,
    config,
    ctx,
  );
}

/**
 * The edge's estimate before any decode: each area's read as a crop's (area-cost.ts), and the
 * statistics over the pixels it would have (the feature's share of the source's lon/lat bounds
 * at its full resolution, within max_size); the decoder's precise cost replaces it.
 */
function coarseStatisticsCost(info: SourceInfo, stats: StatisticsRequest, body: FeatureBody | undefined): Cost {
  const bands = stats.expression ? parseExpressions(stats.expression, "any").channels.length : (stats.bidx?.length ?? info.channels ?? ASSUMED_CHANNELS);
  const full = info.levels[0];
  const areas = body ? body.features.map((f) => boundsOf(f.geometry)) : [undefined];
  return areas.reduce<Cost>(
    (sum, bounds) => {
      const read = coarseAreaCost(info, statisticsArea(stats, bounds), bands);
      const share = bounds ? lonLatShare(info, bounds) : [1, 1];
      const size = fit(Math.max(1, Math.round(share[0] * full.width)), Math.max(1, Math.round(share[1] * full.height)), stats.maxSize);
      const own = statisticsCost(size.width * size.height, bands);
      return { bytes: sum.bytes + read.bytes + own.bytes, work: sum.work + read.work + own.work };
    },
    { bytes: 0, work: 0 },
  );
}

/** The part of the source's width and height a lon/lat box covers (0 when it misses). */
function lonLatShare(info: SourceInfo, box: [number, number, number, number]): [number, number] {
  const { lonLatBounds } = info.georeference!;
  const [w, s, e, n] = lonLatBounds;
  const [x0, y0, x1, y1] = ontoBounds(box, lonLatBounds, 360);
  const width = Math.max(0, Math.min(x1, e) - Math.max(x0, w)) / (e - w);
  const height = Math.max(0, Math.min(y1, n) - Math.max(y0, s)) / (n - s);
  return [width, height];
}
