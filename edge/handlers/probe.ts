// GET /iiif/{2,3}/{id}/probe: the probe service (Authorization Flow 2.0) of a source's image
// service. A viewer asks it, with the access token as a bearer, whether the image requests it is
// about to make would succeed; it answers 200 with AuthProbeResult2 either way, the status
// inside it saying, and for a refusal the degraded image anyone may see as the substitute.
import type { IRequest } from "itty-router";
import type { Restriction } from "../../shared/access";
import type { ApiVersion } from "../../shared/iiif/image-request";
import { notFound } from "../../shared/errors";
import type { AccessConfig } from "../access/config";
import { AUDIENCE, covers, readGrant } from "../access/credentials";
import { presented, restrictionOf } from "../access/gate";
import { AUTH_CONTEXT, deniedText } from "../access/services";
import { edgeConfig, type EdgeConfig, type Env } from "../env";
import { forClient } from "../request-id";
import { imageSourceInfo } from "../source-info";
import type { SourceHandler } from "./follow-version";
import { citedSource, serviceId, type SourceRef } from "./params";

export const probeHandler =
  (version: ApiVersion): SourceHandler =>
  async (source: SourceRef, req: IRequest, env: Env, ctx: ExecutionContext): Promise<Response> => {
    const config = edgeConfig(env);
    // The degraded image is open to anyone: it has no probe.
    if (source.degraded) throw notFound(`the degraded image of "${source.id}" is open to anyone: it has no probe service`);
    const client = forClient(req);
    const info = await imageSourceInfo(source, env, config, ctx, client);
    const restriction = await restrictionOf(source, info, { env, config, ctx, client });
    const allowed = !restriction || (await mayProbe(req, restriction, source.id, config.access!));
    const result = allowed
      ? { "@context": AUTH_CONTEXT, type: "AuthProbeResult2", status: 200 }
      : { "@context": AUTH_CONTEXT, type: "AuthProbeResult2", status: 401, ...refusal(restriction!, config.access!, substitute(req, config, version, citedSource(source, info, config), restriction!)) };
    // The answer depends on who asks: nothing may keep it.
    return Response.json(result, { headers: { "cache-control": "no-store" } });
  };

/**
 * Whether the asker would get the image: its access token (bound to the page's origin, which a
 * browser names in Origin), or what its request itself presents (a reading-room address, the
 * operator's word).
 */
async function mayProbe(req: Request, restriction: Restriction, id: string, access: AccessConfig): Promise<boolean> {
  const own = await presented(req, restriction.profile, access);
  if (typeof own !== "string" && covers(own, restriction.profile, id)) return true;
  const bearer = /^Bearer +(\S+)$/i.exec(req.headers.get("authorization") ?? "")?.[1];
  if (bearer === undefined) return false;
  const grant = await readGrant(bearer, AUDIENCE.token, access.secret);
  if (typeof grant === "string" || !covers(grant, restriction.profile, id)) return false;
  const origin = req.headers.get("origin");
  return origin === null || origin === grant.origin;
}

function refusal(restriction: Restriction, access: AccessConfig, substitutes: object[]) {
  const { errorHeading, errorNote } = deniedText(restriction, access);
  return { ...(substitutes.length > 0 && { substitute: substitutes }), heading: errorHeading, note: errorNote };
}

/** The degraded image service, when the source has one. */
function substitute(req: Request, config: EdgeConfig, version: ApiVersion, cited: SourceRef, restriction: Restriction): object[] {
  if (restriction.degradedWidth === undefined) return [];
  return [
    {
      id: serviceId(req, config, version, { ...cited, degraded: true }),
      type: version === 3 ? "ImageService3" : "ImageService2",
      profile: "level2",
      label: { en: [`${restriction.degradedWidth} pixels wide, for anyone`] },
    },
  ];
}
