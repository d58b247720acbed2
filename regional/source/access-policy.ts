// Which assets a mosaic may reach: the operator's access policy. A mosaic comes from a publisher,
// and the decoder reads each asset it names from inside the operator's network. Unchecked, an
// asset could make the decoder read keys outside the catalog, files outside the data directory,
// or the cloud's metadata service and other internal hosts (server-side request forgery). So a
// store key must lie under a configured prefix, a URL must name a configured host, and every
// address the decoder connects to must be public unless the operator allowed its range.

import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { isIP, type LookupFunction } from "node:net";
import ipaddr from "ipaddr.js";
import { parseCidr, type Cidr } from "../../shared/cidr";
import { badConfig, intVar } from "../../shared/config";
import { badGateway, type HttpError } from "../../shared/errors";
import { MAX_DEADLINE_MS } from "../../shared/protocol";

export interface AssetConfig {
  /** A store key is allowed when it starts with one of these ("" = the whole store). */
  prefixes: readonly string[];
  /** The hosts HTTP(S) assets may name; none = no HTTP assets. */
  hosts: readonly HostPattern[];
  /** Address ranges allowed although they are not public (a private mirror, a test server). */
  allowAddresses: readonly Cidr[];
  /** HTTP connections open at once, over all hosts. */
  connections: number;
  /** Longest wait for an HTTP asset's answer, and for each part of its body. */
  timeoutMs: number;
}

/** `host` exactly, or with `wildcard` any name ending in `.host`; without `port`, the scheme's default port. */
export interface HostPattern {
  host: string;
  wildcard: boolean;
  port?: number;
}

export const DEFAULT_ASSET_CONNECTIONS = 16;
export const DEFAULT_ASSET_TIMEOUT_MS = 10_000;

/** Reads the TESSERA_ASSET_* variables; throws ConfigError naming the bad one. */
export function readAssetConfig(env: NodeJS.ProcessEnv): AssetConfig {
  return {
    prefixes: listVar(env, "TESSERA_ASSET_PREFIXES", parsePrefix) ?? [catalogPrefix(env)],
    hosts: listVar(env, "TESSERA_ASSET_HOSTS", parseHostPattern) ?? [],
    allowAddresses: listVar(env, "TESSERA_ASSET_ALLOW_ADDRESSES", cidrItem) ?? [],
    connections: intVar(env, "TESSERA_ASSET_CONNECTIONS", { fallback: DEFAULT_ASSET_CONNECTIONS, min: 1, max: 1024 }),
    timeoutMs: intVar(env, "TESSERA_ASSET_TIMEOUT_MS", { fallback: DEFAULT_ASSET_TIMEOUT_MS, min: 1, max: MAX_DEADLINE_MS }),
  };
}

/** By default a mosaic reaches what its catalog does: the S3 prefix, or the whole data directory. */
function catalogPrefix(env: NodeJS.ProcessEnv): string {
  return env.TESSERA_SOURCE === "s3" ? (env.TESSERA_S3_PREFIX ?? "") : "";
}

/** Why one item of a list variable is wrong. */
class Invalid {
  constructor(readonly why: string) {}
}

/** A comma-separated list, each item parsed; undefined when unset. */
function listVar<T>(env: NodeJS.ProcessEnv, name: string, parse: (item: string) => T | Invalid): T[] | undefined {
  const raw = env[name];
  if (raw === undefined || raw.trim() === "") return undefined;
  return raw.split(",").map((text) => {
    const item = text.trim();
    const parsed = item === "" ? new Invalid("is empty") : parse(item);
    if (parsed instanceof Invalid) throw badConfig(name, `item ${JSON.stringify(item)} ${parsed.why}`);
    return parsed;
  });
}

function parsePrefix(prefix: string): string | Invalid {
  if (!prefix.endsWith("/")) return new Invalid('must end with "/" (so "a/" cannot also allow "ab/")');
  const why = keyShapeRefusal(`${prefix}x`);
  return why ? new Invalid(`is not a store key prefix: ${why}`) : prefix;
}

const HOST_PATTERN = /^(\*\.)?(\[[0-9A-Fa-f:.]+\]|[^:[\]]+)(?::(\d{1,5}))?$/;

function parseHostPattern(pattern: string): HostPattern | Invalid {
  const [, star, host, port] = HOST_PATTERN.exec(pattern) ?? [];
  const usage = 'must be a host name, "*.suffix" or an IP address, with an optional ":port"';
  if (host === undefined) return new Invalid(usage);
  // Written as the URL parser normalises it, so the comparison with a URL's host is exact.
  const normal = URL.parse(`http://${host}/`)?.hostname;
  if (normal !== host.toLowerCase()) return new Invalid(`${usage}, written as URLs spell it (${normal ?? "not a host"})`);
  const ip = ipLiteral(normal) !== undefined;
  if (!ip && !/^[a-z0-9_.-]+$/.test(normal)) return new Invalid(`${usage} (a name of letters, digits, "-", "_" and ".")`);
  if (star && ip) return new Invalid("cannot put a wildcard on an IP address");
  if (port !== undefined && (Number(port) < 1 || Number(port) > 65535)) return new Invalid("has a port outside 1–65535");
  return { host: normal, wildcard: star !== undefined, port: port === undefined ? undefined : Number(port) };
}

function cidrItem(text: string): Cidr | Invalid {
  return parseCidr(text) ?? new Invalid("is not an address range such as 10.0.0.0/8 or fd00::/8");
}

/**
 * The 502 every refusal is. Why, and the asset's label, are for the log alone: they tell the
 * policy's hosts and prefixes, and what a host name resolves to inside the deployment.
 */
export function refusal(label: string, why: string): HttpError {
  const message = "a mosaic asset is refused by the access policy";
  return badGateway(message, `${label}: ${message}: ${why}`);
}

/** A refused address found while connecting; the HTTP reader turns it into the asset's refusal. */
export class AddressRefused extends Error {
  constructor(readonly why: string) {
    super(why);
    this.name = "AddressRefused";
  }
}

// An asset is a URL only if it says http:// or https://; another "scheme://" is neither a URL
// we read nor a key (a store key never starts like a scheme, "name:").
const URL_LIKE = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//;
const HTTP_URL = /^https?:\/\//i;
const SCHEME_LIKE = /^[A-Za-z][A-Za-z0-9+.-]*:/;
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/**
 * The asset as messages may show it: a URL without its user name, password, query and fragment
 * (they may hold credentials or signatures); a store key as it is.
 */
export function assetLabel(asset: string): string {
  const scheme = URL_LIKE.exec(asset)?.[1];
  if (scheme === undefined) return asset;
  const url = URL.parse(asset);
  if (!url) return `${scheme.toLowerCase()}://<unparsable URL>`;
  return `${url.protocol}//${url.host}${url.pathname}`;
}

export const isHttpAsset = (asset: string) => HTTP_URL.test(asset);

/** What is wrong with a store key's form, if anything; a key is never read as a URL or a path. */
function keyShapeRefusal(key: string): string | undefined {
  if (CONTROL.test(key)) return "a store key may not contain control characters";
  if (URL_LIKE.test(key)) return "only http:// and https:// URLs are read";
  if (SCHEME_LIKE.test(key)) return 'a store key may not start like a URL scheme ("name:")';
  if (key.includes("\\")) return "a store key may not contain backslashes";
  if (key.startsWith("/")) return "a store key may not be an absolute path";
  const segments = key.split("/");
  if (segments.includes("")) return "a store key may not have empty segments";
  if (segments.some((s) => s === "." || s === "..")) return 'a store key may not have "." or ".." segments';
  return undefined;
}

// IPv6 destinations must be global unicast (2000::/3): that leaves out, beside the ranges
// ipaddr.js names, the deprecated IPv4-compatible form (::7f00:1 is ::127.0.0.1) it calls unicast.
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR("2000::/3");

export class AccessPolicy {
  constructor(private readonly config: AssetConfig) {}

  /** Throws the refusal of a store key that is malformed or outside the allowed prefixes. */
  checkKey(key: string): void {
    const why = keyShapeRefusal(key);
    if (why) throw refusal(key, why);
    if (!this.config.prefixes.some((prefix) => key.startsWith(prefix))) {
      throw refusal(key, `store key is outside the allowed prefixes (${this.config.prefixes.join(", ")})`);
    }
  }

  /** The HTTP(S) URL `asset` names, or its refusal; a literal IP must be allowed too. */
  checkUrl(asset: string): URL {
    const label = assetLabel(asset);
    const url = URL.parse(asset);
    if (!url) throw refusal(label, "the URL cannot be parsed");
    if (url.username !== "" || url.password !== "") throw refusal(label, "a URL may not carry a user name or password");
    if (!this.config.hosts.some((pattern) => hostMatches(pattern, url))) {
      throw refusal(label, `host ${url.host} is not allowed`);
    }
    const literal = ipLiteral(url.hostname);
    const why = literal === undefined ? undefined : this.addressRefusal(literal);
    if (why) throw refusal(label, `address ${literal} ${why}`);
    return url;
  }

  /** Why the decoder may not connect to `address`, or undefined when it may. */
  addressRefusal(address: string): string | undefined {
    const ip = ipaddr.process(address); // IPv4-mapped IPv6 is judged as the IPv4 address it is
    const allowed = this.config.allowAddresses.some(([net, bits]) => ip.kind() === net.kind() && ip.match(net, bits));
    if (allowed) return undefined;
    const range = ip.range();
    const global = range === "unicast" && (ip.kind() === "ipv4" || ip.match(GLOBAL_UNICAST_V6));
    return global ? undefined : `is not a public address (${range === "unicast" ? "not global unicast" : range})`;
  }

  /**
   * A `lookup` for the HTTP connections: it resolves every address of a host name, refuses the
   * connection unless all of them are allowed, and hands the connection only addresses it
   * checked, so a name that resolves one way for a check and another for the connection (DNS
   * rebinding) gains nothing.
   */
  readonly lookup: LookupFunction = (hostname, options, callback) => {
    dnsLookup(hostname, { all: true, family: options.family, hints: options.hints }, (err, addresses) => {
      if (err) return callback(err, "");
      const refused = addresses.map((a) => [a.address, this.addressRefusal(a.address)] as const).find(([, why]) => why);
      if (refused) return callback(new AddressRefused(`host ${hostname} resolves to ${refused[0]}, which ${refused[1]}`), "");
      if (addresses.length === 0) return callback(new AddressRefused(`host ${hostname} has no address`), "");
      if (options.all) return (callback as (e: null, all: LookupAddress[]) => void)(null, addresses);
      callback(null, addresses[0].address, addresses[0].family);
    });
  };
}

function hostMatches(pattern: HostPattern, url: URL): boolean {
  const defaultPort = url.protocol === "https:" ? 443 : 80;
  const port = url.port === "" ? defaultPort : Number(url.port);
  if (port !== (pattern.port ?? defaultPort)) return false;
  return pattern.wildcard ? url.hostname.endsWith(`.${pattern.host}`) : url.hostname === pattern.host;
}

/** The IP address a URL's host names literally ("[::1]" → "::1"), or undefined for a host name. */
function ipLiteral(hostname: string): string | undefined {
  const bare = hostname.startsWith("[") ? hostname.slice(1, -1) : hostname;
  return isIP(bare) ? bare : undefined;
}
