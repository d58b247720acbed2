// Where admission runs: the decoder regions (each with its own admission Durable Objects,
// placed near its decoders), the shards within a region, and which regions serve which sources.
// Parsed from the Worker's vars; pure, so the edge and tests read it alike.
//
//   REGIONS           name:locationHint,…   nearest first, e.g. "eu:weur,us:enam"
//   ADMISSION_SHARDS  admission DOs per region (1)
//   SOURCE_REGIONS    prefix=region|region;…  e.g. "maps/=eu|us;scans/=us"
//   DEFAULT_REGION    the region of a source no prefix names (the first of REGIONS)
//
// With none set there is one region of one shard: the DO named "default", as before regions.

import { badConfig, intVar } from "./config";

/** Cloudflare's Durable Object location hints. */
export const LOCATION_HINTS = ["wnam", "enam", "sam", "weur", "eeur", "apac", "oc", "afr", "me"] as const;
export type LocationHint = (typeof LOCATION_HINTS)[number];

export interface PlacementVars {
  REGIONS?: string;
  ADMISSION_SHARDS?: string;
  SOURCE_REGIONS?: string;
  DEFAULT_REGION?: string;
}

export interface Region {
  name: string;
  /** Where Cloudflare creates its DOs; undefined only for the implicit region. */
  locationHint?: LocationHint;
}

export interface Placement {
  /** Nearest first: the order in which regions that serve the same source are tried. */
  regions: Region[];
  shards: number;
  /** Longest prefix first. */
  sourceRegions: { prefix: string; regions: string[] }[];
  defaultRegion: string;
  /** False when REGIONS is unset: one implicit region, its lone DO keeps the name "default". */
  configured: boolean;
}

/** The region of a deployment without REGIONS, as metrics label it. */
export const IMPLICIT_REGION = "default";
/** The most shards a region may have: each is a DO that the edge's /metrics asks every scrape. */
export const MAX_SHARDS = 64;
/** A region name: a-z, 0-9 and "-". */
export const REGION_NAME = /^[a-z0-9][a-z0-9-]*$/;

export function placement(vars: PlacementVars): Placement {
  const shards = intVar(vars, "ADMISSION_SHARDS", { min: 1, max: MAX_SHARDS, fallback: 1 });
  const regions = parseRegions(vars.REGIONS);
  const configured = regions.length > 0;
  if (!configured) regions.push({ name: IMPLICIT_REGION });
  const known = (name: string, variable: string) => {
    if (!regions.some((r) => r.name === name)) {
      throw badConfig(variable, `names region "${name}", which is not in REGIONS (${regions.map((r) => r.name).join(", ")})`);
    }
    return name;
  };
  const defaultRegion = known((vars.DEFAULT_REGION ?? "").trim() || regions[0].name, "DEFAULT_REGION");
  const sourceRegions = parseSourceRegions(vars.SOURCE_REGIONS).map(({ prefix, regions: names }) => ({
    prefix,
    regions: names.map((n) => known(n, "SOURCE_REGIONS")),
  }));
  return { regions, shards, sourceRegions, defaultRegion, configured };
}

function parseRegions(raw: string | undefined): Region[] {
  const text = (raw ?? "").trim();
  if (!text) return [];
  const regions = text.split(",").map((item): Region => {
    const [name, hint, ...extra] = item.trim().split(":");
    if (!REGION_NAME.test(name ?? "") || extra.length > 0) {
      throw badConfig("REGIONS", `must be name:locationHint,… with names of a-z, 0-9 and "-", got ${JSON.stringify(item.trim())}`);
    }
    if (!LOCATION_HINTS.includes(hint as LocationHint)) {
      throw badConfig("REGIONS", `region "${name}" needs a location hint, one of ${LOCATION_HINTS.join(", ")}; got ${JSON.stringify(hint ?? "")}`);
    }
    return { name, locationHint: hint as LocationHint };
  });
  const names = regions.map((r) => r.name);
  const twice = names.find((n, i) => names.indexOf(n) !== i);
  if (twice) throw badConfig("REGIONS", `names region "${twice}" twice`);
  return regions;
}

function parseSourceRegions(raw: string | undefined): Placement["sourceRegions"] {
  const text = (raw ?? "").trim();
  if (!text) return [];
  const rules = text.split(";").map((item) => {
    const [prefix, list, ...extra] = item.trim().split("=");
    const regions = (list ?? "").split("|").map((n) => n.trim());
    if (!prefix || extra.length > 0 || regions.some((n) => !n)) {
      throw badConfig("SOURCE_REGIONS", `must be prefix=region|region;…, got ${JSON.stringify(item.trim())}`);
    }
    return { prefix, regions };
  });
  const prefixes = rules.map((r) => r.prefix);
  const twice = prefixes.find((p, i) => prefixes.indexOf(p) !== i);
  if (twice) throw badConfig("SOURCE_REGIONS", `names prefix "${twice}" twice`);
  return rules.sort((a, b) => b.prefix.length - a.prefix.length);
}

/**
 * The regions that serve `sourceId`, in the order to try them: those of the longest prefix it
 * starts with (nearest first, as REGIONS lists them), else DEFAULT_REGION alone.
 */
export function regionsFor(p: Placement, sourceId: string): string[] {
  const rule = p.sourceRegions.find((r) => sourceId.startsWith(r.prefix));
  if (!rule) return [p.defaultRegion];
  return p.regions.map((r) => r.name).filter((name) => rule.regions.includes(name));
}

/** The region a decoder's heartbeat names (none: DEFAULT_REGION); undefined when REGIONS lacks it. */
export function decoderRegion(p: Placement, declared: string | undefined): string | undefined {
  if (declared === undefined) return p.defaultRegion;
  return p.configured && p.regions.some((r) => r.name === declared) ? declared : undefined;
}

/** One encoder for every hash: every request to admission hashes its source's id. */
const utf8 = new TextEncoder();

/** 32-bit FNV-1a of the text's UTF-8 bytes: cheap, stable, and spreads similar ids apart. */
export function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (const byte of utf8.encode(text)) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}

/** The shard of a region that admits `sourceId`'s requests. */
export const shardOf = (p: Placement, sourceId: string) => fnv1a(sourceId) % p.shards;

/** The admission DO's name: "default" for the implicit lone DO (its storage stays), else "region/shard". */
export const shardName = (p: Placement, region: string, shard: number) =>
  !p.configured && p.shards === 1 ? "default" : `${region}/${shard}`;

/** The shard index a DO's name gives it (0 for "default"). */
export function shardFromName(name: string | undefined): number {
  const index = Number(name?.split("/")[1] ?? 0);
  return Number.isInteger(index) ? index : 0;
}

/**
 * A shard's fixed share of a region's `total` (permits or bytes): the floor of an even split,
 * the remainder one each to the first shards, so the shares add up to exactly `total`. With a
 * total smaller than the shard count, the last shards get 0 (and shed their sources' requests).
 */
export function shardShare(total: number, shard: number, shards: number): number {
  return Math.floor(total / shards) + (shard < total % shards ? 1 : 0);
}
