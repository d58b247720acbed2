// Who sees what of a restricted source. Every route that answers with a source's pixels or
// bytes asks here before it looks in any cache, so a cached answer never reaches a request
// that may not have it; and what a restricted answer carries is marked private, so no shared
// cache downstream keeps it for the next client.
import type { AccessProfile, Restriction } from "../../shared/access";
import { inRanges } from "../../shared/cidr";
import { HttpError, notFound, unsupported } from "../../shared/errors";
import type { SourceInfo } from "../../shared/protocol";
import { edgeConfig, type EdgeConfig, type Env } from "../env";
import { serviceId, type SourceRef } from "../handlers/params";
import type { ForClient } from "../request-id";
import { sourceInfo } from "../source-info";
import type { AccessConfig } from "./config";
import { AUDIENCE, cookie, covers, now, readGrant, SESSION_COOKIE, type Grant, type Refusal } from "./credentials";

/** What a handler needs to find a source's restriction: the request's bindings and its calls' context. */
export interface Lookup {
  env: Env;
  config: EdgeConfig;
  ctx: ExecutionContext;
  client: ForClient;
}

/**
 * The restriction `source` is under: its plain id's, so a snapshot URL follows its source's
 * access (a snapshot's own metadata is kept a year). 501 when this edge has no AUTH_SECRET:
 * a restricted source is withheld, never served openly.
 */
export async function restrictionOf(source: SourceRef, info: SourceInfo, lookup: Lookup): Promise<Restriction | undefined> {
  const restriction = source.version === undefined ? info.access : await currentAccess(source.id, info, lookup);
  const { config } = lookup;
  if (restriction && !config.access) {
    throw unsupported(`source "${source.id}" is restricted to some viewers, and this deployment does not enforce access (no AUTH_SECRET): it is withheld`);
  }
  return restriction;
}

/**
 * The access of the source a snapshot belongs to, as it is now; the snapshot's own (read when it
 * was opened) when the plain id is gone, as when a publisher deleted the object but keeps its
 * versions for citations.
 */
async function currentAccess(id: string, snapshot: SourceInfo, { env, config, ctx, client }: Lookup): Promise<Restriction | undefined> {
  try {
    return (await sourceInfo({ id }, env, config, ctx, client)).access;
  } catch (err) {
    if (err instanceof HttpError && err.kind === "not_found") return snapshot.access;
    throw err;
  }
}

/**
 * What the request may see of `source` whole: undefined for an open one, else its restriction
 * once the request presents a grant for it; 401 otherwise, naming the probe (and the degraded
 * image anyone may see). A degraded reference is refused here: only the image routes serve one.
 */
export async function assertMaySee(source: SourceRef, info: SourceInfo, req: Request, lookup: Lookup): Promise<Restriction | undefined> {
  if (source.degraded) throw noDegraded(source);
  const restriction = await restrictionOf(source, info, lookup);
  if (!restriction) return undefined;
  const grant = await presented(req, restriction.profile, lookup.config.access!);
  if (typeof grant === "string" || !covers(grant, restriction.profile, source.id)) throw denied(source, restriction, req, lookup.config);
  return restriction;
}

/** The restriction of a degraded reference's source; 404 when it has no degraded image. */
export async function degradedRestriction(source: SourceRef, info: SourceInfo, lookup: Lookup): Promise<Restriction & { degradedWidth: number }> {
  const restriction = await restrictionOf(source, info, lookup);
  if (restriction?.degradedWidth === undefined) throw noDegraded(source);
  return restriction as Restriction & { degradedWidth: number };
}

const noDegraded = (source: SourceRef) => notFound(`source "${source.id}" has no degraded image`);

/**
 * The grant the request presents for a source restricted to `profile`: for `active`, its session
 * cookie's; for `kiosk` and `external`, the operator's word about the request itself, checked on
 * every request (no cookie carries it out of the reading room).
 */
export async function presented(req: Request, profile: AccessProfile, access: AccessConfig): Promise<Grant | Refusal> {
  if (profile === "active") {
    const session = cookie(req, SESSION_COOKIE);
    return session === undefined ? "missingAspect" : readGrant(session, AUDIENCE.session, access.secret);
  }
  const vouched = profile === "kiosk" ? inRanges(clientAddress(req), access.kioskAddresses) : vouchedExternally(req, access);
  return vouched ? { sub: profile, profile, see: ["*"], exp: now() + access.sessionMaxAge } : "missingAspect";
}

/**
 * Whether the operator vouches for the request: its address in AUTH_EXTERNAL_ADDRESSES, or the
 * header AUTH_EXTERNAL_HEADER names with its value. That header is trusted only because the
 * operator said their own front sets it (and strips it from what clients send).
 */
function vouchedExternally(req: Request, access: AccessConfig): boolean {
  const header = access.externalHeader;
  if (header && req.headers.get(header.name) === header.value) return true;
  return inRanges(clientAddress(req), access.externalAddresses);
}

/** The client's address: CF-Connecting-IP, which Cloudflare sets on every request and no client can. */
export const clientAddress = (req: Request) => req.headers.get("cf-connecting-ip") ?? "";

/** The 401 for a request that may not see `source` whole. */
function denied(source: SourceRef, restriction: Restriction, req: Request, config: EdgeConfig): HttpError {
  const probe = `${serviceId(req, config, 3, { ...source, degraded: undefined })}/probe`;
  const degraded = restriction.degradedWidth === undefined ? "" : `; anyone may see ${serviceId(req, config, 3, { ...source, degraded: true })}`;
  return new HttpError("unauthorized", `source "${source.id}" is restricted: see its probe service ${probe}${degraded}`);
}

/**
 * Cache-Control of a restricted source's answer: the browser may keep it but asks again each
 * time (a shared terminal's next user, after a logout, gets a 401, not the last user's tiles);
 * no shared cache may keep it.
 */
export const RESTRICTED_CACHE_CONTROL = "private, no-cache";

/** `cacheControl`, or the restricted one when `restriction` is set. */
export const cacheControlFor = (cacheControl: string, restriction: Restriction | undefined) => (restriction ? RESTRICTED_CACHE_CONTROL : cacheControl);

/**
 * Router `finally` stage, after corsify: a restricted answer may be read by a page's script with
 * the session's cookie (credentials) only from the origin the session was opened for, the viewer
 * the user logged in from; every other page keeps `*`, under which a browser never lets a script
 * read what it sent credentials for. Plain <img> requests need neither.
 */
export async function sessionOriginCors(res: Response, req: Request, env: Env): Promise<Response> {
  const origin = req.headers.get("origin");
  if (origin === null || res.headers.get("cache-control") !== RESTRICTED_CACHE_CONTROL) return res;
  const session = cookie(req, SESSION_COOKIE);
  const access = edgeConfig(env).access;
  const grant = session !== undefined && access && (await readGrant(session, AUDIENCE.session, access.secret));
  if (typeof grant !== "object" || grant.origin !== origin) return res;
  const out = new Response(res.body, res);
  out.headers.set("access-control-allow-origin", origin);
  out.headers.set("access-control-allow-credentials", "true");
  out.headers.append("vary", "Origin");
  return out;
}
