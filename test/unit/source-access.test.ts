// Who may see a source, as the decoder reports it to the edge: a catalog entry's `access` through
// the real info route, on the plain id and its snapshots; a rule changed after the snapshot was
// cached, reported at once; a rule the decoder cannot read, withheld (501); and entries in a
// local data directory.
import { rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { LocalCatalog } from "../../regional/source/local";
import { tileToQuadkey } from "../../shared/maps/mosaic-json";
import { DECODER, type SourceInfo } from "../../shared/protocol";
import { fixtureDir, signedGet, startDecoder, type Decoder } from "./regional-helpers";

let fixtures: Awaited<ReturnType<typeof fixtureDir>>;
let decoder: Decoder;

beforeAll(async () => {
  fixtures = await fixtureDir(); // jpeg.tif and deflate.tif
  decoder = await startDecoder(new LocalCatalog(fixtures.dir));
});
afterAll(async () => {
  await decoder?.close();
  await fixtures?.remove();
});
beforeEach(async () => {
  for (const id of ["jpeg", "deflate", "city"]) await rm(entryFile(id), { force: true });
});

const entryFile = (id: string) => path.join(fixtures.dir, `${id}.tessera.json`);
const writeEntry = (id: string, entry: object) => writeFile(entryFile(id), JSON.stringify(entry));

/** The decoder's info answer for `id` (at `version`): its status, and the body or the error's message. */
async function info(id: string, version?: string): Promise<{ status: number; info?: SourceInfo; message?: string }> {
  const res = await signedGet(decoder, DECODER.info(id, version));
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
    expect((await signedGet(decoder, DECODER.image("jpeg", "0,0,256,256/256,256/0/default.jpg", version))).status).toBe(200);

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
});
