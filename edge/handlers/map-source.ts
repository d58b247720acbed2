// What every route under /tiles/{id}/{tileMatrixSetId} needs first: the source's metadata, and
// how it lies on that tile matrix set. A source that is not a map is a resource these routes do
// not have (404), not a malformed request.
import type { IRequest } from "itty-router";
import { notFound } from "../../shared/errors";
import type { Georeference, SourceInfo, SourceTiling } from "../../shared/protocol";
import type { EdgeConfig, Env } from "../env";
import { sourceInfo } from "../source-info";
import type { SourceRef } from "./params";
import { forClient } from "../request-id";
import type { Restriction } from "../../shared/access";
import { assertMaySee } from "../access/gate";

export interface MapSource {
  info: SourceInfo;
  georeference: Georeference;
  tiling: SourceTiling;
  /** Set for a restricted source the request may see: its answers are private. */
  restriction?: Restriction;
}

/**
 * The source on the set `tileMatrixSetId` (a known one), once the request may see it (401 for a
 * restricted one without a grant); 404 when it is not georeferenced or not on that set.
 */
export async function mapSource(
  source: SourceRef,
  tileMatrixSetId: string,
  req: IRequest,
  env: Env,
  config: EdgeConfig,
  ctx: ExecutionContext,
): Promise<MapSource> {
  const map = await georeferencedSource(source, req, env, config, ctx);
  const tiling = map.georeference.tiling[tileMatrixSetId];
  if (!tiling) throw notFound(`source "${source.id}" does not lie within ${tileMatrixSetId}`);
  return { ...map, tiling };
}

/**
 * The source as a map, whatever the tile matrix set (a point, its info, an area), once the request may see
 * it: the same rules as its tiles (401, 404 when not georeferenced).
 */
export async function georeferencedSource(
  source: SourceRef,
  req: IRequest,
  env: Env,
  config: EdgeConfig,
  ctx: ExecutionContext,
): Promise<Omit<MapSource, "tiling">> {
  const client = forClient(req);
  const info = await sourceInfo(source, env, config, ctx, client);
  const restriction = await assertMaySee(source, info, req, { env, config, ctx, client });
  const { georeference } = info;
  if (!georeference) throw notFound(`source "${source.id}" is not georeferenced: it is served as an image only`);
  return { info, georeference, restriction };
}
