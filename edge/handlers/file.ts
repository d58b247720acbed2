// GET /iiif/3/{id}/file: the source's original bytes, streamed from the pinned version.
// No decode; admitted as a Tile-class request like metadata. Not stored in the edge cache
// (sources can be large); Cache-Control lets the CDN in front keep it.
import type { IRequest } from "itty-router";
import { DECODER } from "../../shared/protocol";
import { viaAdmission } from "../admission-client";
import { edgeConfig, type Env } from "../env";
import { bytesCacheControl, matchesIfNoneMatch, notModified, strongEtag } from "../http-cache";
import { imageSourceInfo } from "../source-info";
import type { SourceRef } from "./params";
import { forClient } from "../request-id";
import { assertMaySee, cacheControlFor } from "../access/gate";

export async function fileHandler(source: SourceRef, req: IRequest, env: Env, ctx: ExecutionContext): Promise<Response> {
  const config = edgeConfig(env);
  const { id } = source;
  const client = forClient(req);
  const info = await imageSourceInfo(source, env, config, ctx, client);
  const restriction = await assertMaySee(source, info, req, { env, config, ctx, client });
  const headers = { "cache-control": cacheControlFor(bytesCacheControl(config, source), restriction) };
  const etag = await strongEtag("file", id, info.version);
  if (matchesIfNoneMatch(req, etag)) return notModified(etag, headers);
  const res = await viaAdmission(env, id, DECODER.file(id, info.version), client);
  return new Response(res.body, {
    headers: {
      ...headers,
      etag,
      "content-type": "image/tiff",
      "content-length": String(info.bytes),
    },
  });
}
