// The AUTH_* variables: how this edge tells who may see a restricted source (docs/operators.md).
// Without AUTH_SECRET there is no enforcement, and restricted sources are withheld (501).
import { parseCidr, type Cidr } from "../../shared/cidr";
import { badConfig, intVar, urlVar } from "../../shared/config";

export interface AccessVars {
  /** Signs the session cookies and access tokens this edge issues (wrangler secret). */
  AUTH_SECRET?: string;
  /** The operator's login page, where the `active` access service sends the user. */
  AUTH_LOGIN_URL?: string;
  /** The key the login signs its assertion (an HS256 JWT) with (wrangler secret). */
  AUTH_LOGIN_KEY?: string;
  /** Seconds a session cookie, and every access token from it, stays valid. */
  AUTH_SESSION_MAX_AGE?: string;
  /** Address ranges of the reading-room machines (`kiosk`). */
  AUTH_KIOSK_ADDRESSES?: string;
  /** Address ranges whose requests the operator vouches for (`external`). */
  AUTH_EXTERNAL_ADDRESSES?: string;
  /** "Name: value", a header the operator's own front sets (and strips from clients) to vouch for a request (`external`). */
  AUTH_EXTERNAL_HEADER?: string;
  /** Who users log in to, as the viewer's buttons and notes name it. */
  AUTH_INSTITUTION?: string;
}

export interface AccessConfig {
  secret: string;
  /** Absent: `active` sources cannot be logged in to (their access service answers 501). */
  login?: { url: string; key: string };
  sessionMaxAge: number;
  kioskAddresses: Cidr[];
  externalAddresses: Cidr[];
  externalHeader?: { name: string; value: string };
  institution: string;
}

/** An hour: a session outlives a reading, and a copied cookie dies within it (logout cannot recall one). */
export const DEFAULT_SESSION_MAX_AGE = 3600;

export function accessConfig(env: AccessVars): AccessConfig | undefined {
  const secret = env.AUTH_SECRET ?? "";
  if (secret === "") {
    // A login set up without the secret would look enforced and withhold every source: say so.
    if ((env.AUTH_LOGIN_URL ?? "") !== "" || (env.AUTH_LOGIN_KEY ?? "") !== "") throw badConfig("AUTH_SECRET", "must be set with AUTH_LOGIN_URL and AUTH_LOGIN_KEY");
    return undefined;
  }
  if (secret.length < 32) throw badConfig("AUTH_SECRET", "must be at least 32 characters (openssl rand -hex 32)");
  return {
    secret,
    login: login(env),
    sessionMaxAge: intVar(env, "AUTH_SESSION_MAX_AGE", { fallback: DEFAULT_SESSION_MAX_AGE, min: 60, max: 86400 }),
    kioskAddresses: ranges(env, "AUTH_KIOSK_ADDRESSES"),
    externalAddresses: ranges(env, "AUTH_EXTERNAL_ADDRESSES"),
    externalHeader: header(env.AUTH_EXTERNAL_HEADER),
    institution: (env.AUTH_INSTITUTION ?? "").trim() || "this collection",
  };
}

function login(env: AccessVars): AccessConfig["login"] {
  const url = urlVar(env, "AUTH_LOGIN_URL");
  const key = env.AUTH_LOGIN_KEY ?? "";
  if (url === undefined && key === "") return undefined;
  if (url === undefined) throw badConfig("AUTH_LOGIN_URL", "must be set with AUTH_LOGIN_KEY");
  if (key.length < 32) throw badConfig("AUTH_LOGIN_KEY", "must be set with AUTH_LOGIN_URL, at least 32 characters");
  return { url, key };
}

function ranges(env: AccessVars, name: "AUTH_KIOSK_ADDRESSES" | "AUTH_EXTERNAL_ADDRESSES"): Cidr[] {
  const items = (env[name] ?? "").split(",").map((item) => item.trim()).filter((item) => item !== "");
  return items.map((item) => parseCidr(item) ?? badRange(name, item));
}

const badRange = (name: string, item: string): never => {
  throw badConfig(name, `item ${JSON.stringify(item)} is not an address range such as 10.0.0.0/8 or fd00::/8`);
};

/** A header token name (RFC 9110) and a value of visible characters. */
function header(raw: string | undefined): AccessConfig["externalHeader"] {
  const text = (raw ?? "").trim();
  if (text === "") return undefined;
  const [, name, value] = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+):\s*([\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?)$/.exec(text) ?? [];
  if (name === undefined) throw badConfig("AUTH_EXTERNAL_HEADER", `must be "Name: value", got ${JSON.stringify(raw)}`);
  return { name: name.toLowerCase(), value };
}
