// What a publisher says of a source, as the decoder reports it to the edge (which builds the
// manifest from it): a catalog entry's `description` through the real info route, on the plain id
// and its snapshots, COG and mosaic; a description changed after the snapshot was cached, reported
// at once; one the decoder cannot read, left out while the source is still served, with the reason
// logged once per open; and the S3 catalog reading it from a bucket's entry.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { makeS3Client } from "../../infra/local/s3";
import { S3SourceCatalog } from "../../regional/source/s3";
import { tileToQuadkey } from "../../shared/maps/mosaic-json";
import { DECODER, type SourceInfo } from "../../shared/protocol";
import { useEntryFixtures } from "./entry-fixtures";
import { signedGet } from "./regional-helpers";

const fixtures = useEntryFixtures(["jpeg", "deflate", "city"]);
const { entryFile, writeEntry } = fixtures;
beforeEach(() => void (fixtures.decoder.logs.length = 0));

const GRAZ = {
  label: { en: ["Map of Graz, 1850"], de: ["Karte von Graz, 1850"] },
  summary: { en: ['A "cadastral" survey </script>\u2028 of the old town'] },
  requiredStatement: { label: { en: ["Attribution"] }, value: { en: ["Graz City Archive"] } },
  rights: "http://creativecommons.org/licenses/by/4.0/",
  metadata: [{ label: { en: ["Date"] }, value: { none: ["1850"] } }],
};

/** The decoder's info for `id` (at `version`), which must be served. */
async function info(id: string, version?: string): Promise<SourceInfo> {
  const res = await signedGet(fixtures.decoder, DECODER.info(id, version));
  expect(res.status).toBe(200);
  return (await res.json()) as SourceInfo;
}

const warnings = () => fixtures.decoder.logs.filter((r) => r.level === "warn");

describe("the info route reports the entry's description", () => {
  it("a COG's, on the plain id and on its snapshot, as written (hostile characters and all)", async () => {
    await writeEntry("jpeg", { pin: "ignored-here", description: GRAZ });
    const plain = await info("jpeg");
    expect(plain.description).toEqual(GRAZ);
    expect((await info("jpeg", plain.version)).description).toEqual(GRAZ);
  });

  it("a mosaic's too", async () => {
    const doc = { mosaicjson: "0.0.3", minzoom: 14, maxzoom: 14, bounds: [16, 48, 17, 49], tiles: { [tileToQuadkey(14, 8936, 5681)]: ["jpeg.tif"] } };
    await writeFile(path.join(fixtures.dir, "city.mosaic.json"), JSON.stringify(doc));
    await writeEntry("city", { description: { label: { none: ["Graz"] } } });
    const mosaic = await info("city");
    expect(mosaic.mosaic).toBeDefined();
    expect(mosaic.description).toEqual({ label: { none: ["Graz"] } });
  });

  it("none when the entry has none, or an empty one, or there is no entry", async () => {
    expect(await info("deflate")).not.toHaveProperty("description");
    await writeEntry("deflate", { description: {} });
    expect(await info("deflate")).not.toHaveProperty("description");
    await writeEntry("deflate", { access: "open" });
    expect(await info("deflate")).not.toHaveProperty("description");
  });
});

describe("a description changed while the decoder holds the snapshot", () => {
  it("is reported at the next info, plain or snapshot, without a new version or an invalidation", async () => {
    await writeEntry("jpeg", { description: { label: { en: ["Old title"] } } });
    const { version, description } = await info("jpeg");
    expect(description).toEqual({ label: { en: ["Old title"] } });
    // A tile read: the snapshot is parsed and cached at this version.
    expect((await signedGet(fixtures.decoder, DECODER.image("jpeg", "0,0,256,256/256,256/0/default.jpg", version))).status).toBe(200);

    await writeEntry("jpeg", { description: { label: { en: ["New title"] }, rights: "http://rightsstatements.org/vocab/InC/1.0/" } });
    const renamed = { label: { en: ["New title"] }, rights: "http://rightsstatements.org/vocab/InC/1.0/" };
    expect((await info("jpeg", version)).description).toEqual(renamed);
    const plain = await info("jpeg");
    expect([plain.version, plain.description]).toEqual([version, renamed]);

    await rm(entryFile("jpeg"));
    expect(await info("jpeg", version)).not.toHaveProperty("description");
  });
});

describe("a description the decoder cannot read", () => {
  it("leaves the source served without it, the reason logged once per open, not per request", async () => {
    const { version } = await info("deflate");
    await writeEntry("deflate", { description: { label: { en: ["Graz"] }, rights: "https://creativecommons.org/licenses/by/4.0" } });
    for (const asked of [undefined, version, undefined]) expect(await info("deflate", asked)).not.toHaveProperty("description");
    expect((await signedGet(fixtures.decoder, DECODER.image("deflate", "full/64,/0/default.png", version))).status).toBe(200);
    expect(warnings()).toEqual([
      {
        level: "warn",
        msg: "description unreadable",
        source: "local:deflate",
        version,
        reason: expect.stringMatching(/^rights "https:\/\/creativecommons.org\/licenses\/by\/4.0" is not a Creative Commons licence URI/),
      },
    ]);

    // Another mistake opens it again, and says so; mended, the description is reported.
    await writeEntry("deflate", { description: { label: { en: ["Graz"] }, subtitle: { en: ["x"] } } });
    expect(await info("deflate")).not.toHaveProperty("description");
    expect(warnings().map((r) => r.reason)).toEqual([expect.any(String), "description has fields this version does not know: subtitle"]);
    await writeEntry("deflate", { description: { label: { en: ["Graz"] } } });
    expect((await info("deflate", version)).description).toEqual({ label: { en: ["Graz"] } });
    expect(warnings()).toHaveLength(2);
  });

  it("whatever its shape: not an object, a label that is no language map", async () => {
    for (const description of ["Graz", { label: "Graz" }, { metadata: [{ label: { en: ["Date"] } }] }]) {
      await writeEntry("jpeg", { description });
      const served = await info("jpeg");
      expect(served, JSON.stringify(description)).not.toHaveProperty("description");
      expect(served.width).toBe(1000);
    }
    expect(warnings()).toHaveLength(3);
  });
});

describe("an S3 source's entry", () => {
  let server: Server;
  let s3: S3SourceCatalog;
  let entry = "";

  beforeAll(async () => {
    server = createServer((req, res) => {
      const key = decodeURIComponent(new URL(req.url!, "http://x").pathname.replace(/^\/bucket\//, ""));
      if (key.endsWith(".tessera.json")) return void res.writeHead(200).end(entry);
      const body = Buffer.from("0123456789abcdef");
      res.writeHead(206, { etag: '"strong"', "x-amz-version-id": "v1", "content-range": `bytes 0-${body.length - 1}/${body.length}` }).end(body);
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    s3 = new S3SourceCatalog({ client: makeS3Client({ endpoint, accessKeyId: "k", secretAccessKey: "s" }), bucket: "bucket", prefix: "maps/" });
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it("gives the source its description, or the reason it cannot be read and none", async () => {
    entry = JSON.stringify({ pin: "v1", description: GRAZ });
    const described = await s3.open("scan", undefined);
    expect([described.version, described.description, described.unreadableDescription]).toEqual(["v1", GRAZ, undefined]);
    entry = JSON.stringify({ pin: "v1", description: { rights: "http://rightsstatements.org/vocab/InC/2.0/" } });
    const unreadable = await s3.open("scan", "v1");
    expect(unreadable.description).toBeUndefined();
    expect(unreadable.unreadableDescription).toMatch(/^rights "http:\/\/rightsstatements.org\/vocab\/InC\/2.0\/" is not/);
  });
});
