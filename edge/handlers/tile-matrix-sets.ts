// GET /tileMatrixSets and /tileMatrixSets/{id}: the OGC tile matrix sets this server tiles in,
// as OGC API – Tiles lists them, each set's OGC TMS 2.0 document as written. They change only
// with a deployment, so they are cached like images.
import type { IRequest } from "itty-router";
import { TILE_MATRIX_SETS, tileMatrixSet } from "../../shared/maps/tile-matrix-sets";
import { segment } from "../../shared/path-segment";
import { edgeConfig, type Env } from "../env";
import { imageCacheControl } from "../http-cache";
import { publicBase } from "./params";

export function tileMatrixSetsHandler(req: IRequest, env: Env): Response {
  const config = edgeConfig(env);
  const base = publicBase(req, config);
  const tileMatrixSets = [...TILE_MATRIX_SETS.values()].map(({ id, title, uri, crs }) => ({
    id,
    title,
    ...(uri && { uri }),
    crs,
    links: [{ rel: "self", type: "application/json", href: `${base}/tileMatrixSets/${id}` }],
  }));
  return Response.json({ tileMatrixSets }, { headers: { "cache-control": imageCacheControl(config) } });
}

export function tileMatrixSetHandler(req: IRequest, env: Env): Response {
  const tms = tileMatrixSet(segment(req.params.id, "tile matrix set"));
  return Response.json(tms.document, { headers: { "cache-control": imageCacheControl(edgeConfig(env)) } });
}
