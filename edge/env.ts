// The Worker's bindings (wrangler.toml) and their parsed, validated form.
import { admissionConfig, type AdmissionConfig, type AdmissionVars } from "../shared/admission-config";
import { badConfig, intVar } from "../shared/config";
import { placement, type Placement, type PlacementVars } from "../shared/regions";
import type { AdmissionDO } from "./admission/admission-do";
import type { SizeLimits } from "../shared/iiif/info";
import { accessConfig, type AccessConfig, type AccessVars } from "./access/config";
import { CLOUDFLARE_API, type PurgeConfig } from "./cache-purge";
import type { DecoderContainer } from "./containers/decoder-container";
import { containerSettings, type ContainerSettings, type ContainerVars } from "./containers/settings";

export interface Env extends AdmissionVars, PlacementVars, AccessVars, ContainerVars {
  ADMISSION: DurableObjectNamespace<AdmissionDO>;
  /** The decoders' containers' Durable Objects, where the deployment runs them (wrangler deploy --env containers). */
  DECODER_CONTAINER?: DurableObjectNamespace<DecoderContainer>;
  DECODER_SECRET: string;
  METRICS_TOKEN?: string;
  ADMIN_TOKEN?: string;
  IMAGE_MAX_AGE: string;
  INFO_MAX_AGE: string;
  STALE_WHILE_REVALIDATE: string;
  ERROR_MAX_AGE: string;
  MAX_WIDTH: string;
  MAX_HEIGHT: string;
  MAX_AREA: string;
  MAX_FILE_TRANSFERS: string;
  FILE_MIN_RATE?: string;
  STREAM_ANSWER_BYTES: string;
  PUBLIC_BASE_URL?: string;
  TRUST_FORWARDED_HEADERS?: string;
  PLAIN_ID_MODE?: string;
  COALESCE?: string;
  UPPER_TIER?: string;
  /** Purging every location by tag on invalidate (edge/cache-purge.ts): the zone, a token allowed to purge it, and the API's base. */
  CLOUDFLARE_ZONE_ID?: string;
  CLOUDFLARE_PURGE_TOKEN?: string;
  CLOUDFLARE_API_BASE?: string;
  /** Tests only: the admission shard ("region/shard") that throws on every call, to show what else keeps working. */
  TEST_THROWING_SHARD?: string;
  /** Tests only: the stand-in that runs each container's decoder as a local process, where Cloudflare's container runtime cannot exist. */
  TEST_CONTAINER_STAND_IN?: string;
  /** Tests and bench:pops only: "true" keeps decoded answers in a cache namespace per request.cf.colo, each standing for a location. */
  TEST_LOCATION_CACHES?: string;
}

/** How answers under a plain id keep viewers from mixing versions (docs/operators.md). */
export type PlainIdMode = "snapshot" | "revalidate";

/** 128 KiB/s: a slow line's download still passes; a client trickling bytes to hold a place does not. */
export const DEFAULT_FILE_MIN_RATE = 131072;

export interface EdgeConfig {
  decoderSecret: string;
  /** The bearer token GET /metrics requires; undefined: open. */
  metricsToken?: string;
  /** The bearer token of the /admin routes; undefined: they refuse everyone. */
  adminToken?: string;
  /** Where an invalidation purges every location; undefined: other locations' copies expire. */
  purge?: PurgeConfig;
  imageMaxAge: number;
  infoMaxAge: number;
  admission: AdmissionConfig;
  /** The regions, their shards, and which serve which sources. */
  placement: Placement;
  staleWhileRevalidate: number;
  errorMaxAge: number;
  /** Output limits declared in info.json and enforced (undefined: unlimited). */
  limits: SizeLimits;
  /** /file transfers streaming at once, beside the decode permits. */
  maxFileTransfers: number;
  /** Bytes a second a /file transfer must average over each REQUEST_TIMEOUT, or it is cut. */
  fileMinRate: number;
  /**
   * Decoded answers of at least this many bytes (or of no declared length) pass through the
   * admission DO and the Worker as streams; smaller ones are read whole (docs/operators.md).
   */
  streamAnswerBytes: number;
  /** The address clients use, without a trailing slash; undefined: from the request. */
  publicBaseUrl?: string;
  /** Whether X-Forwarded-Host/-Proto name that address (only behind a proxy that sets them). */
  trustForwardedHeaders: boolean;
  /**
   * snapshot: a plain id's info.json names the current snapshot as its id, so viewers fetch
   * only immutable snapshot URLs; revalidate: it names the plain id, whose images are kept at
   * most INFO_MAX_AGE and then revalidated.
   */
  plainIdMode: PlainIdMode;
  /** Whether concurrent identical decodes are decoded once (false only to measure without it). */
  coalesce: boolean;
  /** Whether the admission DO keeps decoded answers in its own location's cache (admission/upper-tier.ts; false only to measure without it). */
  upperTier: boolean;
  /** Who may see restricted sources; undefined (no AUTH_SECRET): they are withheld. */
  access?: AccessConfig;
  /** The decoders run as Cloudflare Containers; undefined: none (containers/settings.ts). */
  containers?: ContainerSettings;
}

/** Parsed once per bindings object: an isolate keeps the same one for every request it serves. */
const parsed = new WeakMap<Env, EdgeConfig>();

export function edgeConfig(env: Env): EdgeConfig {
  let config = parsed.get(env);
  if (!config) {
    config = parseConfig(env);
    parsed.set(env, config);
  }
  return config;
}

function parseConfig(env: Env): EdgeConfig {
  if (!env.DECODER_SECRET) throw badConfig("DECODER_SECRET", "is not set (wrangler secret put DECODER_SECRET)");
  const containers = containerSettings(env);
  if (containers && !env.DECODER_CONTAINER) throw badConfig("DECODER_CONTAINER_COUNT", "is above 0 but the DecoderContainer binding is missing: deploy with --env containers");
  return {
    containers,
    decoderSecret: env.DECODER_SECRET,
    metricsToken: env.METRICS_TOKEN || undefined,
    adminToken: env.ADMIN_TOKEN || undefined,
    purge: purgeConfig(env),
    imageMaxAge: intVar(env, "IMAGE_MAX_AGE", { min: 0 }),
    infoMaxAge: intVar(env, "INFO_MAX_AGE", { min: 0 }),
    admission: admissionConfig(env),
    placement: placement(env),
    staleWhileRevalidate: intVar(env, "STALE_WHILE_REVALIDATE", { min: 0 }),
    errorMaxAge: intVar(env, "ERROR_MAX_AGE", { min: 0 }),
    limits: {
      maxWidth: intVar(env, "MAX_WIDTH", { min: 0 }) || undefined,
      maxHeight: intVar(env, "MAX_HEIGHT", { min: 0 }) || undefined,
      maxArea: intVar(env, "MAX_AREA", { min: 0 }) || undefined,
    },
    maxFileTransfers: intVar(env, "MAX_FILE_TRANSFERS", { min: 1 }),
    fileMinRate: intVar(env, "FILE_MIN_RATE", { fallback: DEFAULT_FILE_MIN_RATE }),
    streamAnswerBytes: intVar(env, "STREAM_ANSWER_BYTES", { min: 1 }),
    publicBaseUrl: publicBaseUrl(env.PUBLIC_BASE_URL),
    trustForwardedHeaders: flag(env, "TRUST_FORWARDED_HEADERS", false),
    plainIdMode: plainIdMode(env.PLAIN_ID_MODE),
    coalesce: flag(env, "COALESCE", true),
    upperTier: flag(env, "UPPER_TIER", true),
    access: accessConfig(env),
  };
}

/** "snapshot" or "revalidate"; unset or empty is "revalidate", the one the IIIF specification asks for (info.json's id is the URL asked). */
function plainIdMode(raw: string | undefined): PlainIdMode {
  const text = (raw ?? "").trim() || "revalidate";
  if (text === "snapshot" || text === "revalidate") return text;
  throw badConfig("PLAIN_ID_MODE", `must be snapshot or revalidate, got ${JSON.stringify(raw)}`);
}

function publicBaseUrl(raw: string | undefined): string | undefined {
  const text = (raw ?? "").trim();
  if (!text) return undefined;
  const url = URL.canParse(text) ? new URL(text) : undefined;
  if (!url || (url.protocol !== "https:" && url.protocol !== "http:") || url.search || url.hash) {
    throw badConfig("PUBLIC_BASE_URL", `must be an absolute http(s) URL without query, got ${JSON.stringify(raw)}`);
  }
  return (url.origin + url.pathname).replace(/\/+$/, "");
}

/** "true" or "false"; unset or empty is false. */
function flag(env: Env, name: "TRUST_FORWARDED_HEADERS" | "COALESCE" | "UPPER_TIER", fallback: boolean): boolean {
  const text = (env[name] ?? "").trim();
  if (text === "") return fallback;
  if (text === "false") return false;
  if (text === "true") return true;
  throw badConfig(name, `must be true or false, got ${JSON.stringify(env[name])}`);
}

/** The purge settings: both a zone and a token, or neither (one alone is a mistake the operator must see). */
function purgeConfig(env: Env): PurgeConfig | undefined {
  const [zoneId, token] = [env.CLOUDFLARE_ZONE_ID || undefined, env.CLOUDFLARE_PURGE_TOKEN || undefined];
  if (!zoneId && !token) return undefined;
  if (!zoneId) throw badConfig("CLOUDFLARE_ZONE_ID", "is not set, but CLOUDFLARE_PURGE_TOKEN is: give both, or neither");
  if (!token) throw badConfig("CLOUDFLARE_PURGE_TOKEN", "is not set, but CLOUDFLARE_ZONE_ID is (wrangler secret put CLOUDFLARE_PURGE_TOKEN): give both, or neither");
  return { zoneId, token, apiBase: (env.CLOUDFLARE_API_BASE || CLOUDFLARE_API).replace(/\/+$/, "") };
}
