// All decoder I/O goes through this one small interface (after cogeotiff's Source):
// a source is one pinned snapshot of one object, read by byte ranges.

import type { Restriction } from "../../shared/access";
import { descriptionOf, parseCatalogEntry, restrictionOf, type CatalogEntry, type EntryDescription } from "../../shared/catalog";
import { badGateway, HttpError } from "../../shared/errors";
import type { SourceListing } from "../../shared/protocol";
import { isValidSourceId } from "../../shared/source-id";

/**
 * Besides its bytes, a source carries what its catalog entry said when it was opened by id: who
 * may see it and its description (or why that cannot be read), which the decoder reports.
 */
export interface Source extends EntryDescription {
  /** Opaque snapshot identity (S3 VersionId, or a local file's size+mtime validator). */
  readonly version: string;
  /** Object size in bytes. */
  readonly size: number;
  /** Human-safe description for the log (never an answer): no credentials, no query strings. */
  readonly label: string;
  /**
   * Reads `length` bytes at `offset` from exactly this snapshot. Fails (never returns bytes
   * of another version) if the object changed underneath; aborts promptly on `signal`. Given
   * `room`, a source that reads into memory of the caller's asks it for `length` bytes and
   * returns a view of them: memory the caller reuses (a local file's reads do; a store's answer
   * arrives in buffers of its own, and asks none).
   */
  read(offset: number, length: number, signal?: AbortSignal, room?: (bytes: number) => Uint8Array): Promise<Uint8Array>;
  close(): Promise<void>;
  /**
   * The object's first bytes (any length, maybe none), read when it was opened: a remote store's
   * opening read brings the header with it, so parsing it costs no further round trip.
   */
  readonly firstBytes?: Uint8Array;
  /** Set when the source is a mosaic's document rather than a COG. */
  readonly document?: SourceDocument;
  /**
   * Who may see it, as its catalog entry said when it was opened by id (absent: anyone). The
   * decoder reports it; the edge enforces it.
   */
  readonly access?: Restriction;
}

/** What a catalog entry says of the source opened by id `id` beyond its version. */
export type EntryTerms = Pick<Source, "access" | "description" | "unreadableDescription">;

/** `entry`'s terms for source `id`; an access rule that cannot be read withholds it (restrictionOf). */
export const entryTerms = (entry: CatalogEntry, id: string): EntryTerms => ({ access: restrictionOf(entry, id), ...descriptionOf(entry) });

/**
 * A 502 about one source: `message` for the client, and after the source's label (its bucket
 * and key, its file, its URL) for the decoder's log alone.
 */
export const sourceFault = (label: string, message: string) => badGateway(message, `${label}: ${message}`);

/**
 * What a source id names besides a COG (`{id}.tif`): a MosaicJSON document (`{id}.mosaic.json`)
 * or a STAC document (`{id}.stac.json`), found in that order. `key` is the document's store key,
 * which the assets it names by relative path are resolved against.
 */
export interface SourceDocument {
  kind: "mosaic" | "stac";
  key: string;
}

/** The file names a source id may have in a catalog, in the order they are looked for. */
export const SOURCE_FILES: readonly { suffix: string; document?: SourceDocument["kind"] }[] = [
  { suffix: ".tif" },
  { suffix: ".mosaic.json", document: "mosaic" },
  { suffix: ".stac.json", document: "stac" },
];

/** The store keys source `id`'s files may have (SOURCE_FILES after `prefix`). */
export const sourceFileKeys = (prefix: string, id: string) => SOURCE_FILES.map(({ suffix }) => `${prefix}${id}${suffix}`);

/** The source id whose file the store key `key` is, if it is one of a source's files. */
export function sourceIdOfKey(prefix: string, key: string): string | undefined {
  if (!key.startsWith(prefix)) return undefined;
  const name = key.slice(prefix.length);
  const file = SOURCE_FILES.find(({ suffix }) => name.endsWith(suffix));
  const id = file && name.slice(0, -file.suffix.length);
  return id !== undefined && isValidSourceId(id) ? id : undefined;
}

/** The source id whose COG (`{id}.tif`) the name after a catalog's prefix is, if it is one. */
export function imageIdOfName(name: string): string | undefined {
  const id = name.endsWith(".tif") ? name.slice(0, -".tif".length) : undefined;
  return id !== undefined && isValidSourceId(id) ? id : undefined;
}

/** The name after the prefix that a listing page after source `after` starts after. */
export const listingStart = (after: string) => `${after}.tif`;

/** How many catalog entries a listing page reads at once. */
const ENTRY_READS_AT_ONCE = 8;

/**
 * The listing page of `ids` (the first `limit` of them; `next` when there are more), each with the
 * label its catalog entry gives it: `entryText` is called only for the ids `hasEntry` says have
 * one, a few at a time, and answers the entry's text (undefined: gone since). An entry or a
 * description that cannot be read gives no label (the manifest's info says why, in the log); a
 * store failure fails the page. An id that `needsPin` names (content versions and no COG, which
 * only a pin serves) is left out unless its entry pins a version.
 */
export async function listingPage(
  ids: string[],
  limit: number,
  hasEntry: (id: string) => boolean,
  entryText: (id: string) => Promise<string | undefined>,
  needsPin: (id: string) => boolean = () => false,
): Promise<SourceListing> {
  const page = ids.slice(0, limit);
  const entries = new Map<string, CatalogEntry | undefined>();
  const wanted = page.filter(hasEntry);
  for (let i = 0; i < wanted.length; i += ENTRY_READS_AT_ONCE) {
    await Promise.all(
      wanted.slice(i, i + ENTRY_READS_AT_ONCE).map(async (id) => {
        const text = await entryText(id);
        entries.set(id, text === undefined ? undefined : readableEntry(text, id));
      }),
    );
  }
  const served = page.filter((id) => !needsPin(id) || entries.get(id)?.pin !== undefined);
  return {
    sources: served.map((id) => {
      const entry = entries.get(id);
      const label = entry && descriptionOf(entry).description?.label;
      return label ? { id, label } : { id };
    }),
    ...(ids.length > limit && page.length > 0 && { next: page[page.length - 1] }),
  };
}

/** Source `id`'s entry from `text`, undefined when it cannot be read. */
function readableEntry(text: string, id: string): CatalogEntry | undefined {
  try {
    return parseCatalogEntry(text, id);
  } catch (e) {
    if (e instanceof HttpError) return undefined;
    throw e;
  }
}

/** Maps a public source id to a Source. */
export interface SourceCatalog {
  /**
   * Opens the source `id`, pinned to `version` when given (else to its current version), with the
   * access its catalog entry gives it now. Unknown ids throw HttpError not_found; versions that no
   * longer exist, version_gone (both 404); an access rule this version cannot read, 501.
   */
  open(id: string, version: string | undefined, signal?: AbortSignal): Promise<Source>;
  /**
   * Opens the object at store `key` (a mosaic's asset, a style document) pinned to its current
   * version; 404 when there is none. The caller has checked the key against the access policy.
   * A source's own file (sourceIdOfKey) is refused as that policy refuses (502) unless its
   * entry leaves it open: a restricted source is served only by its id, where the edge checks
   * who asks, never inside another source.
   */
  openKey(key: string, signal?: AbortSignal): Promise<Source>;
  /**
   * A page of at most `limit` image sources (COGs: a mosaic is a map only) after source `after`,
   * in the order of their store keys `{prefix}{id}.tif`, each with its entry's label. Bounded: a
   * few store listings and at most `limit` entry reads per page. Absent from a catalog that
   * cannot list (a mosaic's assets, the tests' stand-ins).
   */
  listSources?(after: string | undefined, limit: number, signal?: AbortSignal): Promise<SourceListing>;
  /** A human-readable description of where sources come from, for the startup log. */
  readonly description: string;
  /**
   * The store key every source id is put after (`{prefix}{id}.tif`; "" for a local directory):
   * where style documents live, and the store keys mosaics may name by default.
   */
  readonly prefix?: string;
}
