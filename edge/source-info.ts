// Source metadata (dimensions, levels, pinned version) as the edge knows it: from its own
// cache when fresh, else asked of a decoder through admission (a cheap, Tile-class request).
// An unknown source is remembered too (for ERROR_MAX_AGE), so a crawler's typo costs nothing.
import { HttpError, notFound } from "../shared/errors";
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
  if (hit?.status === 404) throw notFound(await hit.text());
  if (hit) return hit.json();
  try {
    const res = await viaAdmission(env, DECODER.info(id), signal);
    const info = (await res.json()) as SourceInfo;
    const stored = Response.json(info, { headers: { "cache-control": `max-age=${config.infoMaxAge}` } });
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
