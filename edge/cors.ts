// Cross-origin access: every answer may be read by any page (viewers are hosted anywhere).
import { cors } from "itty-router";

export const { preflight, corsify } = cors({
  origin: "*",
  allowMethods: ["GET", "HEAD", "OPTIONS"],
  exposeHeaders: ["Link", "ETag", "x-tessera-cache", "x-tessera-version", "x-request-id"],
});

/**
 * The header corsify adds. An answer that carries it already is passed through as it is, so a
 * handler that builds its answer anew anyway (a cache hit) saves corsify's second copy.
 */
export const ALLOW_ANY_ORIGIN = ["access-control-allow-origin", "*"] as const;
