// GET /tiles/{id}/{tileMatrixSetId}/WMTSCapabilities.xml[?use_epsg=true]: the OGC WMTS 1.0.0
// capabilities of the source on one tile matrix set (shared/maps/wmts-capabilities.ts), from the
// cached metadata alone, like info.json.
import type { IRequest } from "itty-router";
import { badRequest } from "../../shared/errors";
import { tileMatrixSet } from "../../shared/maps/tile-matrix-sets";
import { CONTENT_TYPES } from "../../shared/maps/tile-request";
import { wmtsCapabilities } from "../../shared/maps/wmts-capabilities";
import { segment } from "../../shared/path-segment";
import { VERSION_HEADER } from "../../shared/protocol";
import { edgeConfig, type Env } from "../env";
import { withStoredStyle } from "../style-document";
import { documentAnswer, documentCacheControl } from "../http-cache";
import type { SourceHandler } from "./follow-version";
import { mapSource } from "./map-source";
import { citedSource, pathId, publicBase, type SourceRef } from "./params";
import { parseTileTemplate, templateQuery, tileUrlTemplate } from "./tile-template";
import { forClient } from "../request-id";
import { cacheControlFor } from "../access/gate";

/** titiler's switch for ArcMap: SupportedCRS as EPSG:{code}. */
const USE_EPSG = "use_epsg";

export const wmtsHandler: SourceHandler = async (source: SourceRef, req: IRequest, env: Env, ctx: ExecutionContext) => {
  const config = edgeConfig(env);
  const query = new URL(req.url).searchParams;
  const epsgNames = useEpsg(query);
  query.delete(USE_EPSG);
  const parsed = parseTileTemplate(segment(req.params.tileMatrixSetId, "tile matrix set"), query);
  const template = await withStoredStyle(parsed, env, config, ctx, forClient(req));
  const { info, georeference, tiling, restriction } = await mapSource(source, template.tileMatrixSet, req, env, config, ctx);
  const base = publicBase(req, config);
  const cited = citedSource(source, info, config);
  const tms = tileMatrixSet(template.tileMatrixSet);
  const again = templateQuery(template);
  const self = `${base}/tiles/${pathId(cited)}/${tms.id}/WMTSCapabilities.xml${again}${epsgNames ? `${again ? "&" : "?"}${USE_EPSG}=true` : ""}`;
  const xml = wmtsCapabilities({
    id: source.id,
    lonLatBounds: georeference.lonLatBounds,
    tiling,
    tms,
    format: CONTENT_TYPES[template.format],
    scale: template.scale,
    template: tileUrlTemplate(base, cited, template, "{TileMatrix}/{TileCol}/{TileRow}"),
    self,
    epsgNames,
  });
  return documentAnswer(req, xml, {
    "content-type": "application/xml; charset=utf-8",
    "cache-control": cacheControlFor(documentCacheControl(config, source), restriction),
    [VERSION_HEADER]: info.version,
  });
};

function useEpsg(query: URLSearchParams): boolean {
  const values = query.getAll(USE_EPSG);
  if (values.length > 1) throw badRequest(`query parameter "${USE_EPSG}" is given ${values.length} times; give it once`);
  if (values.length === 0 || values[0] === "false") return false;
  if (values[0] === "true") return true;
  throw badRequest(`${USE_EPSG} "${values[0].slice(0, 16)}" must be true or false`);
}
