// A source's catalog entry updated by a read-modify-write that racing writers (two pins, a
// publish and a rollback) cannot undo: the second write of two that read the same entry must not
// drop the first's record from `pins`.
// - Without versions (R2): the write is conditional on what was read (If-Match on the entry's
//   ETag, If-None-Match: * for a new one); a 412 means another writer came first, and the change
//   is made again on a fresh read.
// - In a versioned bucket the entry's own versions tell: after writing, the versions stored between
//   the one read and ours were written by racing writers, and what they did is merged back into
//   the latest entry (mergeRaced): pins are only ever added, so their union loses none. Ceph RGW
//   (16.2) honours neither header on a versioned bucket, so this asks nothing of the store.
// Either way a bounded number of attempts, then a clear error.
import { GetObjectCommand, ListObjectVersionsCommand, PutObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import { statusOf } from "../regional/source/s3-location";
import { NO_ENTRY, parseCatalogEntry, type CatalogEntry } from "../shared/catalog";
import type { VersionLayout } from "./source-store";

/** What a command makes of a source's entry, given it as stored. */
export type EntryChange = (entry: CatalogEntry) => CatalogEntry;

/**
 * Attempts before giving up. Each lost one means another writer's update went in, so N writers at
 * once need up to N; ten ran out under CI's load with thirteen racing one entry.
 */
export const ENTRY_ATTEMPTS = 30;


/** An entry as read, with what identifies that state of the object (absent: no entry stored). */
interface ReadEntry {
  entry: CatalogEntry;
  etag?: string;
  versionId?: string;
}

const recordKey = (p: CatalogEntry["pins"][number]) => `${p.version}\n${p.at}`;

/** `entry` with `records` among its pins (those it lacks), in the order of their times. */
function withRecords(entry: CatalogEntry, records: CatalogEntry["pins"]): CatalogEntry {
  const known = new Set(entry.pins.map(recordKey));
  const missing: CatalogEntry["pins"] = [];
  for (const record of records) {
    if (known.has(recordKey(record))) continue; // two racing versions may hold the same record
    known.add(recordKey(record));
    missing.push(record);
  }
  if (missing.length === 0) return entry;
  return { ...entry, pins: [...entry.pins, ...missing].sort((a, b) => a.at.localeCompare(b.at)) };
}

/** The fields other than the pin and its history, each merged as a whole by when it was set. */
const FIELDS = ["access", "description", "policy"] as const;
type Field = (typeof FIELDS)[number];

const same = (a: CatalogEntry, b: CatalogEntry, field: keyof CatalogEntry) => JSON.stringify(a[field]) === JSON.stringify(b[field]);

/** `next` (`entry` changed) with the time `at` for each field the change set. */
function stamped(entry: CatalogEntry, next: CatalogEntry, at: string): CatalogEntry {
  const set = FIELDS.filter((f) => !same(entry, next, f));
  return set.length === 0 ? next : { ...next, changed: { ...next.changed, ...Object.fromEntries(set.map((f) => [f, at])) } };
}

/** `entry` with `field` as `from` has it (absent if absent there), and when it was set. */
function withField(entry: CatalogEntry, from: CatalogEntry, field: Field): CatalogEntry {
  const { [field]: _previous, ...rest } = entry;
  const changed = { ...entry.changed, [field]: from.changed?.[field] ?? "" };
  return { ...rest, ...(from[field] !== undefined && { [field]: from[field] }), changed } as CatalogEntry;
}

/**
 * The `latest` entry with what racing writers stored in `raced` that a later write undid: every
 * pins record; the pin the newest record names, as every pin and rollback appends its own; and
 * each other field as the version that set it last (by `changed`) has it.
 */
export function mergeRaced(latest: CatalogEntry, raced: CatalogEntry[]): CatalogEntry {
  const recorded = withRecords(latest, raced.flatMap((r) => r.pins));
  const newest = recorded.pins.reduce<CatalogEntry["pins"][number] | undefined>((a, p) => (a && a.at > p.at ? a : p), undefined);
  let merged = newest ? { ...recorded, pin: newest.version } : recorded;
  for (const field of FIELDS) {
    const setAt = (e: CatalogEntry) => e.changed?.[field] ?? "";
    const last = raced.reduce((a, r) => (setAt(r) > setAt(a) ? r : a), latest);
    if (last !== latest) merged = withField(merged, last, field);
  }
  return merged;
}

/** A short random pause growing with `attempt`, so racing writers stop meeting head on. */
const backoff = (attempt: number) => new Promise((r) => setTimeout(r, Math.random() * 20 * attempt));

export class EntryUpdate {
  constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
    private readonly key: string,
  ) {}

  private label(): string {
    return `s3://${this.bucket}/${this.key}`;
  }

  /** The entry now (the default one when none is stored), `versionId` when one is asked for. */
  async read(versionId?: string): Promise<ReadEntry> {
    try {
      const out = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.key, VersionId: versionId }));
      const entry = parseCatalogEntry((await out.Body?.transformToString()) ?? "", this.label());
      return { entry, etag: out.ETag, versionId: out.VersionId };
    } catch (e) {
      if ((e as { name?: string }).name === "NoSuchKey") return { entry: NO_ENTRY };
      throw e;
    }
  }

  /** Makes `change` to the entry as `layout` keeps it safe from racing writers; returns the entry written. */
  apply(layout: VersionLayout, change: EntryChange): Promise<CatalogEntry> {
    const at = new Date().toISOString();
    const timed: EntryChange = (entry) => stamped(entry, change(entry), at);
    return layout === "versioned" ? this.applyVersioned(timed) : this.applyConditionally(timed);
  }

  private async put(entry: CatalogEntry, condition: { IfMatch?: string; IfNoneMatch?: string } = {}): Promise<string | undefined> {
    const body = JSON.stringify(entry, null, 2) + "\n";
    const out = await this.client.send(
      new PutObjectCommand({ Bucket: this.bucket, Key: this.key, Body: body, ContentType: "application/json", ...condition }),
    );
    return out.VersionId;
  }

  private exhausted(): Error {
    return new Error(
      `the catalog entry ${this.label()} was changed by other writers ${ENTRY_ATTEMPTS} times while this command updated it: run the command again`,
    );
  }

  /** A write conditional on the state read; 412 (or S3's 409 for a conflicting write) retries from a fresh read. */
  private async applyConditionally(change: EntryChange): Promise<CatalogEntry> {
    for (let attempt = 1; attempt <= ENTRY_ATTEMPTS; attempt++) {
      const { entry, etag } = await this.read();
      const next = change(entry);
      const conditions = etag === undefined ? [{ IfNoneMatch: "*" }] : ifMatchForms(etag).map((IfMatch) => ({ IfMatch }));
      if (await this.putIfAny(next, conditions)) return next;
      await backoff(attempt);
    }
    throw this.exhausted();
  }

  /** Puts `entry` under the first of `conditions` the store finds true; false when it refused every one. */
  private async putIfAny(entry: CatalogEntry, conditions: { IfMatch?: string; IfNoneMatch?: string }[]): Promise<boolean> {
    for (const condition of conditions) {
      try {
        await this.put(entry, condition);
        return true;
      } catch (e) {
        if (statusOf(e) !== 412 && statusOf(e) !== 409) throw e;
      }
    }
    return false;
  }

  /**
   * Writes, then merges back what the versions written between the one read and ours did (racing
   * writers' updates our write was not made on, mergeRaced), until no version came between.
   */
  private async applyVersioned(change: EntryChange): Promise<CatalogEntry> {
    let base = await this.read();
    let next = change(base.entry);
    for (let attempt = 1; attempt <= ENTRY_ATTEMPTS; attempt++) {
      const ours = await this.put(next);
      const between = await this.versionsBetween(base.versionId, ours);
      if (between.length === 0) return next;
      const raced = await Promise.all(between.map(async (v) => (await this.read(v)).entry));
      const latest = await this.read();
      const merged = mergeRaced(latest.entry, [...raced, next]);
      if ((["pin", "pins", ...FIELDS] as const).every((f) => same(merged, latest.entry, f))) return latest.entry;
      [base, next] = [latest, merged];
      await backoff(attempt);
    }
    throw this.exhausted();
  }

  /** The entry's versions stored after `base` (all older ones when it is undefined) and before `ours`, newest first. */
  private async versionsBetween(base: string | undefined, ours: string | undefined): Promise<string[]> {
    if (ours === undefined) throw new Error(`bucket ${this.bucket} gave no VersionId: enable versioning on it`);
    // Newest first, and the racing versions are the newest: the first page holds them.
    const page = await this.client.send(new ListObjectVersionsCommand({ Bucket: this.bucket, Prefix: this.key }));
    const newestFirst = (page.Versions ?? []).filter((v) => v.Key === this.key && v.VersionId).map((v) => v.VersionId!);
    const older = newestFirst.slice(newestFirst.indexOf(ours) + 1);
    const end = base === undefined ? older.length : older.indexOf(base);
    return older.slice(0, end < 0 ? older.length : end);
  }
}

/**
 * The If-Match an entry read with `etag` is written under: the ETag as the store gave it (quoted,
 * RFC 7232's form, which S3 and R2 match), then unquoted, the only form Ceph RGW (16.2) matches:
 * it compares the header with its ETag unquoted. Either is true only while the entry keeps that ETag.
 */
const ifMatchForms = (etag: string): string[] => [...new Set([etag, etag.replace(/"/g, "")])];
