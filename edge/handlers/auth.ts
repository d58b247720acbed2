// The Authorization Flow 2.0 services that are not about one source (the probe is: probe.ts):
//   GET  /auth/active            access service for a login: sends the user to AUTH_LOGIN_URL
//   GET|POST /auth/active/return where the login sends the user back, with its signed assertion
//   GET  /auth/kiosk             access service of a reading-room machine
//   GET  /auth/{profile}/token   token service: a page posting AuthAccessToken2 to the viewer
//   GET  /auth/logout            logout service
// Each window and frame they answer is a small page (access/pages.ts); none ever redirects to an
// address a client named: the login's address is the operator's, its return is this edge's own.
import type { IRequest } from "itty-router";
import { ACCESS_PROFILES, type AccessProfile } from "../../shared/access";
import { inRanges } from "../../shared/cidr";
import { badRequest, notFound, unsupported } from "../../shared/errors";
import type { AccessConfig } from "../access/config";
import {
  AUDIENCE,
  clearCookie,
  cookie,
  grantJwt,
  isIdPatterns,
  LOGIN_COOKIE,
  LOGIN_STATE_MAX_AGE,
  now,
  SESSION_COOKIE,
  setCookie,
  signed,
  TOKEN_MAX_AGE,
  verified,
  type Grant,
} from "../access/credentials";
import { clientAddress, presented } from "../access/gate";
import { CLOSE_WINDOW_SCRIPT, page, postMessageScript } from "../access/pages";
import { AUTH_CONTEXT, AUTH_PATHS } from "../access/services";
import { edgeConfig, type Env } from "../env";
import { readBodyWithin } from "../request-body";
import { publicBase } from "./params";

/** The access config, or 501: without AUTH_SECRET no source is served restricted, so no service is declared. */
function accessOf(env: Env): AccessConfig {
  const access = edgeConfig(env).access;
  if (!access) throw unsupported("this deployment does not enforce access (no AUTH_SECRET): it has no authorization services");
  return access;
}

/** `text` when it is exactly an http(s) origin (scheme, host, optional port: nothing more), else undefined. */
export function exactOrigin(text: string | null): string | undefined {
  const url = text === null ? null : URL.parse(text);
  return url && (url.protocol === "https:" || url.protocol === "http:") && url.origin === text ? text : undefined;
}

/** GET /auth/active?origin=…: remembers the viewer's origin and a fresh state, then sends the user to the login. */
export async function activeAccessHandler(req: IRequest, env: Env): Promise<Response> {
  const access = accessOf(env);
  if (!access.login) throw unsupported("this deployment has no login (AUTH_LOGIN_URL): restricted sources of the active profile cannot be logged in to");
  const origin = exactOrigin(new URL(req.url).searchParams.get("origin"));
  if (!origin) throw badRequest("origin must be the viewer page's origin, such as https://viewer.example.org");
  const state = crypto.randomUUID();
  const loginState = await signed({ state, origin }, AUDIENCE.loginState, access.secret, now() + LOGIN_STATE_MAX_AGE);
  const login = new URL(access.login.url);
  login.searchParams.set("return_to", `${publicBase(req, edgeConfig(env))}${AUTH_PATHS.loginReturn}`);
  login.searchParams.set("state", state);
  login.searchParams.set("origin", origin);
  const headers = new Headers({ location: login.href, "cache-control": "no-store", "referrer-policy": "no-referrer" });
  headers.append("set-cookie", setCookie(LOGIN_COOKIE, loginState, LOGIN_STATE_MAX_AGE));
  return new Response(null, { status: 302, headers });
}

/**
 * GET or POST /auth/active/return with `assertion`: the login's word (a JWT signed with
 * AUTH_LOGIN_KEY) of who logged in and what they may see, for the state this browser was sent
 * with. It becomes the session cookie; the window then closes itself.
 */
export async function loginReturnHandler(req: IRequest, env: Env): Promise<Response> {
  const access = accessOf(env);
  if (!access.login) throw unsupported("this deployment has no login (AUTH_LOGIN_URL)");
  const fields = req.method === "POST" ? new URLSearchParams(await readBodyWithin(req, edgeConfig(env).admission.bodyReadTimeoutMs)) : new URL(req.url).searchParams;
  const started = await verified(cookie(req, LOGIN_COOKIE) ?? "", AUDIENCE.loginState, access.secret);
  const assertion = await verified(fields.get("assertion") ?? "", AUDIENCE.login, access.login.key);
  const again = (why: string) =>
    page({ status: 400, title: "Login not completed", text: `${why} Close this window and log in again from the viewer.`, setCookies: [clearCookie(LOGIN_COOKIE)] });
  if (typeof started === "string") return again("This login was not started here, or took longer than ten minutes.");
  if (typeof assertion === "string") return again("The login's answer could not be verified.");
  const { sub, see, state, exp } = assertion as Record<string, unknown>;
  // The state ties the answer to this browser's start: an answer replayed elsewhere, or a login
  // started by someone else, is refused. Assertions are for immediate use, never stored.
  if (state !== started.state || typeof sub !== "string" || sub === "" || !isIdPatterns(see) || (exp as number) > now() + LOGIN_STATE_MAX_AGE) {
    return again("The login's answer was not for this login.");
  }
  const grant: Grant = { sub, profile: "active", see, origin: started.origin as string, exp: now() + access.sessionMaxAge };
  const session = await grantJwt(grant, AUDIENCE.session, access.secret);
  return page({
    title: "Logged in",
    text: `You are logged in to ${access.institution}. This window closes by itself; close it if it does not.`,
    script: CLOSE_WINDOW_SCRIPT,
    setCookies: [setCookie(SESSION_COOKIE, session, access.sessionMaxAge), clearCookie(LOGIN_COOKIE)],
  });
}

/** GET /auth/kiosk: a reading-room machine is known by its address on every request, so this only tells the user and closes. */
export async function kioskAccessHandler(req: IRequest, env: Env): Promise<Response> {
  const access = accessOf(env);
  if (!inRanges(clientAddress(req), access.kioskAddresses)) {
    return page({ status: 403, title: "Not a reading-room machine", text: `This machine is not one of ${access.institution}'s reading-room machines.` });
  }
  return page({ title: "Reading room", text: `This is a reading-room machine of ${access.institution}.`, script: CLOSE_WINDOW_SCRIPT });
}

const MAX_MESSAGE_ID = 256;

/**
 * GET /auth/{profile}/token?messageId=…&origin=…: the page, framed by the viewer, that posts an
 * access token (or the error) to that origin alone. A session opened for another origin is
 * invalidOrigin: a page elsewhere cannot learn that the user is logged in.
 */
export async function tokenHandler(req: IRequest, env: Env): Promise<Response> {
  const access = accessOf(env);
  const profile = req.params.profile as AccessProfile;
  if (!ACCESS_PROFILES.includes(profile)) throw notFound(`no token service for "${profile}": the profiles are ${ACCESS_PROFILES.join(", ")}`);
  const query = new URL(req.url).searchParams;
  const origin = exactOrigin(query.get("origin"));
  // With no origin to post to, no message can be sent: the page says so to whoever opened it.
  if (!origin) return page({ status: 400, title: "Invalid token request", text: "origin must be the viewer page's origin, such as https://viewer.example.org." });
  const messageId = query.get("messageId") ?? "";
  const message = await tokenMessage(req, profile, origin, access, messageId);
  return page({
    title: "Access token",
    text: "This page passes an access token to the viewer that opened it.",
    script: postMessageScript({ "@context": AUTH_CONTEXT, messageId, ...message }, origin),
    frameAncestor: origin,
  });
}

async function tokenMessage(req: Request, profile: AccessProfile, origin: string, access: AccessConfig, messageId: string) {
  const error = (errorProfile: string, heading: string, note: string) => ({ type: "AuthAccessTokenError2", profile: errorProfile, heading: { en: [heading] }, note: { en: [note] } });
  if (messageId === "" || messageId.length > MAX_MESSAGE_ID) {
    return error("invalidRequest", "Invalid request", `messageId must be 1 to ${MAX_MESSAGE_ID} characters.`);
  }
  if (profile === "active" && !access.login) return error("unavailable", "No login", `${access.institution} has no login here.`);
  const grant = await presented(req, profile, access);
  if (grant === "missingAspect") return error("missingAspect", "Not logged in", `You have no access to ${access.institution}'s restricted images yet.`);
  if (grant === "expiredAspect") return error("expiredAspect", "Session ended", `Your session with ${access.institution} has ended: log in again.`);
  if (grant === "invalidAspect" || grant.profile !== profile) return error("invalidAspect", "Invalid session", "Your session could not be read: log in again.");
  if (grant.origin !== undefined && grant.origin !== origin) {
    return error("invalidOrigin", "Another viewer", "You logged in from another viewer: log in again from this one.");
  }
  // A token outlives neither its session nor TOKEN_MAX_AGE, and is bound to the viewer's origin.
  const token: Grant = { ...grant, origin, exp: Math.min(grant.exp, now() + TOKEN_MAX_AGE) };
  return { type: "AuthAccessToken2", accessToken: await grantJwt(token, AUDIENCE.token, access.secret), expiresIn: Math.max(1, token.exp - now()) };
}

/** GET /auth/logout: the session cookie is dropped; tokens made from it end within TOKEN_MAX_AGE. */
export async function logoutHandler(_req: IRequest, env: Env): Promise<Response> {
  const access = accessOf(env);
  return page({
    title: "Logged out",
    text: `You are logged out of ${access.institution}. Restricted images show again only after you log in. You may close this window.`,
    setCookies: [clearCookie(SESSION_COOKIE)],
  });
}
