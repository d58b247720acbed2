// GET /algorithms and /algorithms/{id}: what `algorithm=` takes on tiles and areas, in titiler's
// shape (inputs, outputs, parameters as JSON Schema). Fixed by the deployment: cached like images.
import type { IRequest } from "itty-router";
import { ALGORITHM_NAMES, algorithmDocument, isAlgorithmName } from "../../shared/maps/algorithms";
import { notFound } from "../../shared/errors";
import { segment } from "../../shared/path-segment";
import { edgeConfig, type Env } from "../env";
import { imageCacheControl } from "../http-cache";

export function algorithmsHandler(_req: IRequest, env: Env): Response {
  const algorithms = Object.fromEntries(ALGORITHM_NAMES.map((name) => [name, algorithmDocument(name)]));
  return Response.json(algorithms, { headers: { "cache-control": imageCacheControl(edgeConfig(env)) } });
}

export function algorithmHandler(req: IRequest, env: Env): Response {
  const name = segment(req.params.id, "algorithm");
  if (!isAlgorithmName(name)) throw notFound(`unknown algorithm "${name.slice(0, 40)}"; known: ${ALGORITHM_NAMES.join(", ")}`);
  return Response.json(algorithmDocument(name), { headers: { "cache-control": imageCacheControl(edgeConfig(env)) } });
}
