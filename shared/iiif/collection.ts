// The IIIF Presentation API 3.0 collection of a catalog's images, one page at a time. Presentation
// 3.0 has no paging properties for a Collection (`first`, `next` and the like are Annotation
// Collections' and Pages'); a Collection's `items` may hold Collections, so a page that has more
// after it ends with a reference to the next page, itself a Collection, and each further page
// names the whole as `partOf`. A viewer opens the next page as it opens any sub-collection.
import type { LanguageMap } from "../description";
import type { SourceListing } from "../protocol";
import { PRESENTATION_CONTEXT } from "./manifest";

/** The collection's own label. */
export const COLLECTION_LABEL: LanguageMap = { en: ["All images"] };

export interface CollectionParts {
  /** The collection's URL (the first page's). */
  collectionId: string;
  /** The cursor the page starts after; undefined: the first page, the collection itself. */
  after?: string;
  /** The page's sources; `next` the cursor of the page after it. */
  listing: SourceListing;
  /** The manifest URL of source `id`. */
  manifestId: (id: string) => string;
  /** The URL of the page after cursor `after`. */
  pageAfter: (after: string) => string;
}

export function collection({ collectionId, after, listing, manifestId, pageAfter }: CollectionParts) {
  // Every referenced Manifest MUST have a label: without its publisher's, the id, as its manifest says.
  const items: Record<string, unknown>[] = listing.sources.map(({ id, label }) => ({ id: manifestId(id), type: "Manifest", label: label ?? { none: [id] } }));
  if (listing.next !== undefined) items.push({ id: pageAfter(listing.next), type: "Collection", label: { en: [`More, after ${listing.next}`] } });
  return {
    "@context": PRESENTATION_CONTEXT,
    id: after === undefined ? collectionId : pageAfter(after),
    type: "Collection",
    label: after === undefined ? COLLECTION_LABEL : { en: [`All images, after ${after}`] },
    ...(after !== undefined && { partOf: [{ id: collectionId, type: "Collection", label: COLLECTION_LABEL }] }),
    items,
  };
}
