// GET /iiif/3/{id}/georeference.json: the source's Georeference Extension annotation alone, the
// one its manifest's canvas holds (shared/iiif/georeference.ts), for clients that load an
// annotation rather than a manifest (Allmaps). Public and cached like the manifest; for a
// restricted source too, as it shows no pixels.
import type { IRequest } from "itty-router";
import { notFound } from "../../shared/errors";
import { GEOREF_CONTEXT, georeferenceAnnotation } from "../../shared/iiif/georeference";
import { PRESENTATION_CONTEXT } from "../../shared/iiif/manifest";
import { VERSION_HEADER } from "../../shared/protocol";
import { edgeConfig, type Env } from "../env";
import { documentAnswer, documentCacheControl, jsonLdHeaders } from "../http-cache";
import { forClient } from "../request-id";
import { imageSourceInfo } from "../source-info";
import type { SourceHandler } from "./follow-version";
import { citedSource, serviceId, type SourceRef } from "./params";

export const georeferenceHandler: SourceHandler = async (source: SourceRef, req: IRequest, env: Env, ctx: ExecutionContext) => {
  if (source.degraded) throw notFound(`the degraded image of "${source.id}" has no georeference: see /iiif/3/{id}/georeference.json of its source`);
  const config = edgeConfig(env);
  const whole = await imageSourceInfo(source, env, config, ctx, forClient(req));
  // Its URLs are the manifest's: the same service id, canvas and manifest, in the cited form.
  const service = serviceId(req, config, 3, citedSource(source, whole, config));
  const annotation = georeferenceAnnotation({
    id: `${service}/georeference.json`,
    service,
    canvas: `${service}/canvas/1`,
    manifest: `${service}/manifest.json`,
    info: whole,
  });
  if (!annotation) throw notFound(`source "${source.id}" has no georeference: it is not georeferenced, or its CRS's points cannot be placed in longitude and latitude`);
  const doc = { "@context": [GEOREF_CONTEXT, PRESENTATION_CONTEXT], ...annotation };
  return documentAnswer(req, JSON.stringify(doc), {
    ...jsonLdHeaders(req, GEOREF_CONTEXT, documentCacheControl(config, source)),
    [VERSION_HEADER]: whole.version,
  });
};
