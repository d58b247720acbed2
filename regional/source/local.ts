// Local-file sources: `<dir>/<id>.tif` (or a mosaic's `<id>.mosaic.json` / `<id>.stac.json`), one
// snapshot per (size, mtime) validator.
// The embedded default for `npm start` and the unit tests. A pinned source keeps one open
// FileHandle and re-checks the validator before answering each read, so a file replaced or
// rewritten underneath fails the read (502) instead of yielding bytes of another version.
// `<dir>/<id>.tessera.json` is the source's catalog entry, in the bucket's format, of which only
// `access` and `description` apply: a directory keeps one version of each file, so there is
// nothing to pin, and every file has a validator, so no snapshot policy is needed.

import { fstatSync } from "node:fs";
import { open, readdir, readFile, stat, type FileHandle } from "node:fs/promises";
import path from "node:path";
import type { Restriction } from "../../shared/access";
import { catalogKey, NO_ENTRY, parseCatalogEntry, type CatalogEntry } from "../../shared/catalog";
import type { Description } from "../../shared/description";
import { notFound, versionGone } from "../../shared/errors";
import { assertOpenFile } from "./restricted-files";
import type { SourceListing } from "../../shared/protocol";
import { entryTerms, imageIdOfName, listingPage, listingStart, SOURCE_FILES, sourceFault, sourceIdOfKey, type EntryTerms, type Source, type SourceCatalog, type SourceDocument } from "./source";
import { isValidSourceId, knownSourceId } from "../../shared/source-id";


/** The snapshot identity of a local file: changes whenever its size or mtime does. */
export function localVersion(st: { size: number; mtimeMs: number }): string {
  return `${st.size}-${st.mtimeMs}`;
}

const throwIfAborted = (signal?: AbortSignal) => signal?.throwIfAborted();

export class LocalCatalog implements SourceCatalog {
  readonly description: string;

  constructor(readonly dir: string) {
    this.description = `local directory ${path.resolve(dir)}`;
  }

  async open(id: string, version: string | undefined, signal?: AbortSignal): Promise<Source> {
    knownSourceId(id);
    const terms = entryTerms(await this.entry(id), id);
    let source: Source | undefined;
    for (const { suffix, document } of SOURCE_FILES) {
      const key = `${id}${suffix}`;
      source = await openLocalFile(path.join(this.dir, key), `local:${id}`, signal, { document: document && { kind: document, key }, ...terms });
      if (source) break;
    }
    if (!source) throw notFound(`unknown source "${id}"`);
    // A local directory keeps only the current version of each file.
    if (version !== undefined && version !== source.version) {
      await source.close();
      throw versionGone(`source "${id}" version no longer available`);
    }
    return source;
  }

  async openKey(key: string, signal?: AbortSignal): Promise<Source> {
    // The access policy has refused keys that climb out; this keeps the directory a jail anyway.
    const file = path.resolve(this.dir, key);
    if (!file.startsWith(path.resolve(this.dir) + path.sep)) throw notFound("no such object", `no object "${key}"`);
    const id = sourceIdOfKey("", key);
    if (id !== undefined) assertOpenFile(await this.entry(id), id, `local:${key}`);
    const source = await openLocalFile(file, `local:${key}`, signal);
    if (!source) throw notFound("no such object", `no object "${key}"`);
    return source;
  }

  /**
   * One read of the directory, its COGs' names sorted as a bucket orders keys (these names are
   * ASCII, where UTF-16 order is byte order), and the entries of the page's ids read.
   */
  async listSources(after: string | undefined, limit: number, signal?: AbortSignal): Promise<SourceListing> {
    // Directories are no sources (open() finds none there); a link may name a file.
    const names = (await readdir(this.dir, { withFileTypes: true })).filter((e) => !e.isDirectory()).map((e) => e.name).sort();
    throwIfAborted(signal);
    const start = after === undefined ? undefined : listingStart(after);
    const ids = names.filter((name) => start === undefined || name > start).flatMap((name) => imageIdOfName(name) ?? []).slice(0, limit + 1);
    const entries = new Set(names);
    return listingPage(ids, limit, (id) => entries.has(catalogKey("", id)), async (id) => {
      throwIfAborted(signal);
      try {
        return await readFile(path.join(this.dir, catalogKey("", id)), "utf8");
      } catch (e) {
        if (isMissing(e)) return undefined;
        throw e;
      }
    });
  }

  /** `id`'s entry, `<id>.tessera.json`; none there means open. A malformed one is 502, as in a bucket. */
  private async entry(id: string): Promise<CatalogEntry> {
    const name = catalogKey("", id);
    let text: string;
    try {
      text = await readFile(path.join(this.dir, name), "utf8");
    } catch (e) {
      if (isMissing(e)) return NO_ENTRY;
      throw e;
    }
    return parseCatalogEntry(text, `local:${name}`);
  }

  /** The current version of `id` without opening it (undefined when unknown). */
  async currentVersion(id: string): Promise<string | undefined> {
    if (!isValidSourceId(id)) return undefined;
    try {
      return localVersion(await stat(path.join(this.dir, `${id}.tif`)));
    } catch (e) {
      if (isMissing(e)) return undefined;
      throw e;
    }
  }
}

/** What a catalog knows of a file beyond its bytes. */
interface Described extends EntryTerms {
  document?: SourceDocument;
}

/**
 * The file at `file` as a Source pinned to its current version, errors labelled `label`;
 * undefined when there is no such file (or it is a directory).
 */
export async function openLocalFile(file: string, label: string, signal?: AbortSignal, described: Described = {}): Promise<Source | undefined> {
  throwIfAborted(signal);
  let handle: FileHandle;
  try {
    handle = await open(file, "r");
  } catch (e) {
    if (isMissing(e)) return undefined;
    throw e;
  }
  try {
    const st = await handle.stat();
    throwIfAborted(signal);
    if (st.isFile()) return new LocalSource(handle, label, localVersion(st), st.size, st.mtimeMs, described);
  } catch (e) {
    await handle.close();
    throw e;
  }
  await handle.close();
  return undefined;
}

function isMissing(e: unknown): boolean {
  const code = (e as NodeJS.ErrnoException)?.code;
  return code === "ENOENT" || code === "ENOTDIR" || code === "EISDIR";
}

class LocalSource implements Source {
  private closed = false;
  readonly document?: SourceDocument;
  readonly access?: Restriction;
  readonly description?: Description;
  readonly unreadableDescription?: string;

  constructor(
    private readonly handle: FileHandle,
    readonly label: string,
    readonly version: string,
    readonly size: number,
    private readonly mtimeMs: number,
    { document, access, description, unreadableDescription }: Described,
  ) {
    this.document = document;
    this.access = access;
    this.description = description;
    this.unreadableDescription = unreadableDescription;
  }

  async read(offset: number, length: number, signal?: AbortSignal, room?: (bytes: number) => Uint8Array): Promise<Uint8Array> {
    throwIfAborted(signal);
    if (this.closed) throw sourceFault(this.label, "source closed");
    if (!Number.isSafeInteger(offset) || !Number.isSafeInteger(length) || offset < 0 || length < 0) {
      throw sourceFault(this.label, "invalid byte range");
    }
    if (offset + length > this.size) {
      throw sourceFault(this.label, "read past the end of the object");
    }
    // Not zero-filled: a short read fails below, so no byte of it is ever returned unwritten. A
    // plain Uint8Array either way (a Buffer's slice() would be a view, not a copy).
    const given = room?.(length);
    const memory = given && given.length >= length ? given : Buffer.allocUnsafeSlow(length);
    const buf = new Uint8Array(memory.buffer, memory.byteOffset, length);
    let done = 0;
    while (done < length) {
      throwIfAborted(signal);
      const { bytesRead } = await this.handle.read(buf, done, length - done, offset + done);
      if (bytesRead === 0) break;
      done += bytesRead;
    }
    // Checked after reading, before answering: if the open file still carries the pinned
    // validator, the bytes are that snapshot's. A rewrite (truncate/append/overwrite) changes
    // size or mtime and fails here. A replace-by-rename leaves our handle on the old inode,
    // whose bytes are still the pinned version; a new open then sees the new version.
    // Writes that restore both size and mtime are beyond what this validator can see.
    this.assertUnchanged();
    if (done !== length) throw sourceFault(this.label, "short read");
    throwIfAborted(signal);
    return buf;
  }

  private assertUnchanged(): void {
    // fstat of an open descriptor reads inode metadata and never waits for the disk: done here
    // on the JS thread, it saves every read a second round trip through the libuv pool.
    const st = fstatSync(this.handle.fd);
    if (st.size !== this.size || st.mtimeMs !== this.mtimeMs) {
      throw sourceFault(this.label, "source changed");
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.handle.close();
  }
}
