// Path parameters and the public base URL, as the handlers need them.
import type { ApiVersion } from "../../shared/iiif/image-request";
import { segment } from "../../shared/path-segment";
import type { EdgeConfig } from "../env";

/** The source identifier from its URL-encoded path segment. */
export const sourceId = (raw: string | undefined) => segment(raw, "identifier");

/**
 * The service's public base, `{base}/iiif/{version}/{id}`. It becomes the id of a public,
 * cacheable info.json and its links, so it comes from the operator (PUBLIC_BASE_URL), or from
 * X-Forwarded-Proto/-Host only when the operator says a proxy sets them; a client's own
 * forwarded headers would otherwise put its URLs in what a shared cache hands every viewer.
 */
export function serviceId(request: Request, config: EdgeConfig, version: ApiVersion, id: string): string {
  return `${publicBase(request, config)}/iiif/${version}/${encodeURIComponent(id)}`;
}

function publicBase(request: Request, config: EdgeConfig): string {
  if (config.publicBaseUrl) return config.publicBaseUrl;
  const url = new URL(request.url);
  if (!config.trustForwardedHeaders) return url.origin;
  const proto = request.headers.get("x-forwarded-proto")?.split(",")[0].trim() ?? url.protocol.slice(0, -1);
  const host = request.headers.get("x-forwarded-host")?.split(",")[0].trim() ?? url.host;
  const scheme = proto === "https" || proto === "http" ? proto : url.protocol.slice(0, -1);
  return `${scheme}://${host}`;
}
