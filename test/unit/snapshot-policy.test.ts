// The snapshot policy against a store whose objects carry no usable validator (no VersionId, a
// weak ETag): a fake S3 endpoint, since a real RGW always gives a VersionId or a strong ETag.
// RequireValidator (the default) refuses such a source at open, naming the policy;
// AssumeImmutable, opted into in the source's catalog entry, serves it. And the entry's other
// fields: pins, and the access rule a source is opened with.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeS3Client } from "../../infra/local/s3";
import { S3SourceCatalog } from "../../regional/source/s3";
import { catalogKey, NO_ENTRY, parseCatalogEntry, rollbackVersion, withAccess, withPin } from "../../shared/catalog";
import { HttpError } from "../../shared/errors";

const BODY = Buffer.from("0123456789abcdef");
let entry: string | undefined;
let server: Server;
let catalog: S3SourceCatalog;

beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url?.includes(".tessera.json")) {
      if (entry === undefined) res.writeHead(404, { "content-type": "application/xml" }).end("<Error><Code>NoSuchKey</Code></Error>");
      else res.writeHead(200, { "content-length": String(entry.length) }).end(entry);
      return;
    }
    const headers = { etag: 'W/"weak"', "last-modified": new Date(0).toUTCString() };
    if (req.method === "HEAD") return void res.writeHead(200, { ...headers, "content-length": String(BODY.length) }).end();
    const [, from, to] = /bytes=(\d+)-(\d+)/.exec(req.headers.range ?? "")!.map(Number);
    const part = BODY.subarray(from, to + 1);
    res.writeHead(206, { ...headers, "content-range": `bytes ${from}-${from + part.length - 1}/${BODY.length}`, "content-length": String(part.length) }).end(part);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const client = makeS3Client({ endpoint, accessKeyId: "k", secretAccessKey: "s" });
  catalog = new S3SourceCatalog({ client, bucket: "b", prefix: "" });
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

describe("snapshot policies", () => {
  it("RequireValidator (no entry) refuses an object without a VersionId or strong ETag, naming the policy", async () => {
    entry = undefined;
    const err = (await catalog.open("x", undefined).catch((e) => e)) as HttpError;
    expect(err).toBeInstanceOf(HttpError);
    expect(err.message).toContain("RequireValidator");
    expect(err.message).toContain("AssumeImmutable");
  });

  it("AssumeImmutable, opted into in the catalog entry, serves it", async () => {
    entry = JSON.stringify({ policy: "AssumeImmutable" });
    const source = await catalog.open("x", undefined);
    expect(source.version).toBe(`W/"weak":${BODY.length}`);
    expect(Buffer.from(await source.read(0, 4))).toEqual(BODY.subarray(0, 4));
  });
});

describe("catalog entries", () => {
  it("live beside the source, and record every pin so a rollback returns to the one before", () => {
    expect(catalogKey("cogs/", "map")).toBe("cogs/map.tessera.json");
    let e = parseCatalogEntry("{}", "t");
    expect(e).toEqual({ policy: "RequireValidator", pins: [] });
    e = withPin(withPin(e, "A", "t1"), "B", "t2");
    expect(e.pin).toBe("B");
    e = withPin(e, rollbackVersion(e), "t3");
    expect([e.pin, e.pins.length]).toEqual(["A", 3]);
    expect(rollbackVersion(e)).toBe("B");
    expect(() => rollbackVersion(withPin(parseCatalogEntry("{}", "t"), "A", "t1"))).toThrow(/no earlier pin/);
    expect(() => parseCatalogEntry("[]", "t")).toThrow(/not an object/);
    // When each field was set is the publisher's bookkeeping: kept when readable, else left out, never refused.
    expect(parseCatalogEntry('{"changed":{"access":"t1"}}', "t").changed).toEqual({ access: "t1" });
    for (const changed of ['"t1"', "[]", '{"access":1}', "null"]) expect(parseCatalogEntry(`{"changed":${changed}}`, "t")).not.toHaveProperty("changed");
    expect(() => parseCatalogEntry('{"pins":[{"version":1}]}', "t")).toThrow(/pins/);
  });

  it("pin a content version with its strong ETag, which a re-pin replaces or drops; a weak or odd one is the store's fault", () => {
    const e = withPin(parseCatalogEntry("{}", "t"), "A", "t1", '"abc"');
    expect(parseCatalogEntry(JSON.stringify(e), "t")).toMatchObject({ pin: "A", etag: '"abc"' });
    expect(withPin(e, "B", "t2")).not.toHaveProperty("etag");
    expect(withPin(withPin(e, "B", "t2"), "A", "t3", '"abc"')).toMatchObject({ pin: "A", etag: '"abc"' });
    for (const etag of ['W/"abc"', "abc", 1]) expect(() => parseCatalogEntry(JSON.stringify({ pin: "A", etag }), "t")).toThrow(/etag/);
  });

  it("keep an access restriction they carry through a re-pin, so the publisher's rule is never lost", () => {
    const access = { profile: "active", degradedWidth: 800 };
    const e = withPin(parseCatalogEntry(JSON.stringify({ access }), "t"), "A", "t1");
    expect(JSON.parse(JSON.stringify(e)).access).toEqual(access);
  });
});

describe("restricted sources", () => {
  it("are opened with their restriction, for the decoder to report; one it cannot read is withheld (501), never served openly", async () => {
    entry = JSON.stringify({ policy: "AssumeImmutable", access: { profile: "active", degradedWidth: 800 } });
    expect((await catalog.open("x", undefined)).access).toEqual({ profile: "active", degradedWidth: 800 });
    entry = JSON.stringify({ policy: "AssumeImmutable", access: { profile: "staff" } });
    const err = (await catalog.open("x", undefined).catch((e) => e)) as HttpError;
    expect(err).toBeInstanceOf(HttpError);
    expect([err.status, err.message]).toEqual([501, 'source "x" is withheld: its access rule cannot be read (access profile "staff" is not active, kiosk, external)']);
    entry = JSON.stringify({ policy: "AssumeImmutable", access: "open" });
    const open = await catalog.open("x", undefined);
    expect([open.size, open.access]).toEqual([BODY.length, undefined]);
  });

  it("a new rule keeps the entry's pin, pins and policy; open is no field at all", () => {
    const pinned = withPin({ ...NO_ENTRY, policy: "AssumeImmutable" }, "A", "t1");
    const restricted = withAccess(pinned, { restriction: { profile: "kiosk", degradedWidth: 300 } });
    expect(restricted).toEqual({ ...pinned, access: { profile: "kiosk", degradedWidth: 300 } });
    expect(withAccess(restricted, { open: true })).toEqual(pinned);
  });
});
