// GET /iiif/{2,3}/{id}/info.json and the base URI redirect.
import type { IRequest } from "itty-router";
import type { ApiVersion } from "../../shared/iiif/image-request";
import { CONTEXT, infoJson, PROFILE_URI, servedLimits } from "../../shared/iiif/info";
import { linkedSets } from "../../shared/maps/tile-matrix-sets";
import { VERSION_HEADER } from "../../shared/protocol";
import { edgeConfig, type Env } from "../env";
import { documentCacheControl, jsonLdHeaders, matchesIfNoneMatch, notModified, strongEtag } from "../http-cache";
import { imageSourceInfo } from "../source-info";
import type { SourceHandler } from "./follow-version";
import { citedSource, publicBase, serviceId, type SourceRef } from "./params";
import { tileJsonUrl } from "./tilejson";
import { forClient } from "../request-id";
import { degradedInfo } from "../access/degraded";
import { degradedRestriction, restrictionOf } from "../access/gate";
import { declaringProbe, probeService } from "../access/services";

export const infoHandler =
  (version: ApiVersion): SourceHandler =>
  async (source: SourceRef, req: IRequest, env: Env, ctx: ExecutionContext): Promise<Response> => {
    const config = edgeConfig(env);
    const client = forClient(req);
    const whole = await imageSourceInfo(source, env, config, ctx, client);
    // Anyone may read a restricted source's info.json: it names the probe a viewer asks whether
    // it may see the image, and its degraded image's info.json describes that smaller image.
    const lookup = { env, config, ctx, client };
    const restriction = source.degraded ? await degradedRestriction(source, whole, lookup) : await restrictionOf(source, whole, lookup);
    const info = source.degraded ? degradedInfo(whole, restriction!.degradedWidth!) : whole;
    // The id viewers build image URLs from, and a citation of the exact version.
    const cited = citedSource(source, info, config);
    const base = serviceId(req, config, version, cited);
    const headers = {
      ...jsonLdHeaders(req, CONTEXT[version], documentCacheControl(config, source)),
      link: `<${PROFILE_URI[version]}>;rel="profile"`,
      [VERSION_HEADER]: info.version,
    };
    const served = servedLimits(config.limits, info, config.admission.requestTimeoutMs);
    const limits = source.degraded ? { ...served, maxWidth: Math.min(served.maxWidth ?? Infinity, info.width) } : served;
    // The services it declares name the operator's institution and addresses: they are in the ETag too.
    const probe = restriction && !source.degraded ? probeService(base, publicBase(req, config), restriction, config.access!) : undefined;
    const etag = await strongEtag(base, info.version, JSON.stringify(limits), headers["content-type"], JSON.stringify(probe ?? null));
    if (matchesIfNoneMatch(req, etag)) return notModified(etag, headers);
    // A map too: its TileJSON on the sets it is linked on, for the same version (the degraded image is not one).
    const tiled = source.degraded ? [] : linkedSets(info.georeference);
    const tileJsons = tiled.map((tms) => ({ tileMatrixSet: tms, url: tileJsonUrl(publicBase(req, config), cited, tms) }));
    const doc = infoJson(version, info, base, limits, tileJsons);
    const declared = probe ? declaringProbe(doc, version, probe) : doc;
    return new Response(JSON.stringify(declared), { headers: { ...headers, etag } });
  };

/** The bare service URI answers 303 See Other to its info.json (Image API 3.0 §2.2). */
export const baseUriHandler =
  (version: ApiVersion): SourceHandler =>
  (source, req, env) =>
    new Response(null, {
      status: 303,
      headers: { location: `${serviceId(req, edgeConfig(env), version, source)}/info.json` },
    });
