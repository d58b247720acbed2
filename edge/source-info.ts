// Source metadata (dimensions, levels, pinned version) as the edge knows it: from its own
// cache when fresh, else asked of a decoder through admission (a cheap, Tile-class request).
import { DECODER, type SourceInfo } from "../shared/protocol";
import { viaAdmission } from "./admission-client";
import type { EdgeConfig, Env } from "./env";

export const infoKey = (id: string) => `https://tessera.internal/source-info/${encodeURIComponent(id)}`;

export async function sourceInfo(
  id: string,
  env: Env,
  config: EdgeConfig,
  ctx: ExecutionContext,
  signal: AbortSignal,
): Promise<SourceInfo> {
  const cache = caches.default;
  const hit = await cache.match(infoKey(id));
  if (hit) return hit.json();
  const res = await viaAdmission(env, DECODER.info(id), signal);
  const info = (await res.json()) as SourceInfo;
  const stored = Response.json(info, { headers: { "cache-control": `max-age=${config.infoMaxAge}` } });
  ctx.waitUntil(cache.put(infoKey(id), stored));
  return info;
}

/** Forgets the cached metadata so the next lookup opens the source's current version. */
export function forgetSourceInfo(id: string): Promise<boolean> {
  return caches.default.delete(infoKey(id));
}
