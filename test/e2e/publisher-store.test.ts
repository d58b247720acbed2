// The publisher's store operations (cli/source-store.ts) on a real bucket (local Ceph RGW), one
// versioned and one without versions (as R2 is, content-addressed versions there): uploads as new
// versions, in parts when large, leaving no parts behind when aborted; versions listed with the
// pin; pin and rollback re-pointing the version the decoder serves.
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { ListMultipartUploadsCommand, PutObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBucketOf, makeS3Client, startLocalS3, type BucketKind, type LocalS3 } from "../../infra/local/s3";
import { versionLayoutOf } from "../../cli/publishing";
import { PART_BYTES, SourceStore } from "../../cli/source-store";
import { S3SourceCatalog } from "../../regional/source/s3";
import { HttpError } from "../../shared/errors";

const PREFIX = "maps/";
let s3: LocalS3 | undefined;
let client: S3Client;
let dir: string;

beforeAll(async () => {
  s3 = await startLocalS3();
  client = makeS3Client(s3);
  dir = await mkdtemp(path.join(tmpdir(), "tessera-publisher-"));
});
afterAll(async () => {
  client?.destroy();
  await s3?.stop();
  await rm(dir, { recursive: true, force: true });
});

/** A file of `bytes` bytes whose content tells it apart by `mark`. */
async function fileOf(name: string, bytes: number, mark: number): Promise<string> {
  const file = path.join(dir, name);
  await writeFile(file, Buffer.alloc(bytes, mark));
  return file;
}

describe.each<BucketKind>(["versioned", "unversioned"])("the publisher's store on a %s bucket", (kind) => {
  const BUCKET = `publisher-${kind}-${Date.now().toString(36)}`;
  let store: SourceStore;
  beforeAll(async () => {
    await ensureBucketOf(kind, client, BUCKET);
    // As `tessera` does: the bucket's versioning decides how versions are kept.
    store = new SourceStore(client, BUCKET, PREFIX, await versionLayoutOf(client, BUCKET));
  });

  it("keeps versions as the bucket can: S3 versions, or content-addressed ones without versioning", () => {
    expect(store.layout).toBe(kind === "versioned" ? "versioned" : "content");
  });

  it("uploads new versions (a large one in parts, with progress), lists them with the pin, pins and rolls back", async () => {
    const seen: number[] = [];
    const a = await store.upload("city", await fileOf("a.tif", 2 * PART_BYTES + 123, 1), (loaded) => seen.push(loaded));
    expect(seen.length).toBeGreaterThanOrEqual(3); // one report per part
    expect(seen.at(-1)).toBe(2 * PART_BYTES + 123);
    const b = await store.upload("city", await fileOf("b.tif", 1000, 2));
    const decoderView = new S3SourceCatalog({ client, bucket: BUCKET, prefix: PREFIX });

    let versions = await store.versions("city");
    expect(versions.map((v) => [v.version, v.size, v.latest, v.pinned])).toEqual([
      [b, 1000, true, false],
      [a, 2 * PART_BYTES + 123, false, false],
    ]);
    if (kind === "versioned") expect((await decoderView.open("city", undefined)).version).toBe(b); // no pin: the latest
    else expect(((await decoderView.open("city", undefined).catch((e) => e)) as HttpError).kind).toBe("not_found"); // no pin: nothing served

    await store.pin("city", a);
    expect((await decoderView.open("city", undefined)).version).toBe(a);
    await store.pin("city", b);
    versions = await store.versions("city");
    expect(versions.find((v) => v.pinned)?.version).toBe(b);
    const back = await store.rollback("city");
    expect(back.pin).toBe(a);
    expect((await decoderView.open("city", undefined)).version).toBe(a);
  });

  it("refuses to pin a version that does not exist, and to roll back without an earlier pin", async () => {
    await store.upload("lone", await fileOf("lone.tif", 100, 3));
    for (const hostile of ["no-such-version", "../lone.tessera", "../../etc/passwd", "a".repeat(64), "/", ""]) {
      const pin = (await store.pin("lone", hostile).catch((e) => e)) as HttpError;
      expect(pin.kind, hostile).toBe("version_gone");
    }
    const back = (await store.rollback("lone").catch((e) => e)) as HttpError;
    expect(back.message).toMatch(/no earlier pin/);
    expect(((await store.versions("nothing-here").catch((e) => e)) as HttpError).kind).toBe("not_found");
  });

  it("two publishes at once: both versions are stored whole (one in parts), the pin names exactly one; the same bytes at once are one version without versions", async () => {
    const files = [await fileOf("x.tif", PART_BYTES + 7, 5), await fileOf("y.tif", 5000, 6)];
    const publish = async (file: string) => {
      const version = await store.upload("raced", file);
      await store.pin("raced", version);
      return version;
    };
    const versions = await Promise.all(files.map(publish));
    expect((await store.versions("raced")).map((v) => v.version).sort()).toEqual([...versions].sort());
    const decoderView = new S3SourceCatalog({ client, bucket: BUCKET, prefix: PREFIX });
    for (const [i, version] of versions.entries()) {
      const source = await decoderView.open("raced", version);
      const want = await readFile(files[i]);
      expect(source.size).toBe(want.byteLength);
      expect(Buffer.from(await source.read(0, source.size)).equals(want)).toBe(true);
    }
    const { pin } = await store.entry("raced");
    expect(versions.filter((v) => v === pin)).toHaveLength(1);

    const same = await Promise.all([store.upload("twice", files[1]), store.upload("twice", files[1])]);
    expect(new Set(same).size).toBe(kind === "versioned" ? 2 : 1);
    expect(await store.versions("twice")).toHaveLength(kind === "versioned" ? 2 : 1);
  });

  it("racing pins, publishes and an access change of one source: every pin is in the entry's history afterwards and the access rule stays, none undone by a writer that read the entry before it", async () => {
    const RACERS = 12;
    const files = await Promise.all(Array.from({ length: RACERS }, (_, i) => fileOf(`racer-${i}.tif`, 2000, 20 + i)));
    const uploaded = await Promise.all(files.slice(0, RACERS / 2).map((file) => store.upload("contended", file)));
    // Half pin a version uploaded before, half publish (upload, then pin) one of their own, and
    // one restricts the source, all at once.
    const pin = async (version: string) => (await store.pin("contended", version), version);
    const publish = async (file: string) => pin(await store.upload("contended", file));
    const restrict = store.setAccess("contended", { restriction: { profile: "kiosk" } });
    const pinned = await Promise.all([...uploaded.map(pin), ...files.slice(RACERS / 2).map(publish)]);
    await restrict;
    expect(new Set(pinned).size).toBe(RACERS);
    const entry = await store.entry("contended");
    expect(entry.pins.map((p) => p.version).sort()).toEqual([...pinned].sort());
    expect(pinned).toContain(entry.pin);
    expect(entry.access).toEqual({ profile: "kiosk" });
  });

  it.runIf(kind === "unversioned")("the entry pins a content version's strong ETag: bytes written over it out of band are refused (502), never served", async () => {
    const version = await store.upload("guarded", await fileOf("guarded.tif", 3000, 7));
    const entry = await store.pin("guarded", version);
    expect(entry).toMatchObject({ pin: version, etag: expect.stringMatching(/^"[^"]+"$/) });
    const decoderView = new S3SourceCatalog({ client, bucket: BUCKET, prefix: PREFIX });
    expect((await decoderView.open("guarded", undefined)).version).toBe(version);

    const key = `${PREFIX}guarded.versions/${version}.tif`;
    await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: Buffer.alloc(3000, 8) }));
    const refused = (await decoderView.open("guarded", undefined).catch((e) => e)) as HttpError;
    expect([refused.kind, refused.status]).toEqual(["bad_gateway", 502]);
  });

  it("an aborted upload leaves no multipart parts behind and no new version", async () => {
    const before = (await store.versions("city")).length;
    const abort = new AbortController();
    const upload = store.upload("city", await fileOf("big.tif", 4 * PART_BYTES, 4), () => abort.abort(), abort.signal);
    await expect(upload).rejects.toThrow();
    const pending = await client.send(new ListMultipartUploadsCommand({ Bucket: BUCKET }));
    expect(pending.Uploads ?? []).toEqual([]);
    expect((await store.versions("city")).length).toBe(before);
  });
});
