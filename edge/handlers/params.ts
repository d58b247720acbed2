// Path parameters as the handlers need them.
import { badRequest } from "../../shared/errors";

/** The source identifier from its URL-encoded path segment. */
export function sourceId(raw: string | undefined): string {
  try {
    const id = decodeURIComponent(raw ?? "");
    if (id) return id;
  } catch {
    // fall through to the 400
  }
  throw badRequest(`identifier "${raw}" is not a valid URL-encoded identifier`);
}

/** The service's public base, `{scheme}://{host}/iiif/{version}/{id}`. */
export function serviceId(request: Request, version: 2 | 3, id: string): string {
  return `${new URL(request.url).origin}/iiif/${version}/${encodeURIComponent(id)}`;
}
