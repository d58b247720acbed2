// What the edge hands out once someone may see restricted sources, and reads back: the session
// cookie (presented by the browser with every image, tile and /file request), the access token
// (posted to the viewer's page, presented to the probe) and the login's state cookie. All are
// HS256 JWTs signed with AUTH_SECRET, each with an audience of its own, so none passes for
// another: a token, which any script on the viewer's page sees, can never be made into a cookie.
// The login's assertion is a JWT too, signed with AUTH_LOGIN_KEY.
import { errors, jwtVerify, SignJWT, type JWTPayload } from "jose";
import { ACCESS_PROFILES, type AccessProfile } from "../../shared/access";

/** Who may see what, until when. */
export interface Grant {
  /** The login's subject; "kiosk" or "external" for the profiles without a login. */
  sub: string;
  profile: AccessProfile;
  /** The source ids it covers: an id, a prefix ending in "*", or "*" for all. */
  see: string[];
  /** The page the session was opened for: its tokens are posted to that origin alone. */
  origin?: string;
  /** Unix seconds. */
  exp: number;
}

/** Why a request presents no grant, as the token service's error profiles name them. */
export type Refusal = "missingAspect" | "invalidAspect" | "expiredAspect";

export const AUDIENCE = { session: "tessera-session", token: "tessera-token", login: "tessera-login", loginState: "tessera-login-state" } as const;

/** Host-only, HTTPS-only, and Path=/ by the `__Host-` rule: no subdomain can set or read it. */
export const SESSION_COOKIE = "__Host-tessera-session";
/** The login's state between the access service and the login's return. */
export const LOGIN_COOKIE = "__Host-tessera-login";

/** A token outlives a probe and a page's few retries, not a session: it cannot be recalled. */
export const TOKEN_MAX_AGE = 300;
/** Long enough to log in, short enough that a stolen state cookie is soon worthless. */
export const LOGIN_STATE_MAX_AGE = 600;
/** Longer than any JWT these claims make; a header past it is refused unread. */
const MAX_JWT_LENGTH = 4096;

const keys = new Map<string, Promise<CryptoKey>>();
/** The HMAC key of `secret`, imported once per isolate: every authorized tile verifies with it. */
function keyOf(secret: string): Promise<CryptoKey> {
  let key = keys.get(secret);
  if (!key) {
    key = crypto.subtle.importKey("raw", new TextEncoder().encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign", "verify"]);
    keys.set(secret, key);
  }
  return key;
}

export const now = () => Math.floor(Date.now() / 1000);

export async function signed(claims: JWTPayload, audience: string, secret: string, exp: number): Promise<string> {
  return new SignJWT(claims).setProtectedHeader({ alg: "HS256", typ: "JWT" }).setAudience(audience).setExpirationTime(exp).sign(await keyOf(secret));
}

/** The claims of a JWT signed with `secret` for `audience`, or why not. Only HS256: never "none", never another algorithm. */
export async function verified(token: string, audience: string, secret: string): Promise<JWTPayload | Refusal> {
  if (token.length > MAX_JWT_LENGTH) return "invalidAspect";
  try {
    return (await jwtVerify(token, await keyOf(secret), { algorithms: ["HS256"], audience, requiredClaims: ["exp"] })).payload;
  } catch (err) {
    return err instanceof errors.JWTExpired ? "expiredAspect" : "invalidAspect";
  }
}

/**
 * Grants read lately, by their JWT: a viewer's every tile presents the same cookie, and its
 * signature is checked once, not once a tile. Expiry is checked on every use (covers).
 */
const readLately = new Map<string, Grant>();
const READ_LATELY_ENTRIES = 1000;

/** The grant a session cookie or access token carries, checked; invalidAspect for claims of the wrong shape. */
export async function readGrant(token: string, audience: string, secret: string): Promise<Grant | Refusal> {
  const key = `${audience}\n${token}`; // a new AUTH_SECRET comes with a new deployment, and new isolates
  const known = readLately.get(key);
  if (known) return known.exp <= now() ? "expiredAspect" : known;
  const claims = await verified(token, audience, secret);
  if (typeof claims === "string") return claims;
  const grant = grantOf(claims);
  if (!grant) return "invalidAspect";
  if (readLately.size >= READ_LATELY_ENTRIES) readLately.delete(readLately.keys().next().value!); // oldest first
  readLately.set(key, grant);
  return grant;
}

function grantOf(claims: JWTPayload): Grant | undefined {
  const { sub, profile, see, origin, exp } = claims as Record<string, unknown>;
  const shaped =
    typeof sub === "string" &&
    ACCESS_PROFILES.includes(profile as AccessProfile) &&
    isIdPatterns(see) &&
    (origin === undefined || typeof origin === "string") &&
    typeof exp === "number";
  return shaped ? ({ sub, profile, see, origin, exp } as Grant) : undefined;
}

export const isIdPatterns = (see: unknown): see is string[] =>
  Array.isArray(see) && see.length > 0 && see.length <= 100 && see.every((p) => typeof p === "string" && p.length > 0 && p.length <= 200);

export const grantJwt = (grant: Grant, audience: string, secret: string) =>
  signed({ sub: grant.sub, profile: grant.profile, see: grant.see, origin: grant.origin }, audience, secret, grant.exp);

/** Whether `grant` lets its holder see source `id` of a source restricted to `profile`. */
export function covers(grant: Grant, profile: AccessProfile, id: string): boolean {
  if (grant.profile !== profile || grant.exp <= now()) return false;
  return grant.see.some((p) => p === "*" || p === id || (p.endsWith("*") && id.startsWith(p.slice(0, -1))));
}

/** One cookie's value from a Cookie header (undefined when absent). */
export function cookie(req: Request, name: string): string | undefined {
  for (const part of (req.headers.get("cookie") ?? "").split(";")) {
    const at = part.indexOf("=");
    if (at > 0 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim();
  }
  return undefined;
}

/**
 * Set-Cookie for a cookie only this host's HTTPS pages receive, which no script reads, and which
 * the browser sends with a viewer's cross-site image and tile requests too (SameSite=None).
 */
export const setCookie = (name: string, value: string, maxAge: number) =>
  `${name}=${value}; Max-Age=${maxAge}; Path=/; Secure; HttpOnly; SameSite=None`;

/** Set-Cookie that makes the browser drop `name` at once. */
export const clearCookie = (name: string) => setCookie(name, "", 0);
