// Source metadata (dimensions, levels, pinned version) as the edge knows it: from its own
// cache when fresh, else asked of a decoder through admission (a cheap, Tile-class request).
// An unknown source is remembered too (for ERROR_MAX_AGE), so a crawler's typo costs nothing.
// A small in-isolate map sits in front of the Cache API: a warm cache hit for a tile then
// costs one Cache API lookup (the tile's), not two.
import { HttpError, notFound } from "../shared/errors";
import { DECODER, type SourceInfo } from "../shared/protocol";
import { viaAdmission } from "./admission-client";
import type { EdgeConfig, Env } from "./env";

export const infoKey = (id: string) => `https://tessera.internal/source-info/${encodeURIComponent(id)}`;

/** Isolate-local copies, each trusted until its own expiry (INFO_MAX_AGE after it was fetched). */
const local = new Map<string, { info: SourceInfo; expires: number }>();
const LOCAL_ENTRIES = 1000;

/** When the shared entry stops being trusted; stored with it so local copies never outlive it. */
const EXPIRES_HEADER = "x-tessera-expires";

function remember(info: SourceInfo, expires: number): void {
  if (local.size >= LOCAL_ENTRIES) local.delete(local.keys().next().value!); // oldest first
  local.set(info.id, { info, expires });
}

/** Drops what this edge knows of `id`, so the next lookup asks a decoder. */
export async function forgetSourceInfo(id: string): Promise<void> {
  local.delete(id);
  await caches.default.delete(infoKey(id));
}

export async function sourceInfo(
  id: string,
  env: Env,
  config: EdgeConfig,
  ctx: ExecutionContext,
  signal: AbortSignal,
): Promise<SourceInfo> {
  const mine = local.get(id);
  if (mine && mine.expires > Date.now()) return mine.info;
  const cache = caches.default;
  const hit = await cache.match(infoKey(id));
  if (hit?.status === 404) throw notFound(await hit.text());
  if (hit) {
    const info = (await hit.json()) as SourceInfo;
    remember(info, Number(hit.headers.get(EXPIRES_HEADER)));
    return info;
  }
  try {
    const res = await viaAdmission(env, DECODER.info(id), signal);
    const info = (await res.json()) as SourceInfo;
    const expires = Date.now() + config.infoMaxAge * 1000;
    remember(info, expires);
    const stored = Response.json(info, {
      headers: { "cache-control": `max-age=${config.infoMaxAge}`, [EXPIRES_HEADER]: String(expires) },
    });
    ctx.waitUntil(cache.put(infoKey(id), stored));
    return info;
  } catch (err) {
    if (err instanceof HttpError && err.status === 404) {
      const stored = new Response(err.message, {
        status: 404,
        headers: { "cache-control": `max-age=${config.errorMaxAge}` },
      });
      ctx.waitUntil(cache.put(infoKey(id), stored));
    }
    throw err;
  }
}
