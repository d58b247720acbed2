// GET /iiif/3/collection.json[?page={id}]: the published images as a IIIF Presentation 3.0
// Collection, a page at a time (shared/iiif/collection.ts). The edge cannot list a bucket, so each
// page is a decoder's listing (GET /v1/sources, a cheap Tile-class request through admission),
// kept in the Cache API for INFO_MAX_AGE by its cursor alone: the host a client names changes the
// URLs written into the document, not which listing it is built from.
import type { IRequest } from "itty-router";
import { badRequest } from "../../shared/errors";
import { collection } from "../../shared/iiif/collection";
import { PRESENTATION_CONTEXT } from "../../shared/iiif/manifest";
import { DECODER, MAX_SOURCE_PAGE, type SourceListing } from "../../shared/protocol";
import { isValidSourceId, SOURCE_ID_RULE } from "../../shared/source-id";
import { viaAdmission } from "../admission-client";
import { edgeConfig, type Env } from "../env";
import { documentAnswer, infoCacheControl, jsonLdHeaders } from "../http-cache";
import { forClient } from "../request-id";
import { publicBase } from "./params";

/** A cursor is a source id; one longer than any a store key holds is no cursor. */
const MAX_CURSOR_LENGTH = 512;

/** Where a page's listing is kept, by its cursor. */
export const listingKey = (after: string | undefined) =>
  `https://tessera.internal/source-listing${after === undefined ? "" : `?after=${encodeURIComponent(after)}`}`;

/** The `page` cursor: absent, or one source id (400 otherwise, before any cache or decoder). */
function cursorOf(req: IRequest): string | undefined {
  const pages = new URL(req.url).searchParams.getAll("page");
  if (pages.length === 0) return undefined;
  if (pages.length > 1) throw badRequest("page: one cursor at most");
  const [page] = pages;
  if (page.length > MAX_CURSOR_LENGTH || !isValidSourceId(page)) throw badRequest(`page: a source id (${SOURCE_ID_RULE}), at most ${MAX_CURSOR_LENGTH} characters`);
  return page;
}

async function listing(after: string | undefined, req: IRequest, env: Env, ctx: ExecutionContext): Promise<SourceListing> {
  const config = edgeConfig(env);
  const key = listingKey(after);
  const hit = await caches.default.match(key);
  if (hit) return (await hit.json()) as SourceListing;
  // Placed as the empty id is: the default region's catalog (or the one SOURCE_REGIONS gives "").
  const res = await viaAdmission(env, "", DECODER.sources(after, MAX_SOURCE_PAGE), forClient(req));
  const page = (await res.json()) as SourceListing;
  ctx.waitUntil(caches.default.put(key, Response.json(page, { headers: { "cache-control": `max-age=${config.infoMaxAge}` } })));
  return page;
}

export async function collectionHandler(req: IRequest, env: Env, ctx: ExecutionContext): Promise<Response> {
  const config = edgeConfig(env);
  const after = cursorOf(req);
  const page = await listing(after, req, env, ctx);
  const base = publicBase(req, config);
  const collectionId = `${base}/iiif/3/collection.json`;
  const doc = collection({
    collectionId,
    after,
    listing: page,
    manifestId: (id) => `${base}/iiif/3/${encodeURIComponent(id)}/manifest.json`,
    pageAfter: (cursor) => `${collectionId}?page=${encodeURIComponent(cursor)}`,
  });
  return documentAnswer(req, JSON.stringify(doc), jsonLdHeaders(req, PRESENTATION_CONTEXT, infoCacheControl(config)));
}
