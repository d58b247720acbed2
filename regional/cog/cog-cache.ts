// Opened sources (COGs, and mosaics' documents), keyed by `${id}@${version}`, so each
// snapshot's headers are parsed once. A small LRU of leases: an evicted one is closed only when
// its last in-flight request is done, and a failed open is forgotten, never cached.
//
// A snapshot also carries what the source's catalog entry said when it was opened (its access
// rule and description), which a publisher changes without a new version. So an open through the
// catalog (the current version, or any with `fresh`) that finds another rule than the cached
// snapshot's replaces it: a source just restricted, or described anew, is reported so at once,
// not after an eviction.
//
// A mosaic's members are kept in a cache of their own that remembers the version each was first
// opened at: a member is pinned to that snapshot until it is invalidated or evicted, not
// re-checked with the store on every tile (a tile may paint hundreds).

import type { Source, SourceCatalog } from "../source/source";
import { untilAborted } from "../../shared/abort";
import { DEFAULT_SHARED_WORK_TIMEOUT_MS, withSharedDeadline } from "../runtime/deadlines";

/** What the cache holds: something parsed from a pinned Source, closed when evicted. */
export interface Opened {
  readonly source: Source;
  close(): Promise<void>;
}

interface Entry<T> {
  id: string;
  version: string;
  key: string;
  cog: Promise<T>;
  users: number;
  evicted: boolean;
  closed: boolean;
  /** The rule its source was opened with, once opened (ruleOf). */
  rule?: string;
}

const cogKey = (id: string, version: string) => `${id}@${version}`;

/**
 * What a snapshot says beyond its version that its entry may change: the access rule and the
 * description, or why that cannot be read (so mending it is seen too).
 */
const ruleOf = ({ access, description, unreadableDescription }: Source) =>
  JSON.stringify([access ?? null, description ?? null, unreadableDescription ?? null]);

/**
 * Whether a fresh open of the catalog found another rule than the cached snapshot's. One still
 * opening read the entry as this open did, at about the same time: it stands.
 */
function outdated<T>(cached: Entry<T>, fresh: Source | undefined): boolean {
  return fresh !== undefined && cached.rule !== undefined && cached.rule !== ruleOf(fresh);
}

export interface LeaseOptions {
  /**
   * Open through the catalog even when a version is given, so the snapshot carries what the
   * source's entry says now; a cached one that says the same is still used (its parse is kept).
   */
  fresh?: boolean;
}

export interface CogCacheOptions {
  /** Bound on opening a source shared by many requests (default 10 s). */
  sharedWorkTimeoutMs?: number;
  /** Pin each id to the version it was first opened at while it stays cached (mosaic members). */
  rememberVersions?: boolean;
}

export class CogCache<T extends Opened> {
  private readonly entries = new Map<string, Entry<T>>();
  /** With rememberVersions: the version each id was first opened at. */
  private readonly remembered = new Map<string, string>();

  constructor(
    private readonly catalog: SourceCatalog,
    private readonly parse: (source: Source) => Promise<T>,
    private readonly maxEntries = 64,
    private readonly options: CogCacheOptions = {},
  ) {}

  get size(): number {
    return this.entries.size;
  }

  /**
   * Runs `fn` with the source `id` pinned to `version` (or to its current version when
   * undefined), opening and caching it if needed. It stays open until `fn` settles.
   */
  async use<R>(
    id: string,
    version: string | undefined,
    signal: AbortSignal | undefined,
    fn: (opened: T) => Promise<R>,
    options: LeaseOptions = {},
  ): Promise<R> {
    const lease = await this.lease(id, version, signal, options);
    try {
      return await fn(lease.opened);
    } finally {
      lease.release();
    }
  }

  /** The source `id`, as `use` gives it, held open until `release()` (for many held at once). */
  async lease(id: string, version: string | undefined, signal: AbortSignal | undefined, options: LeaseOptions = {}): Promise<{ opened: T; release(): void }> {
    const entry = await this.acquire(id, version, signal, options);
    try {
      // The open is shared with other requests, so it runs without our signal; we only stop waiting.
      const opened = await untilAborted(entry.cog, signal);
      return { opened, release: () => this.release(entry) };
    } catch (e) {
      this.release(entry);
      throw e;
    }
  }

  /**
   * Drops every snapshot of `id` (a publisher's invalidation), so the next request opens the
   * source as it is now; requests already holding one finish on it. Returns how many.
   */
  invalidate(id: string): number {
    this.remembered.delete(id);
    const mine = [...this.entries.values()].filter((e) => e.id === id);
    for (const entry of mine) this.retire(entry);
    return mine.length;
  }

  /** Drops a snapshot (e.g. after a store failure) so the next request opens it afresh. */
  evict(id: string, version: string): void {
    const entry = this.entries.get(cogKey(id, version));
    if (entry) this.retire(entry);
  }

  private async acquire(id: string, version: string | undefined, signal: AbortSignal | undefined, options: LeaseOptions): Promise<Entry<T>> {
    let source: Source | undefined;
    version ??= this.remembered.get(id);
    if (version === undefined || options.fresh) {
      // Only the catalog knows the current version: open first, then look for a cached copy.
      source = await this.catalog.open(id, version, signal);
      version = source.version;
      if (this.options.rememberVersions) this.remembered.set(id, version);
    }
    const key = cogKey(id, version);
    const cached = this.entries.get(key);
    if (cached && !outdated(cached, source)) {
      if (source) await source.close();
      this.entries.delete(key);
      this.entries.set(key, cached);
      cached.users++;
      return cached;
    }
    if (cached) this.retire(cached);
    const opened = source;
    const entry: Entry<T> = {
      id,
      version,
      key,
      cog: this.open(id, version, opened),
      users: 1,
      evicted: false,
      closed: false,
    };
    this.entries.set(key, entry);
    entry.cog.then(
      (parsed) => (entry.rule = ruleOf(parsed.source)),
      () => this.retire(entry),
    );
    while (this.entries.size > this.maxEntries) {
      this.retire(this.entries.values().next().value as Entry<T>);
    }
    return entry;
  }

  private async open(id: string, version: string, source?: Source): Promise<T> {
    const timeout = this.options.sharedWorkTimeoutMs ?? DEFAULT_SHARED_WORK_TIMEOUT_MS;
    const src =
      source ?? (await withSharedDeadline(timeout, "opening the source", id, (signal) => this.catalog.open(id, version, signal)));
    try {
      return await this.parse(src);
    } catch (e) {
      await src.close().catch(() => {});
      throw e;
    }
  }

  private release(entry: Entry<T>): void {
    entry.users--;
    this.closeIfIdle(entry);
  }

  private retire(entry: Entry<T>): void {
    if (this.entries.get(entry.key) === entry) this.entries.delete(entry.key);
    // Evicted, a member is next opened at its current version: a fresh snapshot, not a stale pin.
    if (this.remembered.get(entry.id) === entry.version) this.remembered.delete(entry.id);
    entry.evicted = true;
    this.closeIfIdle(entry);
  }

  private closeIfIdle(entry: Entry<T>): void {
    if (!entry.evicted || entry.users > 0 || entry.closed) return;
    entry.closed = true;
    entry.cog.then(
      (cog) => cog.close(),
      () => {},
    ).catch(() => {});
  }

  /** Closes every cached COG (at shutdown). */
  closeAll(): void {
    for (const e of [...this.entries.values()]) this.retire(e);
  }
}
