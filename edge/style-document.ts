// Stored Raster Style documents (`style={name}`), as the edge applies them: asked of a decoder
// through admission (a cheap metadata request, like a source's info), kept in the Cache API for
// INFO_MAX_AGE as the document's text (checked again on every use: the same schema the decoder
// checked it with), and merged into the request before it is made canonical. The canonical request
// spells the document's fields out, so a changed document names new tiles, never stale ones.
import { HttpError, notFound } from "../shared/errors";
import { parseStyleDocument, withStyleDocument, type StyleFields } from "../shared/maps/style";
import type { TileRequest } from "../shared/maps/tile-request";
import { DECODER } from "../shared/protocol";
import { viaAdmission } from "./admission-client";
import type { EdgeConfig, Env } from "./env";
import type { ForClient } from "./request-id";

const styleKey = (name: string) => `https://tessera.internal/style/${encodeURIComponent(name)}`;

/** `tile` with its stored style applied (the query's own fields win); unchanged without `style=`. */
export async function withStoredStyle(tile: TileRequest, env: Env, config: EdgeConfig, ctx: ExecutionContext, client: ForClient): Promise<TileRequest> {
  if (tile.styleName === undefined) return tile;
  return withStyleDocument(tile, await styleDocument(tile.styleName, env, config, ctx, client));
}

async function styleDocument(name: string, env: Env, config: EdgeConfig, ctx: ExecutionContext, client: ForClient): Promise<StyleFields> {
  const cache = caches.default;
  const hit = await cache.match(styleKey(name));
  if (hit?.status === 404) throw notFound(await hit.text());
  if (hit) return parseStyleDocument(await hit.text(), name);
  try {
    const text = await (await viaAdmission(env, name, DECODER.style(name), client)).text();
    const doc = parseStyleDocument(text, name);
    ctx.waitUntil(cache.put(styleKey(name), new Response(text, { headers: { "cache-control": `max-age=${config.infoMaxAge}` } })));
    return doc;
  } catch (err) {
    // An unknown style, like an unknown source, is remembered briefly: a typo costs no decoder.
    if (err instanceof HttpError && err.status === 404) {
      ctx.waitUntil(cache.put(styleKey(name), new Response(err.message, { status: 404, headers: { "cache-control": `max-age=${config.errorMaxAge}` } })));
    }
    throw err;
  }
}
