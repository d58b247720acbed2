// Every location's copies of a source's answers, and how an invalidation reaches them. The Cache
// API (and `cache.delete`) reaches one location; Cloudflare's purge API reaches them all, by tag.
// Every answer about a source carries `Cache-Tag` (which Cloudflare strips before the client sees
// it): `tessera:{id}` on the plain id's answers, which a publish or invalidate must reach, and
// `tessera:{id}@{version}` on every answer of that version (a snapshot's are immutable: never
// purged by an invalidation, only by an operator who asks for that tag). Given a zone and a
// token, POST /admin/sources/{id}/invalidate purges `tessera:{id}`; without them, other
// locations serve their copies until they expire (IMAGE_MAX_AGE, INFO_MAX_AGE, plus
// STALE_WHILE_REVALIDATE).
import type { IRequest } from "itty-router";
import { HttpError } from "../shared/errors";
import { VERSION_HEADER } from "../shared/protocol";
import type { EdgeConfig } from "./env";
import { sourceRef } from "./handlers/params";

/** Cloudflare's API, where the purge goes unless CLOUDFLARE_API_BASE says otherwise (a stand-in in tests). */
export const CLOUDFLARE_API = "https://api.cloudflare.com/client/v4";

export interface PurgeConfig {
  zoneId: string;
  token: string;
  apiBase: string;
}

/** The tag every answer under a source's plain id carries. */
export const sourceTag = (id: string) => `tessera:${id}`;

/** Adds `Cache-Tag` to an answer about a source (one that names its version), by the request's id. */
export function cacheTagged(res: Response, req: IRequest): Response {
  const version = res.headers.get(VERSION_HEADER);
  if (!version || req.params?.id === undefined) return res;
  let ref: ReturnType<typeof sourceRef>;
  try {
    ref = sourceRef(req.params.id);
  } catch {
    return res;
  }
  const snapshot = `${sourceTag(ref.id)}@${version}`;
  res.headers.set("cache-tag", ref.version === undefined ? `${sourceTag(ref.id)},${snapshot}` : snapshot);
  return res;
}

/** Purges the plain id's answers in every location; a no-op without a zone and token. The purge API's refusal is a 502 naming it. */
export async function purgeSource(config: Pick<EdgeConfig, "purge">, id: string): Promise<boolean> {
  if (!config.purge) return false;
  const { zoneId, token, apiBase } = config.purge;
  const res = await fetch(`${apiBase}/zones/${encodeURIComponent(zoneId)}/purge_cache`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ tags: [sourceTag(id)] }),
  });
  if (!res.ok) throw new HttpError("bad_gateway", `Cloudflare's purge API refused the purge of ${sourceTag(id)} (${res.status}); invalidate again`);
  await res.body?.cancel();
  return true;
}
