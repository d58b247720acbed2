// GET /v1/sources, the decoder's page of its catalog's image sources for the edge's collection:
// over a local directory through the real route (order, paging, mosaics and other files left out,
// labels from entries, hostile and unreadable ones, the bounds on `after` and `limit`), and the
// S3 catalog over a stand-in bucket that answers ListObjectsV2 as S3 does, which counts its calls.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { copyFile, mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeS3Client } from "../../infra/local/s3";
import { LocalCatalog } from "../../regional/source/local";
import { S3SourceCatalog } from "../../regional/source/s3";
import { DECODER, MAX_SOURCE_PAGE, type SourceListing } from "../../shared/protocol";
import { fixtureDir, SAMPLES, signedGet, startDecoder, type Decoder } from "./regional-helpers";

const HOSTILE = `</script><script>alert("x")</script>\u2028`;

describe("a local catalog's listing", () => {
  let decoder: Decoder;
  let remove: () => Promise<void>;
  beforeAll(async () => {
    const made = await fixtureDir(); // jpeg.tif, deflate.tif
    remove = made.remove;
    const { dir } = made;
    for (const id of ["a", "a-b", "b.th", "b", "restricted"]) await copyFile(path.join(SAMPLES, "test-pattern.tif"), path.join(dir, `${id}.tif`));
    await writeFile(path.join(dir, "mosaic.mosaic.json"), "{}");
    await writeFile(path.join(dir, "red.style.json"), "{}");
    await writeFile(path.join(dir, ".hidden.tif"), "");
    await mkdir(path.join(dir, "folder.tif"));
    await writeFile(path.join(dir, "a.tessera.json"), JSON.stringify({ description: { label: { en: [HOSTILE] } } }));
    await writeFile(path.join(dir, "b.tessera.json"), "not json");
    await writeFile(path.join(dir, "jpeg.tessera.json"), JSON.stringify({ description: { label: "not a map" } }));
    await writeFile(path.join(dir, "restricted.tessera.json"), JSON.stringify({ access: { rule: "login" }, description: { label: { none: ["Locked"] } } }));
    decoder = await startDecoder(new LocalCatalog(dir));
  });
  afterAll(async () => {
    await decoder.close();
    await remove();
  });

  const page = async (after: string | undefined, limit: number): Promise<SourceListing> => {
    const res = await signedGet(decoder, DECODER.sources(after, limit));
    expect(res.status).toBe(200);
    return (await res.json()) as SourceListing;
  };

  it("lists the COGs in key order with their labels, mosaics and other files left out", async () => {
    const all = await page(undefined, MAX_SOURCE_PAGE);
    // `{id}.tif` order: "a-b.tif" < "a.tif" < "b.th.tif" < "b.tif"; the directory named *.tif is skipped.
    expect(all.sources.map((s) => s.id)).toEqual(["a-b", "a", "b.th", "b", "deflate", "jpeg", "restricted"]);
    expect(all.next).toBeUndefined();
    const labels = Object.fromEntries(all.sources.map((s) => [s.id, s.label]));
    expect(labels.a).toEqual({ en: [HOSTILE] }); // as written: the edge writes it as a JSON value
    expect(labels.restricted).toEqual({ none: ["Locked"] }); // restricted sources are listed
    expect([labels.b, labels.jpeg, labels.deflate]).toEqual([undefined, undefined, undefined]); // unreadable entry, unreadable description, none
  });

  it("pages by the last id, with `next` only when more follow", async () => {
    const ids: string[] = [];
    let after: string | undefined;
    for (let i = 0; i < 10; i++) {
      const p = await page(after, 2);
      expect(p.sources.length).toBeLessThanOrEqual(2);
      ids.push(...p.sources.map((s) => s.id));
      if (!p.next) break;
      expect(p.next).toBe(p.sources.at(-1)!.id);
      after = p.next;
    }
    expect(ids).toEqual(["a-b", "a", "b.th", "b", "deflate", "jpeg", "restricted"]);
    expect((await page("restricted", 2)).sources).toEqual([]);
    expect((await page("zzz", 2)).sources).toEqual([]);
  });

  it("refuses a bad `after` or `limit` (400); the route is signed", async () => {
    for (const query of ["after=..%2Fx&limit=2", "after=a%2Fb&limit=2", "limit=0", `limit=${MAX_SOURCE_PAGE + 1}`, "limit=1e2", "limit=-1", "limit=99999"]) {
      expect((await signedGet(decoder, `/v1/sources?${query}`)).status, query).toBe(400);
    }
    expect((await signedGet(decoder, DECODER.sources(undefined, 2), null)).status).toBe(401);
  });
});

/**
 * A bucket of empty objects that answers ListObjectsV2 (prefix, delimiter, start-after,
 * max-keys, continuation-token) and GetObject of the entries it holds, counting each call.
 */
function standInBucket(objects: Record<string, string>) {
  const calls = { list: 0, get: 0 };
  const keys = Object.keys(objects).sort();
  const server = createServer((req, res) => {
    const url = new URL(req.url!, "http://x");
    if (url.searchParams.get("list-type") === "2") {
      calls.list++;
      const q = (name: string) => url.searchParams.get(name) ?? undefined;
      const prefix = q("prefix") ?? "";
      const from = q("continuation-token") ?? q("start-after") ?? "";
      const max = Number(q("max-keys") ?? 1000);
      const listed: { key?: string; folder?: string }[] = [];
      let truncated = false;
      for (const key of keys) {
        if (!key.startsWith(prefix) || key <= from) continue;
        const slash = key.indexOf("/", prefix.length);
        const folder = slash >= 0 ? key.slice(0, slash + 1) : undefined;
        if (folder && listed.at(-1)?.folder === folder) continue;
        if (listed.length === max) {
          truncated = true;
          break;
        }
        listed.push(folder ? { folder } : { key });
      }
      const last = listed.at(-1);
      // The token is where the next listing resumes: past the last key, or past the whole folder.
      const token = last?.folder ? `${last.folder}\uffff` : last?.key;
      const xml = [
        `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>bucket</Name><Prefix>${prefix}</Prefix><KeyCount>${listed.length}</KeyCount><MaxKeys>${max}</MaxKeys><IsTruncated>${truncated}</IsTruncated>`,
        truncated ? `<NextContinuationToken>${token}</NextContinuationToken>` : "",
        ...listed.map((l) => (l.key ? `<Contents><Key>${l.key}</Key><Size>0</Size></Contents>` : `<CommonPrefixes><Prefix>${l.folder}</Prefix></CommonPrefixes>`)),
        "</ListBucketResult>",
      ].join("");
      return void res.writeHead(200, { "content-type": "application/xml" }).end(xml);
    }
    calls.get++;
    const key = decodeURIComponent(url.pathname.replace(/^\/bucket\//, ""));
    if (objects[key] === undefined) return void res.writeHead(404, { "content-type": "application/xml" }).end("<Error><Code>NoSuchKey</Code></Error>");
    res.writeHead(200).end(objects[key]);
  });
  return { server, calls };
}

describe("an S3 catalog's listing", () => {
  let server: Server;
  let calls: { list: number; get: number };
  let s3: S3SourceCatalog;
  const objects: Record<string, string> = {
    "maps/a.tif": "",
    "maps/a-b.tif": "",
    "maps/b.tif": "",
    "maps/b.tessera.json": JSON.stringify({ description: { label: { en: ["Bee"] } } }),
    "maps/b.th.tif": "",
    "maps/b.th.tessera.json": JSON.stringify({ description: { label: { en: ["Bee th"] } } }),
    "maps/m.mosaic.json": "",
    "maps/s.stac.json": "",
    "maps/red.style.json": "",
    "other/x.tif": "",
  };
  // A mosaic's many assets in a folder under the prefix: one key of a listing, not thousands.
  for (let i = 0; i < 2500; i++) objects[`maps/assets/${String(i).padStart(4, "0")}.tif`] = "";
  // Thousands of keys between two images: the page stops at its budget of listings.
  for (let i = 0; i < 3500; i++) objects[`maps/c${String(i).padStart(4, "0")}.style.json`] = "";
  objects["maps/d.tif"] = "";

  beforeAll(async () => {
    ({ server, calls } = standInBucket(objects));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    s3 = new S3SourceCatalog({ client: makeS3Client({ endpoint, accessKeyId: "k", secretAccessKey: "s" }), bucket: "bucket", prefix: "maps/" });
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it("lists the COGs after the cursor in key order, reading only the entries the listing names", async () => {
    calls.list = calls.get = 0;
    const first = await s3.listSources(undefined, 3);
    expect(first).toEqual({ sources: [{ id: "a-b" }, { id: "a" }, { id: "b.th", label: { en: ["Bee th"] } }], next: "b.th" });
    expect(calls).toEqual({ list: 1, get: 1 });
    // "b.tessera.json" is stored before where this page starts ("b.th.tif"): read by its key.
    calls.list = calls.get = 0;
    const second = await s3.listSources("b.th", 3);
    expect(second.sources[0]).toEqual({ id: "b", label: { en: ["Bee"] } });
    expect(calls.get).toBe(1);
  });

  it("ends a page at its budget of listings, and the next page goes on past it", async () => {
    calls.list = calls.get = 0;
    const second = await s3.listSources("b.th", 100);
    expect(second).toEqual({ sources: [{ id: "b", label: { en: ["Bee"] } }], next: "b" });
    expect(calls.list).toBe(3);
    // 3000 keys in a row without an image: a 502 that says so, never a loop.
    await expect(s3.listSources("b", 100)).rejects.toMatchObject({ status: 502 });
    calls.list = 0;
    expect(await s3.listSources("c3400.style", 100)).toEqual({ sources: [{ id: "d" }] });
  });
});

describe("an S3 catalog's listing of a bucket without versions", () => {
  let server: Server;
  let calls: { list: number; get: number };
  let catalog: (prefix: string) => S3SourceCatalog;
  const version = (n: number) => String(n).repeat(64);
  const objects: Record<string, string> = {
    // Both a COG and content versions (versioning turned off after publishing): one source.
    "maps/a.tif": "",
    [`maps/a.versions/${version(1)}.tif`]: "",
    // A COG whose key is between a's COG and a's folder.
    "maps/a.u.tif": "",
    "maps/b.tessera.json": JSON.stringify({ pin: version(2), description: { label: { en: ["Bee"] } } }),
    [`maps/b.versions/${version(2)}.tif`]: "",
    [`maps/b.versions/${version(3)}.tif`]: "",
    // An entry alone is no source.
    "maps/c.tessera.json": JSON.stringify({ pin: version(4) }),
    // Versions none of which is pinned are served by no id: no entry, or an entry without a pin.
    [`maps/d.versions/${version(8)}.tif`]: "",
    "maps/g.tessera.json": JSON.stringify({ access: { profile: "active" } }),
    [`maps/g.versions/${version(9)}.tif`]: "",
    // "e.v2.versions/" sorts before "e.versions/", but e's place, "e.tif", is before "e.v2.tif".
    [`maps/e.v2.versions/${version(5)}.tif`]: "",
    "maps/e.v2.tessera.json": JSON.stringify({ pin: version(5) }),
    [`maps/e.versions/${version(6)}.tif`]: "",
    "maps/e.tessera.json": JSON.stringify({ pin: version(6) }),
    "maps/m.mosaic.json": "",
    // A folder that is no source's versions (a mosaic's assets).
    "maps/assets/x.tif": "",
  };
  // Under "wide/": a source whose folder the first listing does not reach, after a thousand COGs
  // whose keys are before it though their places are after its place, "f.tif".
  objects["wide/f.a.tif"] = "";
  for (let i = 0; i < 1500; i++) objects[`wide/f.u${String(i).padStart(4, "0")}.tif`] = "";
  objects[`wide/f.versions/${version(7)}.tif`] = "";
  objects["wide/f.tessera.json"] = JSON.stringify({ pin: version(7) });

  beforeAll(async () => {
    ({ server, calls } = standInBucket(objects));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const client = makeS3Client({ endpoint, accessKeyId: "k", secretAccessKey: "s" });
    catalog = (prefix) => new S3SourceCatalog({ client, bucket: "bucket", prefix });
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it("lists each source once by its id at its COG's place, folders of content versions as their source when a version is pinned; never a version's object, an entry alone or another folder", async () => {
    expect(await catalog("maps/").listSources(undefined, 100)).toEqual({
      sources: [{ id: "a" }, { id: "a.u" }, { id: "b", label: { en: ["Bee"] } }, { id: "e" }, { id: "e.v2" }],
    });
  });

  it("pages by the last id without losing or repeating a source, whatever page a folder falls on", async () => {
    for (const limit of [1, 2, 3]) {
      const ids: string[] = [];
      let after: string | undefined;
      for (let i = 0; i < 10; i++) {
        const page = await catalog("maps/").listSources(after, limit);
        ids.push(...page.sources.map((s) => s.id));
        if (!page.next) break;
        after = page.next;
      }
      expect(ids, `limit ${limit}`).toEqual(["a", "a.u", "b", "e", "e.v2"]);
    }
  });

  it("looks up by name a folder the listings have not reached whose place is in the page", async () => {
    calls.list = 0;
    const first = await catalog("wide/").listSources(undefined, 3);
    expect(first).toEqual({ sources: [{ id: "f.a" }, { id: "f" }, { id: "f.u0000" }], next: "f.u0000" });
    expect(calls.list).toBe(2); // one listing of a thousand keys, one lookup of f's folder
    const second = await catalog("wide/").listSources("f.u0000", 2);
    expect(second.sources).toEqual([{ id: "f.u0001" }, { id: "f.u0002" }]);
  });
});
