// The publisher's side of the bucket: a source's versions and its catalog entry (the pin, the
// snapshot policy, the access rule and the description, one small JSON document beside the
// source). In a versioned bucket, uploads go to the key the decoder reads, `{prefix}{id}.tif`, as a
// new S3 version; in a bucket without versions (R2), each version is its own immutable object
// named by its SHA-256 (regional/source/content-versions.ts). Large files go in parts, and a
// failed upload aborts its parts so none are left behind.
import { stat } from "node:fs/promises";
import { createReadStream } from "node:fs";
import { createHash } from "node:crypto";
import {
  AbortMultipartUploadCommand,
  DeleteObjectCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  ListObjectVersionsCommand,
  type S3Client,
} from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import { contentVersionKey, contentVersionOfKey, contentVersionsPrefix, isContentVersion } from "../regional/source/content-versions";
import { statusOf } from "../regional/source/s3-location";
import { sourceFileKeys } from "../regional/source/source";
import { catalogKey, rollbackVersion, withAccess, withPin, type CatalogEntry } from "../shared/catalog";
import { HttpError, notFound, versionGone } from "../shared/errors";
import type { AccessRule } from "./access-rule";
import { EntryUpdate, type EntryChange } from "./entry-update";

/** Parts of this size (S3's minimum is 5 MiB); files up to one part are a single PUT. */
export const PART_BYTES = 8 * 1024 * 1024;

export interface StoredVersion {
  version: string;
  lastModified: string;
  size: number;
  latest: boolean;
  pinned: boolean;
}

/** How far the store's clock may be behind ours when telling this upload's parts from others'. */
const CLOCK_SKEW_MS = 60_000;


/** What `gc` found: the versions it removed (or, on a dry run, would remove) and those it keeps. */
export interface Collected {
  removed: StoredVersion[];
  kept: StoredVersion[];
}

/**
 * The versions gc may remove: none the entry pins now or would roll back to, and none written
 * since `cutoff` (a publish uploads before it pins: a version that new may be about to be pinned).
 */
export function collectable(versions: StoredVersion[], entry: CatalogEntry, cutoff: Date): StoredVersion[] {
  const protectedVersions = new Set([entry.pin, rollbackTarget(entry)]);
  return versions.filter((v) => !protectedVersions.has(v.version) && new Date(v.lastModified) < cutoff);
}

/** The version `tessera rollback` would pin, if any. */
function rollbackTarget(entry: CatalogEntry): string | undefined {
  return entry.pins.some((p) => p.version !== entry.pin) ? rollbackVersion(entry) : undefined;
}

/** `loaded` of `total` bytes sent so far. */
export type Progress = (loaded: number, total: number) => void;

/**
 * How a bucket keeps versions: "versioned", as S3 object versions of `{id}.tif` (VersionIds);
 * "content", as content-addressed objects (SHA-256s), for a bucket with versioning off.
 */
export type VersionLayout = "versioned" | "content";

/** The SHA-256 of `file`'s bytes, in hex. */
async function sha256Of(file: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest("hex");
}

export class SourceStore {
  constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
    private readonly prefix: string,
    readonly layout: VersionLayout = "versioned",
  ) {}

  private sourceKey = (id: string) => `${this.prefix}${id}.tif`;

  /** The key version `version` of `id` is read at, and how a request selects it. */
  private versionTarget(id: string, version: string): { Key: string; VersionId?: string } {
    const valid = this.layout === "versioned" ? version !== "" : isContentVersion(version);
    if (!valid) throw versionGone(`source "${id}" has no version "${version}"`);
    if (this.layout === "versioned") return { Key: this.sourceKey(id), VersionId: version };
    return { Key: contentVersionKey(this.prefix, id, version) };
  }

  /**
   * Uploads `file` as a new version of `id`; resolves to its version (a VersionId, or in a bucket
   * without versions its SHA-256). `signal` (Ctrl-C) aborts it, and with it the multipart upload.
   */
  async upload(id: string, file: string, progress?: Progress, signal?: AbortSignal): Promise<string> {
    if (this.layout === "versioned") return this.uploadTo(this.sourceKey(id), file, progress, signal);
    const version = await sha256Of(file);
    const key = contentVersionKey(this.prefix, id, version);
    // The same bytes are already that version: an immutable object is never written twice.
    if (await this.exists(key)) return version;
    // Another publisher is storing these same bytes: its upload is awaited, not repeated. A store
    // that ignores If-None-Match on a multipart upload's completion (Ceph RGW) would otherwise
    // write the object again over readers already served it, who then find it missing (404).
    if (await this.storedByAnother(key, signal)) return version;
    await this.uploadTo(key, file, progress, signal, { IfNoneMatch: "*" }).catch((e: unknown) => {
      if (statusOf(e) !== 412) throw e; // 412: a racing writer stored these same bytes first
    });
    return version;
  }

  /** Uploads `file` to `key`; resolves to the VersionId the store gave it, if any. */
  private async uploadTo(key: string, file: string, progress?: Progress, signal?: AbortSignal, condition = {}): Promise<string> {
    const total = (await stat(file)).size;
    const abortController = new AbortController();
    signal?.addEventListener("abort", () => abortController.abort(), { once: true });
    const upload = new Upload({
      abortController,
      client: this.client,
      params: { Bucket: this.bucket, Key: key, Body: createReadStream(file), ContentType: "image/tiff", ...condition },
      partSize: PART_BYTES,
      queueSize: 2,
      leavePartsOnError: false, // a failure aborts the multipart upload: no orphaned parts
    });
    upload.on("httpUploadProgress", (p) => progress?.(p.loaded ?? 0, total));
    const started = new Date(Date.now() - CLOCK_SKEW_MS);
    const done = await upload.done().catch(async (err: unknown) => {
      // done() rejects on an abort before the library has aborted its multipart upload.
      await this.abortUploadsSince(key, started);
      throw err;
    });
    if (!done.VersionId && this.layout === "versioned") {
      throw new HttpError("bad_request", `bucket ${this.bucket} gave no VersionId: enable versioning on it`);
    }
    return done.VersionId ?? "";
  }

  /** Aborts the multipart uploads of `key` begun since `since` (this upload's): no parts are left. */
  private async abortUploadsSince(key: string, since: Date): Promise<void> {
    const ours = (await this.multipartUploads(key)).filter((u) => u.UploadId && (u.Initiated ?? since) >= since);
    await Promise.all(
      ours.map((u) => this.client.send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: key, UploadId: u.UploadId }))),
    );
  }

  /** Every version of `id`, newest first, and which one is pinned. */
  async versions(id: string): Promise<StoredVersion[]> {
    const entry = await this.entry(id);
    const stored = this.layout === "versioned" ? await this.objectVersions(id) : await this.contentVersions(id);
    if (stored.length === 0) throw notFound(`unknown source "${id}"`);
    stored.sort((a, b) => b.lastModified.localeCompare(a.lastModified));
    // Content versions have no "latest" of their own: the newest written is.
    if (this.layout === "content") stored[0].latest = true;
    return stored.map((v) => ({ ...v, pinned: v.version === entry.pin }));
  }

  /** The S3 versions of `id`'s COG. */
  private async objectVersions(id: string): Promise<StoredVersion[]> {
    const key = this.sourceKey(id);
    const out: StoredVersion[] = [];
    let keyMarker: string | undefined;
    let versionMarker: string | undefined;
    do {
      const page = await this.client.send(
        new ListObjectVersionsCommand({ Bucket: this.bucket, Prefix: key, KeyMarker: keyMarker, VersionIdMarker: versionMarker }),
      );
      for (const v of page.Versions ?? []) {
        if (v.Key !== key || !v.VersionId) continue;
        out.push({ version: v.VersionId, lastModified: v.LastModified?.toISOString() ?? "", size: v.Size ?? 0, latest: v.IsLatest ?? false, pinned: false });
      }
      keyMarker = page.IsTruncated ? page.NextKeyMarker : undefined;
      versionMarker = page.IsTruncated ? page.NextVersionIdMarker : undefined;
    } while (keyMarker);
    return out;
  }

  /** The content versions in `id`'s folder. */
  private async contentVersions(id: string): Promise<StoredVersion[]> {
    const out: StoredVersion[] = [];
    let token: string | undefined;
    do {
      const page = await this.client.send(
        new ListObjectsV2Command({ Bucket: this.bucket, Prefix: contentVersionsPrefix(this.prefix, id), ContinuationToken: token }),
      );
      for (const o of page.Contents ?? []) {
        const version = o.Key && contentVersionOfKey(this.prefix, id, o.Key);
        if (!version) continue;
        out.push({ version, lastModified: o.LastModified?.toISOString() ?? "", size: o.Size ?? 0, latest: false, pinned: false });
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return out;
  }

  /**
   * Removes `id`'s content versions that `collectable` allows at `cutoff`; with `dryRun`, only
   * says which. The entry is read again just before removing, so a version pinned meanwhile stays.
   */
  async gc(id: string, cutoff: Date, dryRun: boolean): Promise<Collected> {
    if (this.layout === "versioned") {
      throw new HttpError("bad_request", `bucket ${this.bucket} keeps S3 versions: expire old ones with a lifecycle rule (NoncurrentVersionExpiration), not gc`);
    }
    const versions = await this.versions(id);
    const candidates = collectable(versions, await this.entry(id), cutoff);
    const removed = dryRun ? candidates : collectable(candidates, await this.entry(id), cutoff);
    if (!dryRun) {
      for (const v of removed) {
        await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: contentVersionKey(this.prefix, id, v.version) }));
      }
    }
    return { removed, kept: versions.filter((v) => !removed.includes(v)) };
  }

  private entryOf = (id: string) => new EntryUpdate(this.client, this.bucket, catalogKey(this.prefix, id));

  /** The source's catalog entry (the default one when none is stored). */
  async entry(id: string): Promise<CatalogEntry> {
    return (await this.entryOf(id).read()).entry;
  }

  /** Pins `version` of `id` (it must exist), making `change` to its entry too; returns the new entry. */
  async pin(id: string, version: string, change: EntryChange = (entry) => entry): Promise<CatalogEntry> {
    const etag = await this.requireVersion(id, version);
    const at = new Date().toISOString();
    return this.amend(id, (entry) => withPin(change(entry), version, at, etag));
  }

  /** Gives `id` the access rule `access`, its pin, pins and policy kept; returns the new entry. */
  async setAccess(id: string, access: AccessRule): Promise<CatalogEntry> {
    return this.amend(id, (entry) => withAccess(entry, access));
  }

  /**
   * Makes `change` to `id`'s entry (one that throws writes nothing), safe from racing writers
   * (cli/entry-update.ts): made again on a fresh read when another writer came first. Returns the new entry.
   */
  async amend(id: string, change: EntryChange): Promise<CatalogEntry> {
    return this.entryOf(id).apply(this.layout, change);
  }

  /** Throws not_found unless one of `id`'s files (a COG, a mosaic's document) is in the store. */
  async requireSource(id: string): Promise<void> {
    if (this.layout === "content") {
      await this.versions(id); // throws not_found when there is none
      return;
    }
    const found = await Promise.all(sourceFileKeys(this.prefix, id).map((key) => this.exists(key)));
    if (!found.includes(true)) throw notFound(`unknown source "${id}"`);
  }

  /** Whether another upload of `key` is under way and ends with the object stored (waited for). */
  private async storedByAnother(key: string, signal?: AbortSignal): Promise<boolean> {
    while (await this.uploading(key)) {
      if (signal?.aborted) throw signal.reason;
      await new Promise((r) => setTimeout(r, 200));
      if (await this.exists(key)) return true;
    }
    return this.exists(key); // it may have completed between the two looks
  }

  private async uploading(key: string): Promise<boolean> {
    return (await this.multipartUploads(key)).length > 0;
  }

  /** The multipart uploads of `key` under way (begun, neither completed nor aborted). */
  private async multipartUploads(key: string) {
    const { Uploads = [] } = await this.client.send(new ListMultipartUploadsCommand({ Bucket: this.bucket, Prefix: key }));
    return Uploads.filter((u) => u.Key === key);
  }

  private async exists(key: string): Promise<boolean> {
    try {
      await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return true;
    } catch (e) {
      if (statusOf(e) === 404) return false;
      throw e;
    }
  }

  /** Pins the version pinned before the current one; returns the new entry. */
  async rollback(id: string): Promise<CatalogEntry> {
    const version = rollbackVersion(await this.entry(id));
    const etag = await this.requireVersion(id, version);
    const at = new Date().toISOString();
    // The version found here, whose ETag was read, even if a racing pin changes the entry meanwhile.
    return this.amend(id, (entry) => withPin(entry, version, at, etag));
  }

  /** Throws version_gone unless `id` has `version`; resolves to its ETag where that is what pins it. */
  private async requireVersion(id: string, version: string): Promise<string | undefined> {
    try {
      const head = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, ...this.versionTarget(id, version) }));
      return this.layout === "content" ? head.ETag : undefined;
    } catch (e) {
      if (e instanceof HttpError) throw e;
      const status = statusOf(e);
      if (status === 404 || status === 400 || status === 405) throw versionGone(`source "${id}" has no version "${version}"`);
      throw e;
    }
  }
}
