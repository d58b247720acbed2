// GET /v1/statistics/{id}?{query}&version=V and POST /v1/statistics/{id}?{query}&feature={digest}
// &version=V with the canonical GeoJSON body: titiler's statistics of a georeferenced COG or a
// mosaic. GET reads the whole source at max_size (titiler's preview); POST reads each feature's
// bounds in dst_crs (the source's own CRS by default) at max_size, or without it at the source's
// full resolution there, and counts only the pixels whose centres the feature holds
// (maps/feature-mask.ts). Every area is laid out and costed before any pixel I/O, and the sum
// is admitted as one decode: within the DO's grant and the work budget, else 413 telling the
// client to use max_size. The numbers: maps/statistics.ts.
import { notFound } from "../../shared/errors";
import type { Cost } from "../../shared/cost";
import type { AreaRequest } from "../../shared/maps/area-request";
import { parseExpressions } from "../../shared/maps/expression";
import { answerBody, boundsOf, featuresOf, type Feature } from "../../shared/maps/feature";
import { canonicalStatistics, parseStatisticsRequest, STATISTICS_WORK_HELP, statisticsArea, statisticsCost, type StatisticsRequest } from "../../shared/maps/statistics-request";
import type { Cog } from "../cog/cog";
import type { DecoderContext } from "../decoder";
import type { Handler } from "../http/router";
import { areaGrid } from "../maps/areas";
import { cogAsset, composeValues, type ComposedValues, type TileAsset } from "../maps/compose-tile";
import { featureMask, maskCost, ringsInGrid, type PixelRings } from "../maps/feature-mask";
import { areaStatistics, type BandStatistics } from "../maps/statistics";
import type { OutputGrid } from "../maps/warp";
import { Mosaic } from "../mosaic/mosaic";
import { withMosaicArea } from "../mosaic/mosaic-area";
import type { PreparedDecode } from "../render/prepared-decode";
import { Slices } from "../runtime/slices";
import { runDecode } from "./decode";
import { withSnapshot } from "./snapshot";

/** One area the statistics read: its values, costed, and a feature's polygons on its grid. */
interface StatisticsArea {
  values: ComposedValues;
  grid: OutputGrid;
  bands: number;
  polygons?: PixelRings[];
}

export const statistics: Handler<{ id: string }> = ({ params, query, version, signal, grant, body }, decoder) => {
  const req = parseStatisticsRequest(body === undefined ? "GET" : "POST", query);
  const features = body === undefined ? undefined : featuresOf(JSON.parse(body) as unknown);
  const { id } = params;
  return withSnapshot(decoder, id, version, signal, (opened) =>
    withAreas(opened, id, req, features?.features, decoder, signal, async (areas) => runDecode(decoder, opened, prepared(areas, req, features, `${id} statistics${canonicalStatistics(req)}`), signal, grant)),
  );
};

/** Each area laid out and costed (nested, so a mosaic's assets stay leased until the decode settles). */
function withAreas<R>(
  opened: Cog | Mosaic,
  id: string,
  req: StatisticsRequest,
  features: Feature[] | undefined,
  decoder: DecoderContext,
  signal: AbortSignal,
  use: (areas: StatisticsArea[]) => Promise<R>,
): Promise<R> {
  const areas: StatisticsArea[] = [];
  const next = async (i: number): Promise<R> => {
    if (features !== undefined && i === features.length) return use(areas);
    const feature = features?.[i];
    const area = statisticsArea(req, feature && boundsOf(feature.geometry));
    return withAreaAssets(opened, id, area, decoder, signal, async (assets, grid) => {
      const values = await composeValues(assets, { ...req, grid }, signal);
      const polygons = feature && ringsInGrid(feature.geometry, grid.crs, grid.affine);
      areas.push({ values, grid, bands: bandsOf(req, assets[0]), polygons });
      return features === undefined ? use(areas) : next(i + 1);
    });
  };
  return next(0);
}

/** The assets an area paints and its grid: a COG's own, or a mosaic's members there. */
function withAreaAssets<R>(
  opened: Cog | Mosaic,
  id: string,
  area: AreaRequest,
  decoder: DecoderContext,
  signal: AbortSignal,
  use: (assets: TileAsset[], grid: OutputGrid) => Promise<R>,
): Promise<R> {
  if (opened instanceof Mosaic) return withMosaicArea(opened, id, area, decoder.mosaicTiles, signal, use);
  if (!opened.geo) throw notFound(`source "${id}" is not georeferenced: it is served as an IIIF image`);
  return use([cogAsset(opened, area, id)], areaGrid(opened.levels[0], opened.geo, area));
}

/** How many bands the statistics answer: the expression's channels, bidx's bands, or the asset's. */
function bandsOf(req: StatisticsRequest, asset: TileAsset): number {
  if (req.expression) return parseExpressions(req.expression, "any").channels.length;
  return req.bidx?.length ?? asset.channels.length;
}

/** The decode: the areas' reads, masks and statistics, costed together; answered as titiler's JSON. */
function prepared(areas: StatisticsArea[], req: StatisticsRequest, features: { kind: "Feature" | "FeatureCollection"; features: Feature[] } | undefined, what: string): PreparedDecode {
  const cost = areas.reduce((sum, area) => add(sum, areaCost(area, req)), { bytes: 0, work: 0 });
  return {
    cost,
    what,
    workHelp: STATISTICS_WORK_HELP,
    async render(signal, work) {
      const results: Record<string, BandStatistics>[] = [];
      for (const area of areas) {
        const values = await area.values.values(signal, work);
        const mask = area.polygons && (await featureMask(area.polygons, area.grid.width, area.grid.height, new Slices(signal)));
        results.push(await areaStatistics(values, req, signal, mask));
      }
      if (!features) return { body: Buffer.from(JSON.stringify(results[0])), contentType: "application/json" };
      return { body: Buffer.from(JSON.stringify(answerBody(features, (i) => ({ statistics: results[i] })))), contentType: "application/geo+json" };
    },
  };
}

/** An area's read, its mask, its statistics and its share of the answer. */
function areaCost(area: StatisticsArea, req: StatisticsRequest): Cost {
  const pixels = area.grid.width * area.grid.height;
  const stats = statisticsCost(pixels, area.bands);
  const mask = area.polygons ? maskCost(area.polygons, area.grid.width, area.grid.height) : { bytes: 0, work: 0 };
  const bins = typeof req.bins === "number" ? req.bins : req.bins.length;
  const answer = area.bands * (2048 + 48 * (bins + (req.categories?.length ?? 0)));
  return add(add(area.values.cost, stats), add(mask, { bytes: answer, work: 0 }));
}

const add = (a: Cost, b: Cost): Cost => ({ bytes: a.bytes + b.bytes, work: a.work + b.work });
