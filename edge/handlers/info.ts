// GET /iiif/3/{id}/info.json and the base URI redirect.
import type { IRequest } from "itty-router";
import { infoJson3 } from "../../shared/iiif/info";
import { edgeConfig, type Env } from "../env";
import { sourceInfo } from "../source-info";
import { serviceId, sourceId } from "./params";

export async function infoHandler(req: IRequest, env: Env, ctx: ExecutionContext): Promise<Response> {
  const config = edgeConfig(env);
  const id = sourceId(req.params.id);
  const info = await sourceInfo(id, env, config, ctx, req.signal);
  return Response.json(infoJson3(info, serviceId(req, 3, id)), {
    headers: {
      "cache-control": `public, max-age=${config.infoMaxAge}`,
      link: '<http://iiif.io/api/image/3/level1.json>;rel="profile"',
    },
  });
}

/** The bare service URI answers 303 See Other to its info.json (Image API 3.0 §2.2). */
export function baseUriHandler(req: IRequest): Response {
  return new Response(null, {
    status: 303,
    headers: { location: `${serviceId(req, 3, sourceId(req.params.id))}/info.json` },
  });
}
