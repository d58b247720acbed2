// S3 sources: open() pins the version the source's catalog entry pins (or, without a pin, the
// object's current one) by its VersionId (or, in an unversioned bucket and for the "null"
// version, its strong ETag), and every read is a ranged GET of exactly that snapshot, so a tile
// can never mix bytes of two versions. The entry's snapshot policy decides whether an object
// without such a validator may be served at all, and its access rule and description go with the
// source.
//
// Opening costs one round trip in the common case: the object is opened by a ranged GET of its
// first bytes (whose answer names its size, VersionId and ETag, so no HEAD), sent together with
// the read of the catalog entry; those bytes hold a COG's header and IFDs for the parser.
import {
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  type GetObjectCommandInput,
  type ListObjectsV2CommandInput,
  type ListObjectsV2CommandOutput,
  type HeadObjectCommandOutput,
  type S3Client,
} from "@aws-sdk/client-s3";
import type { Restriction } from "../../shared/access.js";
import { catalogKey, NO_ENTRY, parseCatalogEntry, type CatalogEntry, type SnapshotPolicy } from "../../shared/catalog.js";
import type { Description } from "../../shared/description.js";
import { HttpError, notFound, versionGone } from "../../shared/errors.js";
import { parseContentRange } from "./content-range.js";
import { nameOf, statusOf } from "./s3-location.js";
import { contentVersionKey, contentVersionsPrefix, idOfVersionsFolder, isContentVersion } from "./content-versions.js";
import { assertOpenFile } from "./restricted-files.js";
import type { SourceListing } from "../../shared/protocol.js";
import { isValidSourceId } from "../../shared/source-id.js";
import { entryTerms, imageIdOfName, listingPage, listingStart, SOURCE_FILES, sourceFault, sourceIdOfKey, type EntryTerms, type Source, type SourceCatalog, type SourceDocument } from "./source.js";

export interface S3CatalogConfig {
  client: S3Client;
  bucket: string;
  /** Key prefix; source id `x` lives at `<prefix>x.tif` (or `.mosaic.json`, `.stac.json`). */
  prefix: string;
  /** Bytes of the ranged GET that opens an object (default 64 KiB): a typical COG's header and IFDs. */
  firstReadBytes?: number;
}

/** Keys a ListObjectsV2 answers at most (S3's own most). */
const KEYS_PER_LISTING = 1000;
/** The listings one page of sources may take: a page is a bounded number of store calls. */
const MAX_LISTINGS_PER_PAGE = 3;
/** Folders of content versions one page looks up by name (placeUnreachedFolders). */
const MAX_FOLDER_LOOKUPS = 4;
/** The name ending of a source's catalog entry (catalogKey). */
const ENTRY_SUFFIX = ".tessera.json";

/** Enough for the header, every IFD and the tile tables of a COG of a few thousand tiles. */
export const DEFAULT_FIRST_READ_BYTES = 64 * 1024;


/** An aborted call rejects with the signal's reason (e.g. the deadline's own HttpError). */
function rethrowIfAborted(signal: AbortSignal | undefined, e: unknown): void {
  if (signal?.aborted) throw signal.reason ?? e;
}

/** A failed S3 call: the client is told the store failed; the call, the object and the SDK's error name go to the log. */
function storeFailure(what: string, label: string, e: unknown): HttpError {
  const status = statusOf(e);
  const timeout = nameOf(e) === "TimeoutError";
  const code = status === undefined ? "" : `${status} `;
  const message = timeout ? "the image store did not answer in time" : "the image store failed";
  return new HttpError(timeout ? "gateway_timeout" : "bad_gateway", message, undefined, `S3 ${what} failed for ${label}: ${code}${nameOf(e)}`);
}

/**
 * Whether a failed open means "no such object (version)": 404 no such key/version, or the current
 * version is a delete marker; with a version asked for, 405 (it names a delete marker), 400 (the
 * store cannot parse it) or 412 (the ETag pin is gone).
 */
function isMissing(e: unknown, version: string | undefined): boolean {
  const status = statusOf(e);
  const name = nameOf(e);
  const missing = status === 404 || name === "NotFound" || name === "NoSuchKey" || name === "NoSuchVersion";
  return missing || (version !== undefined && (status === 400 || status === 405 || status === 412));
}

// S3 VersionIds never contain '"', ETags always start with it (or W/): that tells the two kinds
// of pinned version apart when a version comes back in a URL.
const isEtag = (version: string) => version.startsWith('"') || version.startsWith("W/");

/** How a request names `version`: by VersionId, or as an ETag by If-Match; nothing for the latest. */
function selecting(version: string | undefined): { VersionId?: string; IfMatch?: string } {
  if (version === undefined) return {};
  return isEtag(version) ? { IfMatch: version } : { VersionId: version };
}

/** The VersionId S3 gives an object written while versioning was off or suspended. */
const NULL_VERSION = "null";

/** One version of one object as its opening read found it. */
interface Snapshot {
  key: string;
  size: number;
  versionId?: string;
  etag?: string;
  /** The object's first bytes, from offset 0. */
  firstBytes: Uint8Array;
  document?: SourceDocument;
  /** The content version (SHA-256) this object is, in a bucket without versions. */
  contentVersion?: string;
}

const isSnapshotOf = (snapshot: Snapshot, version: string) =>
  version === snapshot.versionId || version === snapshot.etag || version === snapshot.contentVersion;

export class S3SourceCatalog implements SourceCatalog {
  readonly description: string;

  readonly prefix: string;

  private readonly firstReadBytes: number;

  constructor(private readonly cfg: S3CatalogConfig) {
    this.description = `s3://${cfg.bucket}/${cfg.prefix}<id>.tif`;
    this.prefix = cfg.prefix;
    this.firstReadBytes = cfg.firstReadBytes ?? DEFAULT_FIRST_READ_BYTES;
  }

  /**
   * One round trip in the common case: the catalog entry and the object's first bytes are read
   * together, the object at the version asked for or, when none is, at its latest, which is what
   * the entry pins unless a publisher rolled it back (then a second read at the pin).
   */
  async open(id: string, requested: string | undefined, signal?: AbortSignal): Promise<Source> {
    if (id === "") throw notFound("empty source id");
    const [entry, found] = await Promise.all([this.entry(id, signal), this.find(id, requested, signal)]);
    const terms = entryTerms(entry, id);
    const pin = requested ?? entry.pin;
    // Without a version asked for, the latest was read on the chance that the entry pins it.
    const missedPin = requested === undefined && pin !== undefined && !(found && isSnapshotOf(found, pin));
    const snapshot = missedPin ? await this.find(id, pin, signal) : found;
    if (snapshot) return this.pinned(this.asPinned(snapshot, entry), entry.policy, terms);
    if (pin === undefined) throw notFound(`unknown source "${id}"`);
    throw versionGone(`source "${id}" has no version "${pin}"`);
  }

  /** `snapshot`, unless it is the entry's pinned content version with bytes other than the ETag pinned. */
  private asPinned(snapshot: Snapshot, entry: CatalogEntry): Snapshot {
    const { contentVersion, etag } = snapshot;
    if (contentVersion === undefined || contentVersion !== entry.pin || entry.etag === undefined || etag === entry.etag) return snapshot;
    throw sourceFault(`s3://${this.cfg.bucket}/${snapshot.key}`, `source changed: version ${contentVersion} has ETag ${etag}, pinned as ${entry.etag}`);
  }

  /** A source's own file comes with its entry, read at once: no round trip more for the check. */
  async openKey(key: string, signal?: AbortSignal): Promise<Source> {
    const id = sourceIdOfKey(this.prefix, key);
    const [snapshot, entry] = await Promise.all([this.snapshot(key, undefined, signal), id === undefined ? undefined : this.entry(id, signal)]);
    if (!snapshot) throw notFound("no such object", `no object s3://${this.cfg.bucket}/${key}`);
    if (entry) assertOpenFile(entry, id!, `s3://${this.cfg.bucket}/${key}`);
    return this.pinned(snapshot, NO_ENTRY.policy, {});
  }

  /**
   * ListObjectsV2 from `{prefix}{after}.tif`, a thousand keys a call and at most
   * MAX_LISTINGS_PER_PAGE calls, until `limit` + 1 sources are seen (the one past says more follow).
   * The Delimiter folds each folder under the prefix into one key: a mosaic's assets, or a source's
   * content versions (`{id}.versions/`, a bucket without versions), listed as that source at the
   * place its COG's key would have, `{id}.tif`, and once when it has both. The same listing names
   * the entries (`{id}.tessera.json`), so only those are read; an entry stored before where the
   * listing starts (an id such as `b` after `b.th`) is read by its key.
   */
  async listSources(after: string | undefined, limit: number, signal?: AbortSignal): Promise<SourceListing> {
    const { bucket, prefix } = this.cfg;
    const startAfter = after === undefined ? undefined : prefix + listingStart(after);
    const { places, folderOnly, entries, last, more } = await this.listPlaces(startAfter, limit, signal);
    const horizon = more ? await this.placeUnreachedFolders(last, startAfter, places, folderOnly, signal) : undefined;
    const ids = [...places]
      .filter(([, place]) => horizon === undefined || place < horizon)
      .sort(([, a], [, b]) => (a < b ? -1 : 1))
      .map(([id]) => id);
    // Listings left over: the page ends at its last source, and the next one starts after it.
    if (more && ids.length <= limit) {
      if (ids.length === 0) throw sourceFault(`s3://${bucket}/${prefix}`, `${MAX_LISTINGS_PER_PAGE * KEYS_PER_LISTING} keys in a row hold no image: the listing stops there`);
      ids.push(""); // stands for the sources past the last listing; never in the page
      limit = Math.min(limit, ids.length - 1);
    }
    const storedBefore = (id: string) => startAfter !== undefined && `${prefix}${id}${ENTRY_SUFFIX}` <= startAfter;
    const hasEntry = (id: string) => entries.has(id) || storedBefore(id);
    return listingPage(ids, limit, hasEntry, (id) => this.entryText(id, signal), (id) => folderOnly.has(id));
  }

  /** Where source `id` is in the order of the listing: its COG's key, `{prefix}{id}.tif`. */
  private placeOf = (id: string) => this.cfg.prefix + listingStart(id);

  /**
   * The sources the listings after `startAfter` find (each with its place; `folderOnly` those with
   * content versions and no COG), the entries they name, the last key or folder they reached, and
   * whether more listings follow.
   */
  private async listPlaces(startAfter: string | undefined, limit: number, signal?: AbortSignal) {
    const { prefix } = this.cfg;
    const places = new Map<string, string>();
    const folderOnly = new Set<string>();
    const entries = new Set<string>();
    let last = "";
    let token: string | undefined;
    for (let call = 0; call < MAX_LISTINGS_PER_PAGE; call++) {
      const from = token !== undefined ? { ContinuationToken: token } : startAfter !== undefined ? { StartAfter: startAfter } : {};
      const out = await this.list({ Delimiter: "/", MaxKeys: KEYS_PER_LISTING, ...from }, signal);
      for (const { Key } of out.Contents ?? []) {
        if (Key === undefined || !Key.startsWith(prefix)) continue;
        const name = Key.slice(prefix.length);
        if (name.endsWith(ENTRY_SUFFIX)) entries.add(name.slice(0, -ENTRY_SUFFIX.length));
        const id = imageIdOfName(name);
        if (id !== undefined) places.set(id, Key);
        if (Key > last) last = Key;
      }
      for (const { Prefix: folder } of out.CommonPrefixes ?? []) {
        if (folder === undefined || !folder.startsWith(prefix)) continue;
        const id = idOfVersionsFolder(folder.slice(prefix.length));
        // A folder whose place is before the page was listed on an earlier page.
        if (id !== undefined && !places.has(id) && (startAfter === undefined || this.placeOf(id) > startAfter)) {
          places.set(id, this.placeOf(id));
          folderOnly.add(id);
        }
        if (folder > last) last = folder;
      }
      token = out.IsTruncated ? out.NextContinuationToken : undefined;
      if (places.size > limit || token === undefined) break;
    }
    return { places, folderOnly, entries, last, more: token !== undefined };
  }

  /**
   * A folder of content versions comes after its place in the order (`a.versions/` after
   * `a.u.tif`): one whose place is before `last` and whose folder is after it, unreached by the
   * listings, belongs to an id that `last`'s name begins with up to a dot. Those are looked up by
   * name (MAX_FOLDER_LOOKUPS at most) and put in `places`; answers the place the page must end
   * before when more are left unlooked.
   */
  private async placeUnreachedFolders(
    last: string,
    startAfter: string | undefined,
    places: Map<string, string>,
    folderOnly: Set<string>,
    signal?: AbortSignal,
  ): Promise<string | undefined> {
    const { prefix } = this.cfg;
    const name = last.slice(prefix.length);
    const unreached: string[] = [];
    for (let dot = name.indexOf("."); dot > 0; dot = name.indexOf(".", dot + 1)) {
      const id = name.slice(0, dot);
      const place = this.placeOf(id);
      const afterPage = startAfter === undefined || place > startAfter;
      if (isValidSourceId(id) && !places.has(id) && afterPage && place <= last && contentVersionsPrefix(prefix, id) > last) unreached.push(id);
    }
    unreached.sort((a, b) => (this.placeOf(a) < this.placeOf(b) ? -1 : 1));
    await Promise.all(
      unreached.slice(0, MAX_FOLDER_LOOKUPS).map(async (id) => {
        const out = await this.list({ Prefix: contentVersionsPrefix(prefix, id), MaxKeys: 1 }, signal);
        if ((out.Contents ?? []).length === 0) return;
        places.set(id, this.placeOf(id));
        folderOnly.add(id);
      }),
    );
    return unreached.length > MAX_FOLDER_LOOKUPS ? this.placeOf(unreached[MAX_FOLDER_LOOKUPS]) : undefined;
  }

  /** One ListObjectsV2 of the bucket, under the prefix unless `input` names another. */
  private async list(input: Omit<ListObjectsV2CommandInput, "Bucket">, signal?: AbortSignal): Promise<ListObjectsV2CommandOutput> {
    const { client, bucket, prefix } = this.cfg;
    try {
      return await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ...input }), { abortSignal: signal });
    } catch (e) {
      rethrowIfAborted(signal, e);
      throw storeFailure("ListObjectsV2", `s3://${bucket}/${input.Prefix ?? prefix}`, e);
    }
  }

  /** Entry `id`'s text, undefined when it has none. */
  private async entryText(id: string, signal?: AbortSignal): Promise<string | undefined> {
    const { client, bucket, prefix } = this.cfg;
    const key = catalogKey(prefix, id);
    try {
      const out = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }), { abortSignal: signal });
      return (await out.Body?.transformToString()) ?? "";
    } catch (e) {
      rethrowIfAborted(signal, e);
      if (statusOf(e) === 404 || nameOf(e) === "NoSuchKey") return undefined;
      throw storeFailure("GetObject", `s3://${bucket}/${key}`, e);
    }
  }

  /**
   * The first of the source's files (SOURCE_FILES) that exists at `version`. The COG is looked for
   * first; only when it is missing are the documents looked for, both at once.
   */
  private async find(id: string, version: string | undefined, signal?: AbortSignal): Promise<Snapshot | undefined> {
    if (version !== undefined && isContentVersion(version)) return this.contentSnapshot(id, version, signal);
    const [cog, ...documents] = SOURCE_FILES.map(({ suffix, document }) => ({ key: `${this.cfg.prefix}${id}${suffix}`, document }));
    const found = await this.snapshot(cog.key, version, signal);
    if (found) return found;
    const others = await Promise.all(
      documents.map(({ key, document }) => this.snapshot(key, version, signal, document && { kind: document, key })),
    );
    return others.find((s) => s !== undefined);
  }

  /**
   * Content version `sha256` of `id` (cli/source-store.ts writes it): an object never written
   * twice, so it is read by its key, each read conditional on the ETag this read finds.
   */
  private async contentSnapshot(id: string, sha256: string, signal?: AbortSignal): Promise<Snapshot | undefined> {
    const found = await this.snapshot(contentVersionKey(this.cfg.prefix, id, sha256), undefined, signal);
    return found && { ...found, contentVersion: sha256 };
  }

  /**
   * The object at `key` (pinned to `version` when given) by a ranged GET of its first bytes, whose
   * answer also tells its size, VersionId and ETag; undefined when it has no such key or version.
   */
  private async snapshot(key: string, version: string | undefined, signal?: AbortSignal, document?: SourceDocument): Promise<Snapshot | undefined> {
    const { client, bucket } = this.cfg;
    const label = `s3://${bucket}/${key}`;
    const input: GetObjectCommandInput = { Bucket: bucket, Key: key, ...selecting(version), Range: `bytes=0-${this.firstReadBytes - 1}` };
    let out;
    try {
      out = await client.send(new GetObjectCommand(input), { abortSignal: signal });
    } catch (e) {
      rethrowIfAborted(signal, e);
      if (isMissing(e, version)) return undefined;
      // An empty object has no byte 0 to range over: only a HEAD tells its version.
      if (statusOf(e) === 416) return this.head(key, version, signal, document);
      throw storeFailure("GetObject", label, e);
    }
    const body = out.Body as Body | undefined;
    const range = parseContentRange(out.ContentRange);
    if (!range || range.first !== 0 || range.last !== Math.min(this.firstReadBytes, range.total) - 1) {
      body?.destroy?.();
      throw sourceFault(label, `the image store answered ${input.Range} with Content-Range ${out.ContentRange ?? "(none)"}`);
    }
    const firstBytes = await readFully(body, range.last + 1, label, signal);
    return { key, size: range.total, versionId: out.VersionId, etag: out.ETag, firstBytes, document };
  }

  /** As snapshot, for an object too small to range over: a HEAD, and no bytes. */
  private async head(key: string, version: string | undefined, signal?: AbortSignal, document?: SourceDocument): Promise<Snapshot | undefined> {
    const { client, bucket } = this.cfg;
    let head: HeadObjectCommandOutput;
    try {
      head = await client.send(new HeadObjectCommand({ Bucket: bucket, Key: key, ...selecting(version) }), { abortSignal: signal });
    } catch (e) {
      rethrowIfAborted(signal, e);
      if (isMissing(e, version)) return undefined;
      throw storeFailure("HeadObject", `s3://${bucket}/${key}`, e);
    }
    const size = head.ContentLength;
    if (size === undefined || !Number.isSafeInteger(size) || size < 0) {
      throw sourceFault(`s3://${bucket}/${key}`, "the image store gave no object size");
    }
    return { key, size, versionId: head.VersionId, etag: head.ETag, firstBytes: new Uint8Array(0), document };
  }

  /** A Source pinned to `snapshot` with its entry's `terms`, if the snapshot policy lets it be served. */
  private pinned(snapshot: Snapshot, policy: SnapshotPolicy, terms: EntryTerms): Source {
    const { client, bucket } = this.cfg;
    const { key, etag, versionId } = snapshot;
    const label = `s3://${bucket}/${key}`;
    // A versioned bucket returns the VersionId; an unversioned one returns none, and then the
    // strong ETag plus If-Match is the only way to detect a replaced object. So does the "null"
    // version (written while versioning was off or suspended), which is overwritten in place.
    const overwritable = !versionId || versionId === NULL_VERSION;
    const validated = !overwritable || (etag !== undefined && !etag.startsWith("W/"));
    if (validated) return new S3Source(client, bucket, label, snapshot, terms);
    if (policy === "AssumeImmutable") {
      // Served as the publisher promised: unconditional reads, known by whatever identity it has.
      const unvalidated = { ...snapshot, versionId: undefined, etag: undefined };
      return new S3Source(client, bucket, label, unvalidated, terms, `${etag ?? "unvalidated"}:${snapshot.size}`);
    }
    throw sourceFault(
      label,
      "the source has neither a VersionId nor a strong ETag, and its policy RequireValidator refuses an object " +
        'every read cannot be checked against (set "policy": "AssumeImmutable" in its catalog entry only if it never changes)',
    );
  }

  /** The source's catalog entry; none stored means the latest version under RequireValidator. */
  private async entry(id: string, signal?: AbortSignal): Promise<CatalogEntry> {
    const text = await this.entryText(id, signal);
    const { bucket, prefix } = this.cfg;
    return text === undefined ? NO_ENTRY : parseCatalogEntry(text, `s3://${bucket}/${catalogKey(prefix, id)}`);
  }
}

class S3Source implements Source {
  readonly version: string;
  readonly size: number;
  readonly firstBytes: Uint8Array;
  readonly document?: SourceDocument;
  readonly access?: Restriction;
  readonly description?: Description;
  readonly unreadableDescription?: string;
  private readonly key: string;
  private readonly versionId: string | undefined;
  private readonly etag: string | undefined;
  private readonly ifMatch: string | undefined;

  constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
    readonly label: string,
    snapshot: Snapshot,
    { access, description, unreadableDescription }: EntryTerms,
    assumedVersion?: string,
  ) {
    this.access = access;
    this.description = description;
    this.unreadableDescription = unreadableDescription;
    this.key = snapshot.key;
    this.size = snapshot.size;
    this.versionId = snapshot.versionId;
    this.etag = snapshot.etag;
    this.firstBytes = snapshot.firstBytes;
    this.document = snapshot.document;
    // The "null" version is read by that name (it stays readable once a newer version exists)
    // but known by its ETag: an in-place overwrite must not share cache keys with the old bytes.
    const named = this.versionId && this.versionId !== NULL_VERSION ? this.versionId : (this.etag ?? assumedVersion!);
    this.version = snapshot.contentVersion ?? named;
    // Without a VersionId to name the bytes, every read is conditional on the ETag.
    this.ifMatch = named === this.etag ? this.etag : undefined;
  }

  async read(offset: number, length: number, signal?: AbortSignal): Promise<Uint8Array> {
    // Validate before any fetch: a range past the end comes from a broken header, not from I/O.
    const valid = Number.isSafeInteger(offset) && Number.isSafeInteger(length);
    if (!valid || offset < 0 || length < 0 || offset + length > this.size) {
      throw sourceFault(this.label, `read ${offset}+${length} is outside the source (${this.size} bytes)`);
    }
    signal?.throwIfAborted();
    if (length === 0) return new Uint8Array(0);
    const input: GetObjectCommandInput = {
      Bucket: this.bucket,
      Key: this.key,
      VersionId: this.versionId,
      Range: `bytes=${offset}-${offset + length - 1}`,
    };
    if (this.ifMatch) input.IfMatch = this.ifMatch;
    let out;
    try {
      out = await this.client.send(new GetObjectCommand(input), { abortSignal: signal });
    } catch (e) {
      rethrowIfAborted(signal, e);
      if (statusOf(e) === 412 || statusOf(e) === 404) {
        throw changed(this.label, `version ${this.version} is gone`);
      }
      throw storeFailure("GetObject", this.label, e);
    }
    const body = out.Body as Body | undefined;
    const refusal = this.refusal(out.VersionId, out.ContentRange, offset, length);
    if (refusal) {
      body?.destroy?.(); // else it holds its connection, and the store its transfer, until GC
      throw refusal;
    }
    return readFully(body, length, this.label, signal);
  }

  /** Why an answer is not the pinned snapshot's bytes offset..offset+length, if it is not. */
  private refusal(sentVersion: string | undefined, sentRange: string | undefined, offset: number, length: number): HttpError | undefined {
    if (this.versionId && sentVersion && sentVersion !== this.versionId) {
      return changed(this.label, `the store sent version ${sentVersion}, not ${this.versionId}`);
    }
    const want = `bytes ${offset}-${offset + length - 1}/${this.size}`;
    if (sentRange !== undefined && sentRange !== want) {
      return changed(this.label, `the store sent ${sentRange}, not ${want}`);
    }
    return undefined;
  }

  async close(): Promise<void> {
    // Nothing to release: the S3Client (and its sockets) belongs to whoever built the catalog.
  }
}

type Body = AsyncIterable<Uint8Array> & { destroy?(e?: unknown): void }; // Node Readable

/** A read that is not of the pinned snapshot: `what` it got, the object's label for the log. */
const changed = (label: string, what: string) => sourceFault(label, `source changed: ${what}`);

/** Copies a response body into one buffer; anything but exactly `length` bytes is an error. */
async function readFully(
  body: Body | undefined,
  length: number,
  label: string,
  signal?: AbortSignal,
): Promise<Uint8Array> {
  if (!body) throw sourceFault(label, "the image store sent no body");
  const buf = new Uint8Array(length);
  let got = 0;
  // The SDK aborts the request on `signal`, but once headers are in, destroying the body stream
  // ourselves is what stops a long transfer promptly.
  const onAbort = () => body.destroy?.(signal?.reason);
  signal?.addEventListener("abort", onAbort, { once: true });
  try {
    for await (const chunk of body) {
      if (got + chunk.byteLength > length) {
        throw changed(label, `the store sent more than the ${length} bytes asked`);
      }
      buf.set(chunk, got);
      got += chunk.byteLength;
    }
  } catch (e) {
    rethrowIfAborted(signal, e);
    if (e instanceof HttpError) {
      body.destroy?.();
      throw e;
    }
    throw storeFailure("GetObject body", label, e);
  } finally {
    signal?.removeEventListener("abort", onAbort);
  }
  signal?.throwIfAborted();
  if (got !== length) {
    throw sourceFault(label, `the image store sent ${got} of the ${length} bytes asked`);
  }
  return buf;
}
