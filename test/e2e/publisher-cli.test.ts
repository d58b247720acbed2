// A publisher's session with the tessera command against the real stack: a bucket (local Ceph
// RGW), versioned or without versions as on R2, an S3 decoder and the edge; every test runs on both. Publish A, publish B under the same id, roll back:
// after each step the plain id's tiles show that version's picture at once, though the edge
// would trust its cached version for a minute (INFO_MAX_AGE 60 s). And access: the rule
// `publish --access` and `access` write is the one a decoder opens the source with. And what a
// source is for people: `describe` writes it into the entry, and the manifest shows it at once.
import { execFile, execFileSync } from "node:child_process";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { GetObjectCommand } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { s3DecoderEnv, type BucketKind } from "../../infra/local/s3";
import { ROOT } from "../../infra/root";
import { versionLayoutOf } from "../../cli/publishing";
import { SourceStore } from "../../cli/source-store";
import { S3SourceCatalog } from "../../regional/source/s3";
import { catalogKey } from "../../shared/catalog";
import { PATTERN, pictureOf, startPublishingStack, type PublishingStack } from "../support/publishing-stack";

const REGION = { x: 300, y: 200, w: 256, h: 256 };

describe.each<BucketKind>(["versioned", "unversioned"])("on a %s bucket", (kind) => {
  let publishing: PublishingStack;
  beforeAll(async () => {
    publishing = await startPublishingStack("published", 60, kind);
  });
  afterAll(() => publishing?.stop());

  /** `tessera …args` as a publisher runs it, with the store's and the edge's environment. */
  function tessera(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    const { s3, bucket, stack, token } = publishing;
    const env = { ...process.env, ...s3DecoderEnv(s3, bucket), TESSERA_EDGE_URL: stack.url, TESSERA_ADMIN_TOKEN: token };
    return new Promise((resolve) =>
      execFile(process.execPath, [path.join(ROOT, "bin/tessera.js"), ...args], { cwd: ROOT, env }, (error, stdout, stderr) =>
        resolve({ code: error ? Number(error.code) : 0, stdout, stderr }),
      ),
    );
  }

  /** The version and picture ("A" the pattern, "B" its negative) the id's tile shows now (`city@{version}`: a snapshot). */
  async function tileNow(id = "city"): Promise<{ version: string | null; picture: "A" | "B" | "neither" }> {
    const res = await fetch(`${publishing.stack.url}/iiif/3/${encodeURIComponent(id)}/${REGION.x},${REGION.y},${REGION.w},${REGION.h}/max/0/default.jpg`);
    expect(res.status).toBe(200);
    return { version: res.headers.get("x-tessera-version"), picture: await pictureOf(new Uint8Array(await res.arrayBuffer()), REGION) };
  }

  describe("a publisher's session", () => {
    it("publish A, publish B, roll back, pin: the plain id serves each at once; versions shows both and the pin; without invalidation the old version until `invalidate`", async () => {
      const a = await tessera("publish", PATTERN, "--id", "city", "--json");
      expect(a.code, a.stderr).toBe(0);
      const published = JSON.parse(a.stdout) as { id: string; version: string; edge: { invalidated: number } };
      expect(published).toMatchObject({ id: "city", edge: { decoders: 1, invalidated: 1 } });
      expect(await tileNow()).toEqual({ version: published.version, picture: "A" });

      const b = await tessera("publish", publishing.negative, "--id", "city", "--json");
      expect(b.code, b.stderr).toBe(0);
      const second = JSON.parse(b.stdout) as { version: string };
      expect(await tileNow()).toEqual({ version: second.version, picture: "B" });

      const listed = await tessera("versions", "city", "--json");
      expect(listed.code).toBe(0);
      const { versions } = JSON.parse(listed.stdout) as { versions: { version: string; pinned: boolean; latest: boolean }[] };
      expect(versions.map((v) => [v.version, v.pinned, v.latest])).toEqual([
        [second.version, true, true],
        [published.version, false, false],
      ]);
      const human = await tessera("versions", "city");
      expect(human.stdout.split("\n")[0]).toMatch(new RegExp(`^\\* ${second.version} `));

      const back = await tessera("rollback", "city", "--json");
      expect(back.code, back.stderr).toBe(0);
      expect(JSON.parse(back.stdout)).toMatchObject({ id: "city", version: published.version });
      expect(await tileNow()).toEqual({ version: published.version, picture: "A" });
      // Snapshot URLs name a version, pinned or not: each shows its own picture.
      expect(await tileNow(`city@${second.version}`)).toEqual({ version: second.version, picture: "B" });
      expect(await tileNow(`city@${published.version}`)).toEqual({ version: published.version, picture: "A" });

      const pinned = await tessera("pin", "city", second.version);
      expect(pinned.code, pinned.stderr).toBe(0);
      expect(await tileNow()).toEqual({ version: second.version, picture: "B" });

      // Published without invalidating: the edge keeps serving the version it knows (for up to
      // INFO_MAX_AGE) until `tessera invalidate`, then the new one at once.
      const quiet = await tessera("publish", PATTERN, "--id", "city", "--no-invalidate", "--json");
      expect(quiet.code, quiet.stderr).toBe(0);
      const third = JSON.parse(quiet.stdout) as { version: string };
      expect(await tileNow()).toEqual({ version: second.version, picture: "B" });
      expect((await tessera("invalidate", "city")).code).toBe(0);
      expect(await tileNow()).toEqual({ version: third.version, picture: "A" });
    });

    it("refuses (exit 1) an unknown version, an unknown id, and a file that is not a COG, before uploading it", async () => {
      const unknownVersion = await tessera("pin", "city", "no-such-version");
      expect(unknownVersion.code).toBe(1);
      expect(unknownVersion.stderr).toContain('has no version "no-such-version"');
      expect((await tessera("versions", "nowhere")).code).toBe(1);
      const notCog = path.join(publishing.dir, "notes.tif");
      await writeFile(notCog, "not a tiff");
      const refused = await tessera("publish", notCog, "--id", "notes");
      expect(refused.code).toBe(1);
      expect((await tessera("versions", "notes")).code).toBe(1); // nothing was uploaded
    });

    it("a wrong admin token is refused by the edge (exit 1)", async () => {
      const res = await new Promise<{ code: number; stderr: string }>((resolve) =>
        execFile(process.execPath, [path.join(ROOT, "bin/tessera.js"), "invalidate", "city"], {
          cwd: ROOT,
          env: { ...process.env, TESSERA_EDGE_URL: publishing.stack.url, TESSERA_ADMIN_TOKEN: "wrong" },
        }, (error, _stdout, stderr) => resolve({ code: error ? Number(error.code) : 0, stderr })),
      );
      expect(res.code).toBe(1);
      expect(res.stderr).toContain("refused TESSERA_ADMIN_TOKEN");
    });
  });

  describe("who may see a source", () => {
    /** The source's catalog entry as the bucket holds it, and the access a decoder opens it with. */
    async function stored(id: string): Promise<{ entry: Record<string, unknown>; opened: unknown }> {
      const { client, bucket } = publishing;
      const out = await client.send(new GetObjectCommand({ Bucket: bucket, Key: catalogKey("", id) }));
      const source = await new S3SourceCatalog({ client, bucket, prefix: "" }).open(id, undefined);
      await source.close();
      return { entry: JSON.parse(await out.Body!.transformToString()) as Record<string, unknown>, opened: source.access };
    }

    it("publish --access restricts a source from its first version; access changes the rule, keeping the pin; each invalidates the edge", async () => {
      const published = await tessera("publish", PATTERN, "--id", "archive", "--access", "kiosk", "--degraded-width", "300", "--json");
      expect(published.code, published.stderr).toBe(0);
      const { version } = JSON.parse(published.stdout) as { version: string };
      expect(JSON.parse(published.stdout)).toMatchObject({ id: "archive", access: { profile: "kiosk", degradedWidth: 300 }, edge: { decoders: 1, invalidated: 1 } });
      expect(await stored("archive")).toMatchObject({ entry: { pin: version, access: { profile: "kiosk", degradedWidth: 300 } }, opened: { profile: "kiosk", degradedWidth: 300 } });

      const active = await tessera("access", "archive", "active", "--json");
      expect(active.code, active.stderr).toBe(0);
      expect(JSON.parse(active.stdout)).toEqual({ id: "archive", access: { profile: "active" }, edge: { id: "archive", decoders: 1, invalidated: 1, dropped: expect.any(Number), purged: false } });
      expect(await stored("archive")).toMatchObject({ entry: { pin: version, pins: [{ version }], access: { profile: "active" } }, opened: { profile: "active" } });

      // This edge has no AUTH_SECRET: it withholds the source at once, though it trusted what it
      // knew of it for INFO_MAX_AGE (a minute), and serves it again the moment it is opened.
      const tile = async () => (await fetch(`${publishing.stack.url}/iiif/3/archive/full/128,/0/default.jpg`)).status;
      expect(await tile()).toBe(501);

      const opened = await tessera("access", "archive", "open");
      expect([opened.code, opened.stdout]).toEqual([0, "archive is now open to anyone (edge invalidated)\n"]);
      expect(await tile()).toBe(200);
      const now = await stored("archive");
      expect([now.entry.pin, now.entry.access, now.opened]).toEqual([version, undefined, undefined]);
    });

    it("access refuses an id with no source in the bucket (exit 1)", async () => {
      const run = await tessera("access", "nowhere", "active");
      expect([run.code, run.stderr]).toEqual([1, 'tessera: unknown source "nowhere"\n']);
    });
  });

  describe("what a source is for people", () => {
    const RIGHTS = "http://creativecommons.org/licenses/by/4.0/";

    /** The source's catalog entry as the bucket holds it, and the S3 version of that entry object. */
    async function entryOf(id: string): Promise<{ entry: Record<string, unknown>; objectVersion: string | undefined }> {
      const { client, bucket } = publishing;
      const out = await client.send(new GetObjectCommand({ Bucket: bucket, Key: catalogKey("", id) }));
      return { entry: JSON.parse(await out.Body!.transformToString()) as Record<string, unknown>, objectVersion: out.VersionId };
    }
    const manifestLabel = async (id: string) => {
      const res = await fetch(`${publishing.stack.url}/iiif/3/${id}/manifest.json`);
      expect(res.status).toBe(200);
      return ((await res.json()) as { label: unknown }).label;
    };

    it("describe writes the entry's description, keeping its pin and access, and the manifest shows the label at once; a bad rights URI writes nothing (exit 2)", async () => {
      const published = await tessera("publish", PATTERN, "--id", "plan", "--json");
      expect(published.code, published.stderr).toBe(0);
      const { version } = JSON.parse(published.stdout) as { version: string };
      // The edge now holds the undescribed source, which it would trust for INFO_MAX_AGE (a minute).
      expect(await manifestLabel("plan")).toEqual({ none: ["plan"] });

      const described = await tessera("describe", "plan", "--label", "Map of Graz, 1850", "--rights", RIGHTS, "--metadata", "Date=1850", "--json");
      expect(described.code, described.stderr).toBe(0);
      const description = { label: { en: ["Map of Graz, 1850"] }, rights: RIGHTS, metadata: [{ label: { en: ["Date"] }, value: { en: ["1850"] } }] };
      expect(JSON.parse(described.stdout)).toMatchObject({ id: "plan", description, edge: { invalidated: 1 } });
      expect((await entryOf("plan")).entry).toMatchObject({ pin: version, description });
      expect(await manifestLabel("plan")).toEqual({ en: ["Map of Graz, 1850"] });

      // The access rule set beside it stays when the description changes again.
      expect((await tessera("access", "plan", "kiosk")).code).toBe(0);
      const again = await tessera("describe", "plan", "--metadata", "Date=1851");
      expect(again.code, again.stderr).toBe(0);
      const now = await entryOf("plan");
      if (kind === "versioned") expect(now.objectVersion).toEqual(expect.any(String)); // the bucket versions the entry object
      expect(now.entry).toMatchObject({ pin: version, access: { profile: "kiosk" }, description: { ...description, metadata: [{ label: { en: ["Date"] }, value: { en: ["1851"] } }] } });

      const refused = await tessera("describe", "plan", "--label", "Not written", "--rights", "https://creativecommons.org/licenses/by/4.0");
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain("rights");
      // No new version of the entry object: nothing was written.
      expect(await entryOf("plan")).toEqual(now);
    });
  });

  describe("collecting versions no pin needs", () => {
    it("gc removes only versions neither pinned nor the rollback's, older than the grace period; a dry run unless --delete; a bad grace period is a usage error", async () => {
      const third = path.join(publishing.dir, "third.tif");
      execFileSync("gdal_translate", ["-q", "-of", "COG", "-co", "COMPRESS=DEFLATE", PATTERN, third]);
      const versionOf = async (file: string) => {
        const run = await tessera("publish", file, "--id", "kept", "--json");
        expect(run.code, run.stderr).toBe(0);
        return (JSON.parse(run.stdout) as { version: string }).version;
      };
      const [old, previous, current] = [await versionOf(PATTERN), await versionOf(publishing.negative), await versionOf(third)];
      const gc = async (...args: string[]) => {
        const run = await tessera("gc", "kept", ...args, "--json");
        return { code: run.code, stderr: run.stderr, ...(run.code === 0 && (JSON.parse(run.stdout) as { dryRun: boolean; removed: { version: string }[] })) };
      };
      const listed = async () => ((JSON.parse((await tessera("versions", "kept", "--json")).stdout) as { versions: { version: string }[] }).versions).map((v) => v.version);

      if (kind === "versioned") {
        const refused = await gc("--grace-days", "0");
        expect([refused.code, refused.stderr]).toEqual([1, expect.stringContaining("lifecycle rule")]);
        return;
      }
      // The default grace (a week) keeps all three; a grace of 0 names the one nothing needs, but a dry run removes nothing.
      expect(await gc()).toMatchObject({ code: 0, dryRun: true, removed: [] });
      expect(await gc("--grace-days", "0")).toMatchObject({ code: 0, dryRun: true, removed: [{ version: old }] });
      expect(await listed()).toEqual([current, previous, old]);
      const snapshot = `${publishing.stack.url}/iiif/3/kept@${old}/full/64,/0/default.jpg`;
      expect((await fetch(snapshot)).status).toBe(200);

      for (const bad of ["-1", "1e9", "NaN", "Infinity", "", "3651"]) expect((await gc("--grace-days", bad)).code, bad).toBe(2);
      expect((await tessera("gc", "../kept", "--grace-days", "0", "--delete")).code).toBe(2);
      for (const hostile of ["..%2F..%2Fkept.tessera.json", `..%2Fkept.versions%2F${old}`, "a".repeat(64)]) {
        expect((await fetch(`${publishing.stack.url}/iiif/3/kept@${hostile}/info.json`)).status, hostile).toBe(404);
      }

      expect(await gc("--grace-days", "0", "--delete")).toMatchObject({ code: 0, dryRun: false, removed: [{ version: old }] });
      expect(await listed()).toEqual([current, previous]);
      // Answers cached before stay (a snapshot's answers never change); a decoder opening it afresh finds no such version.
      expect((await tessera("invalidate", "kept")).code).toBe(0);
      expect((await fetch(snapshot.replace("64,", "32,"))).status).toBe(404);
      expect(await tileNow("kept")).toEqual({ version: current, picture: "A" });
      const back = await tessera("rollback", "kept", "--json");
      expect(back.code, back.stderr).toBe(0);
      expect(await tileNow("kept")).toEqual({ version: previous, picture: "B" });
    });
  });

  describe("the collection", () => {
    it("lists the real bucket's published sources once each in key order, each with its publisher's label or its id, the restricted one too; never a version's own object or an entry", async () => {
      // Uploaded and never pinned: its latest version is served on a versioned bucket; on one
      // without versions no id serves it, and the collection does not list it.
      const { client, bucket } = publishing;
      await new SourceStore(client, bucket, "", await versionLayoutOf(client, bucket)).upload("unpinned", PATTERN);
      const res = await fetch(`${publishing.stack.url}/iiif/3/collection.json`);
      expect(res.status).toBe(200);
      const doc = (await res.json()) as { type: string; items: { id: string; type: string; label: unknown }[] };
      expect(doc.type).toBe("Collection");
      const base = `${publishing.stack.url}/iiif/3/`;
      const ids = doc.items.map((item) => item.id.slice(base.length, -"/manifest.json".length));
      // This file's sources (plan is restricted to the reading room by now): listed in key order.
      // On a bucket without versions, each is a folder of content versions (`city.versions/…`).
      expect(ids).toEqual(["archive", "city", "kept", "plan", ...(kind === "versioned" ? ["unpinned"] : [])]);
      const item = (id: string) => doc.items.find((i) => i.id === `${base}${id}/manifest.json`)!;
      expect(item("plan")).toMatchObject({ type: "Manifest", label: { en: ["Map of Graz, 1850"] } });
      expect(item("city").label).toEqual({ none: ["city"] });
    });
  });
});
