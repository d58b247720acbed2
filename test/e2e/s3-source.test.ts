// The S3 source against a real versioned store (local Ceph RGW): pinned snapshots keep reading
// their own version while the object is overwritten and deleted underneath.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  PutBucketVersioningCommand,
  PutObjectCommand,
  type S3Client,
} from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ensureVersionedBucket,
  makeS3Client,
  startLocalS3,
  type LocalS3,
} from "../../infra/local/s3.js";
import { DecodedBlockCache } from "../../regional/cog/block-cache.js";
import { Cog } from "../../regional/cog/cog.js";
import { S3SourceCatalog } from "../../regional/source/s3.js";
import { HttpError } from "../../shared/errors.js";

const sample = (name: string) =>
  readFileSync(fileURLToPath(new URL(`../../samples/${name}`, import.meta.url)));
const V1 = sample("test-pattern.tif");
const V2 = sample("test-pattern-deflate.tif");
const BUCKET = `tessera-e2e-${Date.now().toString(36)}`;
const PREFIX = "cogs/";
const KEY = `${PREFIX}pattern.tif`;

let s3: LocalS3 | undefined;
let client: S3Client;
let catalog: S3SourceCatalog;

const put = (id: string, body: Uint8Array) =>
  client.send(new PutObjectCommand({ Bucket: BUCKET, Key: `${PREFIX}${id}.tif`, Body: body }));

async function expectHttpError(p: Promise<unknown>, status: number, text?: RegExp) {
  const e = await p.then(
    () => expect.fail(`expected HttpError ${status}`),
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(HttpError);
  expect((e as HttpError).status).toBe(status);
  if (text) expect((e as HttpError).message).toMatch(text);
  return e as HttpError;
}

beforeAll(async () => {
  s3 = await startLocalS3();
  client = makeS3Client(s3);
  await ensureVersionedBucket(client, BUCKET);
  catalog = new S3SourceCatalog({ client, bucket: BUCKET, prefix: PREFIX });
});

afterAll(async () => {
  client?.destroy();
  await s3?.stop(); // no-op when the suite reused an instance someone else started
});

describe("S3 source on a versioned bucket", () => {
  it("pins a version across overwrite and delete", async () => {
    const put1 = await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: KEY, Body: V1 }));
    expect(put1.VersionId).toBeTruthy();

    const pinned = await catalog.open("pattern", undefined);
    expect(pinned.version).toBe(put1.VersionId);
    expect(pinned.size).toBe(V1.length);
    expect(pinned.label).toBe(`s3://${BUCKET}/${KEY}`);
    expect(pinned.version).toMatch(/^[\w.-]+$/); // RGW VersionIds go into URLs unescaped
    expect(Buffer.from(await pinned.read(0, 16))).toEqual(V1.subarray(0, 16));
    expect(Buffer.from(await pinned.read(0, V1.length))).toEqual(V1); // the whole object

    const put2 = await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: KEY, Body: V2 }));
    expect(put2.VersionId).toBeTruthy();
    expect(put2.VersionId).not.toBe(put1.VersionId);

    // The pinned snapshot still reads version 1, including a range past version 2's end.
    const at = 20_000;
    expect(V2.length).toBeLessThan(V1.length);
    expect(Buffer.from(await pinned.read(at, 4096))).toEqual(V1.subarray(at, at + 4096));
    const tail = V1.length - 1000;
    expect(Buffer.from(await pinned.read(tail, 1000))).toEqual(V1.subarray(tail));

    // A fresh open sees version 2.
    const fresh = await catalog.open("pattern", undefined);
    expect(fresh.version).toBe(put2.VersionId);
    expect(fresh.size).toBe(V2.length);
    expect(Buffer.from(await fresh.read(100, 500))).toEqual(V2.subarray(100, 600));

    // The old version, asked for explicitly.
    const old = await catalog.open("pattern", put1.VersionId);
    expect(old.version).toBe(put1.VersionId);
    expect(old.size).toBe(V1.length);
    expect(Buffer.from(await old.read(at, 100))).toEqual(V1.subarray(at, at + 100));

    // Delete marker: the id is gone for new opens, the pinned snapshots still read.
    const del = await client.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: KEY }));
    expect(del.DeleteMarker).toBe(true);
    await expectHttpError(catalog.open("pattern", undefined), 404, /pattern/);
    expect(Buffer.from(await pinned.read(at, 64))).toEqual(V1.subarray(at, at + 64));
    expect(Buffer.from(await fresh.read(0, 64))).toEqual(V2.subarray(0, 64));
    // ... and an explicit version still opens, while the delete marker's id is not a version.
    expect((await catalog.open("pattern", put2.VersionId)).size).toBe(V2.length);
    await expectHttpError(catalog.open("pattern", del.VersionId), 404);
  });

  it("answers 404 for unknown ids and versions, without credentials in the message", async () => {
    const e = await expectHttpError(catalog.open("nope", undefined), 404, /"nope"/);
    expect(e.message).not.toContain(s3!.secretAccessKey);
    expect(e.message).not.toContain(s3!.accessKeyId);
    await put("other", V2);
    await expectHttpError(catalog.open("other", "not-a-real-version-id"), 404, /other/);
  });

  it("rejects a read whose signal is aborted, before or during the GET", async () => {
    await put("abort", V1);
    const src = await catalog.open("abort", undefined);

    const before = new AbortController();
    before.abort();
    await expect(src.read(0, 1024, before.signal)).rejects.toMatchObject({ name: "AbortError" });

    const during = new AbortController();
    const reading = src.read(0, V1.length, during.signal);
    during.abort(new HttpError("deadline", "request deadline exceeded"));
    await expectHttpError(reading, 408, /deadline/);

    // The source still works after an aborted read.
    expect(Buffer.from(await src.read(0, 8))).toEqual(V1.subarray(0, 8));
  });

  it("refuses ranges outside the object without fetching", async () => {
    await put("ranges", V2);
    const src = await catalog.open("ranges", undefined);
    await expectHttpError(src.read(src.size - 10, 11), 502, /outside/);
    await expectHttpError(src.read(-1, 4), 502, /outside/);
    expect((await src.read(src.size, 0)).length).toBe(0);
  });

  it("opens an empty object, which has no first bytes to range over, at its version", async () => {
    const { VersionId } = await put("empty", new Uint8Array(0));
    const src = await catalog.open("empty", undefined);
    expect([src.version, src.size]).toEqual([VersionId, 0]);
  });

  it("pins an unversioned bucket's object by strong ETag + If-Match", async () => {
    const plain = `${BUCKET}-plain`;
    await client.send(new CreateBucketCommand({ Bucket: plain }));
    const cat = new S3SourceCatalog({ client, bucket: plain, prefix: "" });
    const put1 = await client.send(new PutObjectCommand({ Bucket: plain, Key: "p.tif", Body: V1 }));
    expect(put1.VersionId).toBeUndefined();

    const pinned = await cat.open("p", undefined);
    expect(pinned.version).toBe(put1.ETag);
    expect(Buffer.from(await pinned.read(100, 100))).toEqual(V1.subarray(100, 200));
    expect((await cat.open("p", put1.ETag)).size).toBe(V1.length);

    const put2 = await client.send(new PutObjectCommand({ Bucket: plain, Key: "p.tif", Body: V2 }));
    // The object was replaced in place: the old snapshot must fail, never return new bytes.
    await expectHttpError(pinned.read(100, 100), 502, /source changed/);
    await expectHttpError(cat.open("p", put1.ETag), 404, /no version/);
    const fresh = await cat.open("p", undefined);
    expect(fresh.version).toBe(put2.ETag);
    expect(Buffer.from(await fresh.read(100, 100))).toEqual(V2.subarray(100, 200));
  });
});

describe("S3 source on a bucket with versioning suspended", () => {
  it("pins a \"null\" version by its strong ETag: an overwrite in place never meets the old identity or its blocks", async () => {
    const bucket = `${BUCKET}-suspended`;
    await ensureVersionedBucket(client, bucket);
    await client.send(new PutBucketVersioningCommand({ Bucket: bucket, VersioningConfiguration: { Status: "Suspended" } }));
    const cat = new S3SourceCatalog({ client, bucket, prefix: "" });
    const cache = new DecodedBlockCache();
    const first = { x: 0, y: 0, w: 256, h: 256 };

    // RGW names the version "null" when asked for it by that name (AWS S3 also unasked).
    const put1 = await client.send(new PutObjectCommand({ Bucket: bucket, Key: "s.tif", Body: V1 }));
    const pinned = await cat.open("s", "null");
    expect(pinned.version).toBe(put1.ETag);
    expect((await cat.open("s", undefined)).version).toBe(put1.ETag);
    const old = await Cog.open(pinned, { cache, prefetchRing: 0 });
    await old.readWindow(0, first);

    // Suspended versioning overwrites the "null" version in place.
    const put2 = await client.send(new PutObjectCommand({ Bucket: bucket, Key: "s.tif", Body: V2 }));
    expect(put2.ETag).not.toBe(put1.ETag);
    const fresh = await cat.open("s", "null");
    expect(fresh.version).toBe(put2.ETag);
    const now = await Cog.open(fresh, { cache, prefetchRing: 0 });
    const decoded = cache.decoded;
    await now.readWindow(0, first);
    expect(cache.decoded).toBe(decoded + 1); // decoded from the new bytes, not the old block

    // The old snapshot fails cleanly for what it has not cached, and by its identity.
    await expectHttpError(old.readWindow(0, { x: 512, y: 512, w: 256, h: 256 }), 502, /source changed/);
    await expectHttpError(pinned.read(0, 16), 502, /source changed/);
    await expectHttpError(cat.open("s", put1.ETag), 404, /no version/);
    await Promise.all([old.close(), now.close()]);
  });
});

describe("catalog entries in the bucket", () => {
  const entry = (id: string, value: unknown) =>
    client.send(new PutObjectCommand({ Bucket: BUCKET, Key: `${PREFIX}${id}.tessera.json`, Body: JSON.stringify(value) }));

  it("a pin chooses the version a plain open serves; re-pointing it (a rollback) copies no bytes", async () => {
    const a = (await put("pinned", V1)).VersionId!;
    const b = (await put("pinned", V2)).VersionId!;
    expect((await catalog.open("pinned", undefined)).version).toBe(b); // no entry: the latest
    await entry("pinned", { pin: a, pins: [{ version: a, at: "2026-11-30T00:00:00Z" }] });
    const opened = await catalog.open("pinned", undefined);
    expect(opened.version).toBe(a);
    expect(opened.size).toBe(V1.length);
    expect(Buffer.from(await opened.read(0, 64))).toEqual(V1.subarray(0, 64));
    // A request for another version still gets that version: the pin is only the default.
    expect((await catalog.open("pinned", b)).version).toBe(b);
  });

  it("a pinned version that was deleted is a clean version_gone 404, and a malformed entry a 502 (its key in the log alone)", async () => {
    const gone = (await put("dropped", V1)).VersionId!;
    await put("dropped", V2);
    await client.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: `${PREFIX}dropped.tif`, VersionId: gone }));
    await entry("dropped", { pin: gone });
    const err = await expectHttpError(catalog.open("dropped", undefined), 404);
    expect(err.kind).toBe("version_gone");
    await entry("dropped", { pin: "", policy: "Whatever" });
    const noPin = await expectHttpError(catalog.open("dropped", undefined), 502, /^the source's catalog entry has a pin that is not a version$/);
    expect(noPin.detail).toBe(`catalog entry s3://${BUCKET}/${PREFIX}dropped.tessera.json has a pin that is not a version`);
    await entry("dropped", { policy: "Whatever" });
    await expectHttpError(catalog.open("dropped", undefined), 502, /policy "Whatever", not RequireValidator or AssumeImmutable/);
  });
});
