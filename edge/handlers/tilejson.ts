// GET /tiles/{id}/{tileMatrixSetId}/tilejson.json: the TileJSON 3.0.0 document map clients
// (MapLibre, Leaflet plugins, OpenLayers) add a layer from, with a link back to the same
// source's IIIF image service. From the cached metadata alone, like info.json.
import type { IRequest } from "itty-router";
import { segment } from "../../shared/path-segment";
import { VERSION_HEADER } from "../../shared/protocol";
import { documentBounds, middleLongitude } from "../../shared/maps/antimeridian";
import { edgeConfig, type Env } from "../env";
import { withStoredStyle } from "../style-document";
import { documentAnswer, documentCacheControl } from "../http-cache";
import type { SourceHandler } from "./follow-version";
import { mapSource } from "./map-source";
import { citedSource, pathId, publicBase, serviceId, type SourceRef } from "./params";
import { parseTileTemplate, tileUrlTemplate } from "./tile-template";
import { forClient } from "../request-id";
import { cacheControlFor } from "../access/gate";

/** Where the TileJSON of `source` on a set is. */
export const tileJsonUrl = (base: string, source: SourceRef, tileMatrixSetId: string) =>
  `${base}/tiles/${pathId(source)}/${tileMatrixSetId}/tilejson.json`;

export const tileJsonHandler: SourceHandler = async (source: SourceRef, req: IRequest, env: Env, ctx: ExecutionContext) => {
  const config = edgeConfig(env);
  const parsed = parseTileTemplate(segment(req.params.tileMatrixSetId, "tile matrix set"), new URL(req.url).searchParams);
  const template = await withStoredStyle(parsed, env, config, ctx, forClient(req));
  const { info, georeference, tiling, restriction } = await mapSource(source, template.tileMatrixSet, req, env, config, ctx);
  const cited = citedSource(source, info, config);
  const [, south, , north] = georeference.lonLatBounds;
  const doc = {
    tilejson: "3.0.0",
    name: source.id,
    tiles: [tileUrlTemplate(publicBase(req, config), cited, template, "{z}/{x}/{y}")],
    scheme: "xyz",
    // Across ±180°, west > east, as the TileJSON specification has it.
    bounds: documentBounds(georeference.lonLatBounds),
    center: [middleLongitude(georeference.lonLatBounds), (south + north) / 2, tiling.minZoom],
    minzoom: tiling.minZoom,
    maxzoom: tiling.maxZoom,
    // A mosaic is a map only: it has no IIIF image to link to.
    links: info.mosaic ? [] : [{ rel: "alternate", type: "application/ld+json", title: "IIIF Image API 3.0", href: `${serviceId(req, config, 3, cited)}/info.json` }],
  };
  return documentAnswer(req, JSON.stringify(doc), {
    "content-type": "application/json",
    "cache-control": cacheControlFor(documentCacheControl(config, source), restriction),
    [VERSION_HEADER]: info.version,
  });
};
