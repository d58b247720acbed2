// Path parameters and the public base URL, as the handlers need them.
import { badRequest } from "../../shared/errors";
import type { ApiVersion } from "../../shared/iiif/image-request";

/** A path segment, URL-decoded (clients send "^" as "%5E", "!" as "%21"). */
export function segment(raw: string | undefined, what: string): string {
  try {
    const value = decodeURIComponent(raw ?? "");
    if (value) return value;
  } catch {
    // fall through to the 400
  }
  throw badRequest(`${what} "${raw}" is not a valid URL-encoded path segment`);
}

/** The source identifier from its URL-encoded path segment. */
export const sourceId = (raw: string | undefined) => segment(raw, "identifier");

/**
 * The service's public base, `{scheme}://{host}/iiif/{version}/{id}`. Behind a proxy or CDN
 * that rewrites the host, X-Forwarded-Proto/-Host name the address clients used.
 */
export function serviceId(request: Request, version: ApiVersion, id: string): string {
  const url = new URL(request.url);
  const proto = request.headers.get("x-forwarded-proto")?.split(",")[0].trim() ?? url.protocol.slice(0, -1);
  const host = request.headers.get("x-forwarded-host")?.split(",")[0].trim() ?? url.host;
  const scheme = proto === "https" || proto === "http" ? proto : url.protocol.slice(0, -1);
  return `${scheme}://${host}/iiif/${version}/${encodeURIComponent(id)}`;
}
