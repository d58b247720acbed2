// Source metadata (dimensions, levels, pinned version) as the edge knows it: from its own
// cache when fresh, else asked of a decoder through admission (a cheap, Tile-class request).
// An unknown source is remembered too (for ERROR_MAX_AGE), so a crawler's typo costs nothing.
// A small in-isolate map sits in front of the Cache API: a warm cache hit for a tile then
// costs one Cache API lookup (the tile's), not two.
// A snapshot's metadata never changes, so it is kept a year; when a read of its bytes finds the
// version gone, the caller forgets it, and the next lookup remembers the 404 instead.
import { HttpError, notFound } from "../shared/errors";
import { mosaicIsMapOnly } from "../shared/maps/mosaic-json";
import { DECODER, type SourceInfo } from "../shared/protocol";
import { viaAdmission } from "./admission-client";
import type { EdgeConfig, Env } from "./env";
import type { SourceRef } from "./handlers/params";
import type { ForClient } from "./request-id";
import { SNAPSHOT_MAX_AGE } from "./http-cache";

export const infoKey = ({ id, version }: SourceRef) =>
  `https://tessera.internal/source-info/${encodeURIComponent(id)}` +
  (version === undefined ? "" : `?version=${encodeURIComponent(version)}`);

/**
 * Isolate-local copies, each trusted until its shared entry's expiry and for INFO_MAX_AGE at most:
 * the isolate that finds a snapshot's version gone forgets the shared entry, and the others then
 * see that within INFO_MAX_AGE instead of a year.
 */
const local = new Map<string, { info: SourceInfo; expires: number }>();
const LOCAL_ENTRIES = 1000;

/** When the shared entry stops being trusted; stored with it so local copies never outlive it. */
const EXPIRES_HEADER = "x-tessera-expires";

function remember(key: string, info: SourceInfo, expires: number, config: EdgeConfig): void {
  if (local.size >= LOCAL_ENTRIES) local.delete(local.keys().next().value!); // oldest first
  local.set(key, { info, expires: Math.min(expires, Date.now() + config.infoMaxAge * 1000) });
}

/** Drops what this edge knows of `source`, so the next lookup asks a decoder. */
export async function forgetSourceInfo(source: SourceRef): Promise<void> {
  local.delete(infoKey(source));
  await caches.default.delete(infoKey(source));
}

/** sourceInfo of a source the IIIF routes serve: a mosaic is a map only (404 there). */
export async function imageSourceInfo(...args: Parameters<typeof sourceInfo>): Promise<SourceInfo> {
  const info = await sourceInfo(...args);
  if (info.mosaic) throw mosaicIsMapOnly(args[0].id);
  return info;
}

export async function sourceInfo(
  source: SourceRef,
  env: Env,
  config: EdgeConfig,
  ctx: ExecutionContext,
  client: ForClient,
): Promise<SourceInfo> {
  const key = infoKey(source);
  const mine = local.get(key);
  if (mine && mine.expires > Date.now()) return mine.info;
  const cache = caches.default;
  const hit = await cache.match(key);
  if (hit?.status === 404) throw notFound(await hit.text());
  if (hit) {
    const info = (await hit.json()) as SourceInfo;
    remember(key, info, Number(hit.headers.get(EXPIRES_HEADER)), config);
    return info;
  }
  try {
    const res = await viaAdmission(env, source.id, DECODER.info(source.id, source.version), client);
    const info = (await res.json()) as SourceInfo;
    const maxAge = source.version === undefined ? config.infoMaxAge : SNAPSHOT_MAX_AGE;
    const expires = Date.now() + maxAge * 1000;
    remember(key, info, expires, config);
    const stored = Response.json(info, {
      headers: { "cache-control": `max-age=${maxAge}`, [EXPIRES_HEADER]: String(expires) },
    });
    ctx.waitUntil(cache.put(key, stored));
    return info;
  } catch (err) {
    if (err instanceof HttpError && err.status === 404) {
      const stored = new Response(err.message, {
        status: 404,
        headers: { "cache-control": `max-age=${config.errorMaxAge}` },
      });
      ctx.waitUntil(cache.put(key, stored));
      // The same 404 as from the cache: a snapshot whose version is gone is an unknown resource.
      throw notFound(err.message);
    }
    throw err;
  }
}
