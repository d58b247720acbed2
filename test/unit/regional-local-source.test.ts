// The local-file catalog: id rules, pinned snapshots, cancellation.

import { appendFile, copyFile, mkdir, mkdtemp, rm, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { LocalCatalog } from "../../regional/source/local";
import { isValidSourceId } from "../../shared/source-id";
import { SAMPLES } from "./regional-helpers";
import { failure } from "../support/failure";

let dir: string;
let catalog: LocalCatalog;

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "tessera-local-"));
  await copyFile(path.join(SAMPLES, "test-pattern.tif"), path.join(dir, "pattern.tif"));
  await writeFile(path.join(dir, "small.tif"), "0123456789");
  catalog = new LocalCatalog(dir);
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("source ids", () => {
  it("accepts plain names and rejects anything that could leave the directory", () => {
    for (const ok of ["pattern", "a.b-c_d", "A9", "x..y"]) expect(isValidSourceId(ok), ok).toBe(true);
    for (const bad of ["", ".", "..", ".hidden", "../x", "a/b", "a\\b", "a b", "a%2Fb", "a\u0000b", "é"]) {
      expect(isValidSourceId(bad), JSON.stringify(bad)).toBe(false);
    }
  });

  it("answers 404 for unknown and invalid ids, and for directories", async () => {
    await mkdir(path.join(dir, "folder.tif"));
    await writeFile(path.join(path.dirname(dir), "outside.tif"), "secret");
    try {
      for (const id of ["missing", "../outside", "..", ".hidden", "folder", `../${path.basename(dir)}/small`]) {
        expect((await failure(catalog.open(id, undefined))).status, id).toBe(404);
      }
    } finally {
      await rm(path.join(path.dirname(dir), "outside.tif"), { force: true });
    }
  });
});

describe("pinned snapshots", () => {
  it("reads exactly the requested bytes and names the version by size and mtime", async () => {
    const src = await catalog.open("small", undefined);
    expect(src.size).toBe(10);
    expect(src.version).toMatch(/^10-[\d.]+$/);
    expect(Buffer.from(await src.read(2, 5)).toString()).toBe("23456");
    expect(Buffer.from(await src.read(0, 0)).toString()).toBe("");
    // Past the end: the client is told so; the source's label is for the log alone.
    expect(await failure(src.read(8, 5))).toMatchObject({ status: 502, message: "read past the end of the object", detail: "local:small: read past the end of the object" });
    await src.close();
  });

  it("opens an explicit current version and 404s one that is gone", async () => {
    const current = (await catalog.currentVersion("small"))!;
    const src = await catalog.open("small", current);
    expect(src.version).toBe(current);
    await src.close();
    const err = await failure(catalog.open("small", "10-1"));
    expect(err.status).toBe(404);
    expect(err.message).toContain("version no longer available");
  });

  it("fails a pinned read after the file is rewritten; a new open sees the new version", async () => {
    const file = path.join(dir, "small.tif");
    const src = await catalog.open("small", undefined);
    expect(Buffer.from(await src.read(0, 4)).toString()).toBe("0123");

    await writeFile(file, "abcdefghij"); // same size, new mtime
    await utimes(file, new Date(), new Date(Date.now() + 5000)); // make sure mtime moved
    const err = await failure(src.read(0, 4));
    expect(err.status).toBe(502);
    expect(err).toMatchObject({ message: "source changed", detail: "local:small: source changed" });

    const fresh = await catalog.open("small", undefined);
    expect(fresh.version).not.toBe(src.version);
    expect(Buffer.from(await fresh.read(0, 4)).toString()).toBe("abcd");
    expect((await failure(catalog.open("small", src.version))).status).toBe(404);
    await src.close();

    await appendFile(file, "klm"); // a size change alone also unpins
    expect((await failure(fresh.read(0, 4))).message).toBe("source changed");
    await fresh.close();
  });

  it("keeps serving the pinned bytes when the file is replaced by rename (old inode)", async () => {
    const file = path.join(dir, "small.tif");
    const src = await catalog.open("small", undefined);
    await writeFile(path.join(dir, "next.tmp"), "ABCDEFGHIJ");
    const { rename } = await import("node:fs/promises");
    await rename(path.join(dir, "next.tmp"), file);
    expect(Buffer.from(await src.read(0, 4)).toString()).toBe("0123");
    const fresh = await catalog.open("small", undefined);
    expect(Buffer.from(await fresh.read(0, 4)).toString()).toBe("ABCD");
    await src.close();
    await fresh.close();
  });
});

describe("cancellation", () => {
  it("honours an aborted signal on open and read", async () => {
    const controller = new AbortController();
    controller.abort(new Error("client gone"));
    await expect(catalog.open("small", undefined, controller.signal)).rejects.toThrow("client gone");
    const src = await catalog.open("small", undefined);
    await expect(src.read(0, 4, controller.signal)).rejects.toThrow("client gone");
    await src.close();
  });
});

describe("documents and store keys", () => {
  it("finds {id}.mosaic.json, then {id}.stac.json, where there is no {id}.tif, and says which it is", async () => {
    await writeFile(path.join(dir, "city.mosaic.json"), "{}");
    await writeFile(path.join(dir, "scene.stac.json"), "{}");
    await writeFile(path.join(dir, "both.stac.json"), "{}");
    await writeFile(path.join(dir, "both.mosaic.json"), "[]");
    const city = await catalog.open("city", undefined);
    expect(city.document).toEqual({ kind: "mosaic", key: "city.mosaic.json" });
    expect((await catalog.open("scene", undefined)).document).toEqual({ kind: "stac", key: "scene.stac.json" });
    const both = await catalog.open("both", undefined);
    expect([both.document?.kind, both.size]).toEqual(["mosaic", 2]);
    // A COG of the same id is the source; its document is not looked at.
    await writeFile(path.join(dir, "pattern.mosaic.json"), "{}");
    expect((await catalog.open("pattern", undefined)).document).toBeUndefined();
    for (const s of [city, both]) await s.close();
  });

  it("opens a store key below the directory, and never one outside it", async () => {
    await mkdir(path.join(dir, "tiles"));
    await writeFile(path.join(dir, "tiles", "a.tif"), "abc");
    const a = await catalog.openKey("tiles/a.tif");
    expect([a.size, a.label]).toEqual([3, "local:tiles/a.tif"]);
    await a.close();
    for (const key of ["../outside.tif", "tiles/../../outside.tif", path.join(dir, "..", "outside.tif"), "", "tiles"]) {
      expect((await failure(catalog.openKey(key))).status, key).toBe(404);
    }
  });
});
