// Snapshot URLs, {id}@{version}, through the Worker and the admission DO in front of a real
// decoder that works (test/support/workers-global-setup.ts), over slow.tif, a 1000² JPEG COG
// with one 500² overview: a snapshot's answers never change, and a plain id's follow the source
// as PLAIN_ID_MODE says.
import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it, vi } from "vitest";
import type { Env } from "../../edge/env";
import worker from "../../edge/index";
import { forgetSourceInfo, infoKey } from "../../edge/source-info";
import { BASE, get, heartbeat, metric, squareSource } from "./helpers";

const IMMUTABLE = "public, max-age=31536000, immutable";
const TILE = "0,0,256,256/max/0/default.jpg";

beforeEach(async () => {
  expect((await heartbeat({ url: env.TEST_WORKING_DECODER_URL, capacity: 4 })).status).toBe(204);
});

/** slow's current version, as x-tessera-version shows it, and its snapshot id in URLs. */
async function current(): Promise<{ version: string; snapshot: string }> {
  const res = await get(`/iiif/3/slow/${TILE}`);
  expect(res.status).toBe(200);
  await res.arrayBuffer();
  const version = res.headers.get("x-tessera-version")!;
  expect(version).not.toBe("");
  return { version, snapshot: `slow@${encodeURIComponent(version)}` };
}

/** Metadata as the edge stores it, trusted for an hour. */
const stored = { headers: { "cache-control": "max-age=3600", "x-tessera-expires": String(Date.now() + 3_600_000) } };
const bytes = async (res: Response) => new Uint8Array(await res.arrayBuffer());
const withVars = (path: string, vars: Partial<Env>, init?: RequestInit) =>
  worker.fetch(new Request(BASE + path, init), { ...env, ...vars }, createExecutionContext());

describe("snapshot URLs", () => {
  it("serve info.json (3.0 and 2.1), an image and /file under {id}@{version}: immutable, naming the version, with the plain URL's pixels and bytes", async () => {
    const { version, snapshot } = await current();

    const info3 = await get(`/iiif/3/${snapshot}/info.json`);
    expect(info3.status).toBe(200);
    expect(info3.headers.get("cache-control")).toBe(IMMUTABLE);
    expect(info3.headers.get("x-tessera-version")).toBe(version);
    expect(await info3.json()).toMatchObject({ id: `${BASE}/iiif/3/${snapshot}`, width: 1000, height: 1000 });
    const info2 = await get(`/iiif/2/${snapshot}/info.json`);
    expect(info2.headers.get("cache-control")).toBe(IMMUTABLE);
    expect(await info2.json()).toMatchObject({ "@id": `${BASE}/iiif/2/${snapshot}`, width: 1000 });
    const redirect = await get(`/iiif/3/${snapshot}`, { redirect: "manual" });
    expect(redirect.headers.get("location")).toBe(`${BASE}/iiif/3/${snapshot}/info.json`);

    for (const v of [3, 2]) {
      const plain = await get(`/iiif/${v}/slow/${TILE}`);
      const fixed = await get(`/iiif/${v}/${snapshot}/${TILE}`);
      expect(fixed.status).toBe(200);
      expect(fixed.headers.get("cache-control")).toBe(IMMUTABLE);
      expect(fixed.headers.get("x-tessera-version")).toBe(version);
      expect(fixed.headers.get("link")).toContain(`<${BASE}/iiif/${v}/${snapshot}/0,0,256,256/`);
      expect(fixed.headers.get("etag")).toBe(plain.headers.get("etag"));
      expect(await bytes(fixed)).toEqual(await bytes(plain));
    }

    const plainFile = await bytes(await get("/iiif/3/slow/file"));
    const file = await get(`/iiif/3/${snapshot}/file`);
    expect(file.status).toBe(200);
    expect(file.headers.get("cache-control")).toBe(IMMUTABLE);
    expect(await bytes(file)).toEqual(plainFile);
  });

  it("answer 404 for an unknown version, and for one that is gone where a plain id follows to the current version", async () => {
    const { version } = await current();
    // A version never seen (percent-encoded as an S3 ETag version would be), on every route.
    for (const path of ["/iiif/3/slow@%22nope%22/info.json", `/iiif/2/slow@nope/${TILE}`, "/iiif/3/slow@nope/file"]) {
      const res = await get(path);
      expect(res.status, path).toBe(404);
      expect(res.headers.get("cache-control"), path).toBe("public, max-age=60");
    }

    // What the edge knew of a version since rewritten: the plain id answers from the current
    // version, the snapshot stays 404, on the image route and then on its info.json too.
    const gone = { ...squareSource("slow", [1000, 500]), version: "gone" };
    await forgetSourceInfo({ id: "slow" }); // this isolate's own copy too
    await caches.default.put(infoKey({ id: "slow" }), Response.json(gone, stored));
    await caches.default.put(infoKey({ id: "slow", version: "gone" }), Response.json(gone, stored));
    const followed = await get(`/iiif/3/slow/${TILE}`);
    expect(followed.status).toBe(200);
    expect(followed.headers.get("x-tessera-version")).toBe(version);
    await followed.arrayBuffer();
    for (const path of [`/iiif/3/slow@gone/${TILE}`, "/iiif/3/slow@gone/info.json"]) {
      const res = await get(path);
      expect(res.status, path).toBe(404);
      expect(((await res.json()) as { error: string; message: string }).message, path).toContain("no longer available");
    }
  });

  it("keep a snapshot's metadata a year in the shared cache, but an isolate's own copy only INFO_MAX_AGE: another isolate's finding that the version is gone reaches it", async () => {
    const snapshot = { id: "slow", version: "deleted" };
    const known = { ...squareSource("slow", [1000, 500]), version: "deleted" };
    await caches.default.put(infoKey(snapshot), Response.json(known, stored));
    const brief = { INFO_MAX_AGE: "0" };
    expect((await withVars("/iiif/3/slow@deleted/info.json", brief)).status).toBe(200);
    await caches.default.delete(infoKey(snapshot)); // what another isolate's forgetting does here
    expect((await withVars("/iiif/3/slow@deleted/info.json", brief)).status).toBe(404);
  });

  it("answer 400 naming the fault for a malformed snapshot id", async () => {
    const released = await metric("released_total");
    for (const id of ["slow@", "@v1", "slow@v1@v2", "slow%40v1%40v2"]) {
      for (const path of [`/iiif/3/${id}/info.json`, `/iiif/2/${id}/${TILE}`, `/iiif/3/${id}/file`, `/iiif/3/${id}`]) {
        const res = await get(path);
        expect(res.status, path).toBe(400);
        expect(((await res.json()) as { message: string }).message, path).toContain("{id}@{version}");
      }
    }
    expect(await metric("released_total")).toBe(released);
  });
});

describe("PLAIN_ID_MODE", () => {
  it("revalidate, the default: a plain id's info.json names the plain id, the base URI asked for, as the IIIF validator checks", async () => {
    const { version } = await current();
    const unset = { PLAIN_ID_MODE: undefined };
    for (const v of [3, 2] as const) {
      const res = await withVars(`/iiif/${v}/slow/info.json`, unset);
      expect(res.headers.get("x-tessera-version")).toBe(version);
      const doc = (await res.json()) as Record<string, string>;
      expect(doc[v === 3 ? "id" : "@id"]).toBe(`${BASE}/iiif/${v}/slow`);
    }
    const image = await withVars("/iiif/3/slow/0,0,512,512/max/0/default.jpg", unset);
    expect(image.headers.get("cache-control")).toBe("public, max-age=60");
    await image.arrayBuffer();
  });

  it("snapshot (opted into here, vitest.config.ts): a plain id's info.json names the current snapshot as its id, so viewers fetch only immutable URLs", async () => {
    const { version, snapshot } = await current();
    for (const v of [3, 2] as const) {
      const res = await get(`/iiif/${v}/slow/info.json`);
      expect(res.headers.get("cache-control")).toBe("public, max-age=60, stale-while-revalidate=3600");
      expect(res.headers.get("x-tessera-version")).toBe(version);
      const doc = (await res.json()) as Record<string, string>;
      expect(doc[v === 3 ? "id" : "@id"]).toBe(`${BASE}/iiif/${v}/${snapshot}`);
    }
  });

  it("revalidate: a plain id stays the id; its images are kept at most INFO_MAX_AGE and revalidate by ETag with a 304 that costs no decode", async () => {
    await current();
    const mode = { PLAIN_ID_MODE: "revalidate" };
    const doc = (await (await withVars("/iiif/3/slow/info.json", mode)).json()) as { id: string };
    expect(doc.id).toBe(`${BASE}/iiif/3/slow`);
    const path = "/iiif/3/slow/0,0,512,512/max/0/default.jpg";
    const first = await withVars(path, mode);
    expect(first.status).toBe(200);
    expect(first.headers.get("cache-control")).toBe("public, max-age=60");
    await first.arrayBuffer();
    const file = await withVars("/iiif/3/slow/file", mode);
    expect(file.headers.get("cache-control")).toBe("public, max-age=60");
    await file.arrayBuffer();

    const released = await metric("released_total");
    const again = await withVars(path, { ...mode, INFO_MAX_AGE: "30" }, { headers: { "if-none-match": first.headers.get("etag")! } });
    expect(again.status).toBe(304);
    expect(again.headers.get("cache-control")).toBe("public, max-age=30");
    expect(await metric("released_total")).toBe(released);
  });

  it("fails loudly on another value, naming PLAIN_ID_MODE", async () => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    const res = await withVars("/iiif/3/slow/info.json", { PLAIN_ID_MODE: "pinned" });
    expect(res.status).toBe(502);
    expect(((await res.json()) as { message: string }).message).toMatch(/PLAIN_ID_MODE must be snapshot or revalidate/);
    logged.mockRestore();
  });
});
