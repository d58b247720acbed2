// HTTP caching rules, kept apart from the handlers: strong ETags, conditional requests, and
// the Cache-Control values. Cache API storage itself is in the handlers that own the keys.
import type { EdgeConfig } from "./env";
import type { SourceRef } from "./handlers/params";

/** A strong ETag from the parts that determine a representation's bytes. */
export async function strongEtag(...parts: string[]): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(parts.join("\n")));
  const hex = Array.from(new Uint8Array(digest).slice(0, 16), (b) => b.toString(16).padStart(2, "0")).join("");
  return `"${hex}"`;
}

/** If-None-Match uses the weak comparison (RFC 9110 §13.1.2), so a W/ prefix still matches. */
export function matchesIfNoneMatch(request: Request, etag: string): boolean {
  const header = request.headers.get("if-none-match");
  if (!header) return false;
  if (header.trim() === "*") return true;
  return header.split(",").some((tag) => tag.trim().replace(/^W\//, "") === etag);
}

export function notModified(etag: string, headers: Record<string, string>): Response {
  return new Response(null, { status: 304, headers: { etag, ...headers } });
}

/** A year, the longest max-age caches are asked to keep: what a snapshot URL names never changes. */
export const SNAPSHOT_MAX_AGE = 31536000;
export const SNAPSHOT_CACHE_CONTROL = `public, max-age=${SNAPSHOT_MAX_AGE}, immutable`;

/**
 * An image or /file of `source`. A snapshot's never changes. A plain id's follows the source:
 * in "revalidate" mode it is kept no longer than the edge trusts a version (INFO_MAX_AGE, no
 * stale serving) and then revalidated by its strong ETag, which costs no decode.
 */
export function bytesCacheControl(c: EdgeConfig, source: SourceRef): string {
  if (source.version !== undefined) return SNAPSHOT_CACHE_CONTROL;
  if (c.plainIdMode === "revalidate") return `public, max-age=${Math.min(c.imageMaxAge, c.infoMaxAge)}`;
  return imageCacheControl(c);
}

/** A document about `source` (info.json, TileJSON, WMTS): a plain id's changes with each publish, a snapshot's never. */
export const documentCacheControl = (c: EdgeConfig, source: SourceRef) =>
  source.version === undefined ? infoCacheControl(c) : SNAPSHOT_CACHE_CONTROL;

/**
 * The headers of a IIIF JSON-LD document (info.json, a manifest, a collection, an annotation):
 * JSON-LD with its context as the profile when the client asks for it, as the IIIF APIs' content
 * negotiation says, plain JSON otherwise; the body is the same either way.
 */
export function jsonLdHeaders(request: Request, context: string, cacheControl: string): { "content-type": string; "cache-control": string; vary: string } {
  const ldJson = (request.headers.get("accept") ?? "").includes("application/ld+json");
  return { "content-type": ldJson ? `application/ld+json;profile="${context}"` : "application/json", "cache-control": cacheControl, vary: "Accept" };
}

/** A document sent whole: its ETag is its digest, and a client that holds it gets 304. */
export async function documentAnswer(request: Request, body: string, headers: Record<string, string>): Promise<Response> {
  const etag = await strongEtag(headers["content-type"] ?? "", body);
  if (matchesIfNoneMatch(request, etag)) return notModified(etag, headers);
  return new Response(body, { headers: { ...headers, etag } });
}

export const imageCacheControl = (c: EdgeConfig) =>
  `public, max-age=${c.imageMaxAge}, stale-while-revalidate=${c.staleWhileRevalidate}`;
export const infoCacheControl = (c: EdgeConfig) =>
  `public, max-age=${c.infoMaxAge}, stale-while-revalidate=${c.staleWhileRevalidate}`;
export const errorCacheControl = (c: EdgeConfig) => `public, max-age=${c.errorMaxAge}`;

/**
 * Client errors that the same request would get again: worth caching for ERROR_MAX_AGE.
 * Not 408 (a slow moment), not 401 (the next client to ask may present a grant), and not 413:
 * the budget it is measured against grows when decoders join (MEMORY_LIMIT=0), so yesterday's
 * "never" may fit today.
 */
export const isPermanentError = (status: number) =>
  status === 501 || (status >= 400 && status < 500 && status !== 401 && status !== 408 && status !== 413);
