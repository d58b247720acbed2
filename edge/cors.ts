// Cross-origin access: every answer may be read by any page (viewers are hosted anywhere).
// itty-router's preflight answers OPTIONS; the answers themselves get their headers here, since
// a browser reads Access-Control-Expose-Headers only on the answer it exposes, never on a
// preflight (itty's corsify adds Allow-Origin alone).
import { cors } from "itty-router";

/** The headers a viewer reads besides the CORS-safelisted ones. */
const EXPOSED = ["Link", "ETag", "x-tessera-cache", "x-tessera-version", "x-request-id"].join(", ");

export const { preflight } = cors({ origin: "*", allowMethods: ["GET", "HEAD", "POST", "OPTIONS"], exposeHeaders: EXPOSED });

/** Marks an answer readable by any page, in place. */
export function allowAnyOrigin(headers: Headers): void {
  headers.set("access-control-allow-origin", "*");
  headers.set("access-control-expose-headers", EXPOSED);
}

/**
 * Router `finally` stage. An answer that carries them already (a handler that built it anew,
 * as a cache hit does) is passed through as it is; any other is copied once, as its headers
 * may be immutable.
 */
export function corsify(res: Response): Response {
  if (res.headers.has("access-control-allow-origin")) return res;
  const out = new Response(res.body, res);
  allowAnyOrigin(out.headers);
  return out;
}
