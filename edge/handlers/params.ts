// Path parameters and the public base URL, as the handlers need them.
import type { ApiVersion } from "../../shared/iiif/image-request";
import { badRequest } from "../../shared/errors";
import { segment } from "../../shared/path-segment";
import type { SourceInfo } from "../../shared/protocol";
import type { EdgeConfig } from "../env";

/**
 * The source a URL names. A plain id follows the source's current version; a snapshot,
 * `{id}@{version}`, names one version for good (ids never contain "@", so it splits them).
 */
export interface SourceRef {
  id: string;
  /** The snapshot's version, exactly as x-tessera-version shows it; undefined: the plain id. */
  version?: string;
  /** `{id}~degraded`: the smaller image of a restricted source that anyone may see (ids never contain "~"). */
  degraded?: true;
}

export const DEGRADED_SUFFIX = "~degraded";

/** The source reference from its URL-encoded path segment. */
export function sourceRef(raw: string | undefined): SourceRef {
  const text = segment(raw, "identifier");
  const degraded = text.endsWith(DEGRADED_SUFFIX);
  const [id, version, ...extra] = (degraded ? text.slice(0, -DEGRADED_SUFFIX.length) : text).split("@");
  if (!id || version === "" || extra.length > 0) {
    throw badRequest(`identifier "${text}" must be {id} or a snapshot {id}@{version}, with one "@" and both parts`);
  }
  return { id, version, ...(degraded && { degraded }) };
}

/** The id as it appears in URLs: `{id}` or `{id}@{version}`. */
export const pathId = ({ id, version, degraded }: SourceRef) =>
  (version === undefined ? encodeURIComponent(id) : `${encodeURIComponent(id)}@${encodeURIComponent(version)}`) +
  (degraded ? DEGRADED_SUFFIX : "");

/**
 * The source a document about it names in its links: a snapshot's own; a plain id's current
 * snapshot too in PLAIN_ID_MODE "snapshot", so a client fetches only immutable URLs and never
 * mixes two versions.
 */
export function citedSource(source: SourceRef, info: SourceInfo, config: EdgeConfig): SourceRef {
  return source.version !== undefined || config.plainIdMode === "snapshot" ? { ...source, version: info.version } : source;
}

/**
 * The service's public base, `{base}/iiif/{version}/{id}`. It becomes the id of a public,
 * cacheable info.json and its links, so it comes from the operator (PUBLIC_BASE_URL), or from
 * X-Forwarded-Proto/-Host only when the operator says a proxy sets them; a client's own
 * forwarded headers would otherwise put its URLs in what a shared cache hands every viewer.
 */
export function serviceId(request: Request, config: EdgeConfig, version: ApiVersion, source: SourceRef): string {
  return `${publicBase(request, config)}/iiif/${version}/${pathId(source)}`;
}

/** The address clients use, without a trailing slash (see serviceId for where it comes from). */
export function publicBase(request: Request, config: EdgeConfig): string {
  if (config.publicBaseUrl) return config.publicBaseUrl;
  const url = new URL(request.url);
  if (!config.trustForwardedHeaders) return url.origin;
  const proto = request.headers.get("x-forwarded-proto")?.split(",")[0].trim() ?? url.protocol.slice(0, -1);
  const host = request.headers.get("x-forwarded-host")?.split(",")[0].trim() ?? url.host;
  const scheme = proto === "https" || proto === "http" ? proto : url.protocol.slice(0, -1);
  return `${scheme}://${host}`;
}
