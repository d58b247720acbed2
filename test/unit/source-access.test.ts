// Who may see a source, as the decoder reports it to the edge: a catalog entry's `access` through
// the real info route, on the plain id and its snapshots; a rule changed after the snapshot was
// cached, reported at once; a rule the decoder cannot read, withheld (501); entries in a local
// data directory; and the S3 catalog refusing a restricted source's file opened by store key (a
// mosaic's member) with the entry read beside the object, no round trip more.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeS3Client } from "../../infra/local/s3";
import { LocalCatalog } from "../../regional/source/local";
import { S3SourceCatalog } from "../../regional/source/s3";
import { tileToQuadkey } from "../../shared/maps/mosaic-json";
import { DECODER, type SourceInfo } from "../../shared/protocol";
import { failure } from "../support/failure";
import { useEntryFixtures } from "./entry-fixtures";
import { signedGet } from "./regional-helpers";

const fixtures = useEntryFixtures(["jpeg", "deflate", "city"]);
const { entryFile, writeEntry } = fixtures;

/** The decoder's info answer for `id` (at `version`): its status, and the body or the error's message. */
async function info(id: string, version?: string): Promise<{ status: number; info?: SourceInfo; message?: string }> {
  const res = await signedGet(fixtures.decoder, DECODER.info(id, version));
  const body = (await res.json()) as SourceInfo & { message?: string };
  return res.status === 200 ? { status: 200, info: body } : { status: res.status, message: body.message };
}

describe("the info route reports the entry's access", () => {
  it("a restricted source's, on the plain id and on its snapshot; an open source's info has no access field", async () => {
    await writeEntry("jpeg", { access: { profile: "active", degradedWidth: 400 } });
    await writeEntry("deflate", { access: "open" });
    const plain = await info("jpeg");
    expect(plain.info?.access).toEqual({ profile: "active", degradedWidth: 400 });
    expect((await info("jpeg", plain.info!.version)).info?.access).toEqual({ profile: "active", degradedWidth: 400 });
    const open = await info("deflate");
    expect(open.status).toBe(200);
    expect(open.info).not.toHaveProperty("access");
  });

  it("a restricted mosaic's too", async () => {
    const doc = { mosaicjson: "0.0.3", minzoom: 14, maxzoom: 14, bounds: [16, 48, 17, 49], tiles: { [tileToQuadkey(14, 8936, 5681)]: ["jpeg.tif"] } };
    await writeFile(path.join(fixtures.dir, "city.mosaic.json"), JSON.stringify(doc));
    await writeEntry("city", { access: { profile: "kiosk" } });
    const mosaic = await info("city");
    expect(mosaic.info?.mosaic).toBeDefined();
    expect(mosaic.info?.access).toEqual({ profile: "kiosk" });
  });
});

describe("a rule changed while the decoder holds the snapshot", () => {
  it("is reported at the next info, plain or snapshot: restricting an open source, then opening it again", async () => {
    const before = await info("jpeg");
    expect(before.info).not.toHaveProperty("access");
    const { version } = before.info!;
    // A tile read: the snapshot is parsed and cached at this version.
    expect((await signedGet(fixtures.decoder, DECODER.image("jpeg", "0,0,256,256/256,256/0/default.jpg", version))).status).toBe(200);

    await writeEntry("jpeg", { access: { profile: "external", degradedWidth: 200 } }); // no new version, no invalidation
    // The snapshot first: asked by version, the decoder still reads the entry as it is now.
    expect((await info("jpeg", version)).info?.access).toEqual({ profile: "external", degradedWidth: 200 });
    const restricted = await info("jpeg");
    expect([restricted.info?.version, restricted.info?.access]).toEqual([version, { profile: "external", degradedWidth: 200 }]);

    await rm(entryFile("jpeg"));
    expect((await info("jpeg", version)).info).not.toHaveProperty("access");
    expect((await info("jpeg")).info).not.toHaveProperty("access");
  });
});

describe("an access rule the decoder cannot read", () => {
  it("withholds the source: 501 naming why, on the plain id and its snapshot, though the snapshot was cached", async () => {
    const { version } = (await info("deflate")).info!;
    for (const [access, why] of [
      [{ profile: "vip" }, 'access profile "vip" is not active, kiosk, external'],
      ["closed", 'access "closed" is neither "open" nor a restriction'],
      [{ profile: "active", degradedWidth: 0 }, "degradedWidth 0 is not a positive whole number of pixels"],
      [{ profile: "active", until: "2027-01-01" }, "access has fields this version does not know: until"],
    ] as const) {
      await writeEntry("deflate", { access });
      for (const asked of [undefined, version]) {
        const withheld = await info("deflate", asked);
        expect(withheld, JSON.stringify(access)).toEqual({ status: 501, message: `source "deflate" is withheld: its access rule cannot be read (${why})` });
      }
    }
  });
});

describe("a local data directory's entries", () => {
  it("apply only their access: a pin, pins and policy are ignored, the directory's one version is served", async () => {
    const { version } = (await info("jpeg")).info!;
    await writeEntry("jpeg", { pin: "not-a-version", policy: "AssumeImmutable", pins: [{ version: "not-a-version", at: "2026-01-01T00:00:00Z" }] });
    expect((await info("jpeg")).info?.version).toBe(version);
  });

  it("a malformed one is the store's fault, 502, as in a bucket", async () => {
    await writeFile(entryFile("jpeg"), "{");
    expect(await info("jpeg")).toEqual({ status: 502, message: "the source's catalog entry is not JSON" });
  });

  it("a restricted source's file opened by key is refused as the access policy refuses; another file is not", async () => {
    const catalog = new LocalCatalog(fixtures.dir);
    await writeEntry("jpeg", { access: { profile: "active" } });
    const refused = await failure(catalog.openKey("jpeg.tif"));
    expect([refused.status, refused.message]).toEqual([502, "a mosaic asset is refused by the access policy"]);
    expect(refused.detail).toBe(
      'local:jpeg.tif: a mosaic asset is refused by the access policy: it is a file of source "jpeg", whose catalog entry restricts who may see it (profile active)',
    );
    await (await catalog.openKey("deflate.tif")).close();
  });
});

describe("an S3 source's file opened by key (a mosaic's member)", () => {
  const BODY = Buffer.from("0123456789abcdef");
  let server: Server;
  let s3: S3SourceCatalog;
  /** The stored entries by key; every GET the store answered, by key. */
  let entries: Record<string, string> = {};
  const asked: string[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      const key = decodeURIComponent(new URL(req.url!, "http://x").pathname.replace(/^\/bucket\//, ""));
      asked.push(key);
      if (key.endsWith(".tessera.json")) {
        const entry = entries[key];
        return void (entry === undefined ? res.writeHead(404).end("<Error><Code>NoSuchKey</Code></Error>") : res.writeHead(200).end(entry));
      }
      const [, from, to] = /bytes=(\d+)-(\d+)/.exec(req.headers.range ?? "")!.map(Number);
      const part = BODY.subarray(from, to + 1);
      res.writeHead(206, { etag: '"strong"', "x-amz-version-id": "v1", "content-range": `bytes ${from}-${from + part.length - 1}/${BODY.length}` }).end(part);
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    s3 = new S3SourceCatalog({ client: makeS3Client({ endpoint, accessKeyId: "k", secretAccessKey: "s" }), bucket: "bucket", prefix: "maps/" });
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it("is refused when the source's entry restricts it or cannot be read; its entry is read beside the object", async () => {
    for (const [access, rule] of [
      [{ profile: "kiosk" }, "restricts who may see it (profile kiosk)"],
      [{ profile: "everyone" }, 'has an access rule this version cannot read (access profile "everyone" is not active, kiosk, external)'],
    ] as const) {
      entries = { "maps/scan.tessera.json": JSON.stringify({ pin: "v1", access }) };
      asked.length = 0;
      const refused = await failure(s3.openKey("maps/scan.tif"));
      expect([refused.status, refused.message]).toEqual([502, "a mosaic asset is refused by the access policy"]);
      expect(refused.detail).toBe(`s3://bucket/maps/scan.tif: a mosaic asset is refused by the access policy: it is a file of source "scan", whose catalog entry ${rule}`);
      expect(asked.sort()).toEqual(["maps/scan.tessera.json", "maps/scan.tif"]);
    }
  });

  it("is opened when its entry leaves it open; a key that is no source's file reads no entry", async () => {
    entries = { "maps/scan.tessera.json": JSON.stringify({ access: "open" }) };
    expect((await s3.openKey("maps/scan.tif")).size).toBe(BODY.length);
    entries = {};
    asked.length = 0;
    for (const key of ["maps/members/2026/a.tif", "other/scan.tif", "maps/.hidden.tif"]) expect((await s3.openKey(key)).size).toBe(BODY.length);
    expect(asked.filter((k) => k.endsWith(".tessera.json"))).toEqual([]);
  });
});
