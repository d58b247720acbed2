// GET /iiif/3/{id}/manifest.json: the source as a IIIF Presentation 3.0 manifest, from the cached
// metadata alone (shared/iiif/manifest.ts), public and cached like its info.json. Its links follow
// the source as info.json's do: the cited form (PLAIN_ID_MODE, snapshots), the same service id.
import type { IRequest } from "itty-router";
import { notFound } from "../../shared/errors";
import { servedLimits } from "../../shared/iiif/info";
import { manifest, PRESENTATION_CONTEXT } from "../../shared/iiif/manifest";
import { linkedSets } from "../../shared/maps/tile-matrix-sets";
import { VERSION_HEADER } from "../../shared/protocol";
import { degradedInfo } from "../access/degraded";
import { restrictionOf } from "../access/gate";
import { AUTH_CONTEXT, probeService } from "../access/services";
import { edgeConfig, type Env } from "../env";
import { documentAnswer, documentCacheControl, jsonLdHeaders } from "../http-cache";
import { forClient } from "../request-id";
import { imageSourceInfo } from "../source-info";
import type { SourceHandler } from "./follow-version";
import { citedSource, publicBase, serviceId, type SourceRef } from "./params";
import { tileJsonUrl } from "./tilejson";

export const manifestHandler: SourceHandler = async (source: SourceRef, req: IRequest, env: Env, ctx: ExecutionContext) => {
  // The degraded image is a stand-in a restricted source's manifest names, not a work of its own.
  if (source.degraded) throw notFound(`the degraded image of "${source.id}" has no manifest: see /iiif/3/{id}/manifest.json of its source`);
  const config = edgeConfig(env);
  const whole = await imageSourceInfo(source, env, config, ctx, forClient(req));
  // Public like info.json, for a restricted source too: it names the probe, and shows no more
  // than anyone may see (its thumbnail is the degraded image's, or there is none).
  const restriction = await restrictionOf(source, whole, { env, config, ctx, client: forClient(req) });
  const cited = citedSource(source, whole, config);
  const base = publicBase(req, config);
  const image = { id: serviceId(req, config, 3, cited), info: whole };
  const limits = servedLimits(config.limits, whole, config.admission.requestTimeoutMs);
  const degradedWidth = restriction?.degradedWidth;
  const thumbnailOf = !restriction
    ? image
    : degradedWidth === undefined
      ? undefined
      : { id: serviceId(req, config, 3, { ...cited, degraded: true }), info: degradedInfo(whole, degradedWidth) };
  const auth = restriction && { context: AUTH_CONTEXT, services: [probeService(image.id, base, restriction, config.access!)] };
  const tileJsons = linkedSets(whole.georeference).map((tms) => ({ tileMatrixSet: tms, url: tileJsonUrl(base, cited, tms) }));
  const doc = manifest({ id: `${image.id}/manifest.json`, image, limits, thumbnailOf, auth, tileJsons });
  // Its ETag is the body's digest: it covers the description, the limits and the services it names.
  return documentAnswer(req, JSON.stringify(doc), {
    ...jsonLdHeaders(req, PRESENTATION_CONTEXT, documentCacheControl(config, source)),
    [VERSION_HEADER]: whole.version,
  });
};

/** A manifest is Presentation 3.0's, about the image whatever the Image API version: 2.1's path names where it is. */
export const manifestElsewhereHandler: SourceHandler = (source, req, env) => {
  const where = `${serviceId(req, edgeConfig(env), 3, { ...source, degraded: undefined })}/manifest.json`;
  throw notFound(`no IIIF Presentation 2.1 manifest: the Presentation 3.0 manifest is ${where}`);
};
