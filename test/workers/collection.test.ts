// GET /iiif/3/collection.json through the Worker, against the real working decoder over the test
// directory (workers-global-setup.ts): its images as a Presentation 3.0 Collection, the page after
// a cursor, the next page linked as a Collection item, the cache by page, and hostile cursors.
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import type { Env } from "../../edge/env";
import { listingKey } from "../../edge/handlers/collection";
import worker from "../../edge/index";
import type { SourceListing } from "../../shared/protocol";
import { BASE, heartbeat } from "./helpers";

type Json = Record<string, any>;

async function call(path: string, init?: RequestInit): Promise<Response> {
  const ctx = createExecutionContext();
  const res = await worker.fetch(new Request(BASE + path, init), env as Env, ctx);
  const body = await res.arrayBuffer();
  await waitOnExecutionContext(ctx);
  return new Response(res.status === 304 ? null : body, res);
}

async function collectionOf(path: string): Promise<Json> {
  const res = await call(path);
  expect(res.status, path).toBe(200);
  const doc = (await res.json()) as Json;
  expect(doc["@context"]).toBe("http://iiif.io/api/presentation/3/context.json");
  expect(doc.type).toBe("Collection");
  expect(Object.keys(doc.label).length).toBeGreaterThan(0);
  for (const item of doc.items as Json[]) {
    expect(["Manifest", "Collection"]).toContain(item.type);
    expect(item.id).toMatch(/^http:\/\/tessera\.test\/iiif\/3\//);
    expect(Object.keys(item.label).length, `${item.id} has a label`).toBeGreaterThan(0);
  }
  return doc;
}

const manifestIds = (doc: Json) => (doc.items as Json[]).filter((i) => i.type === "Manifest").map((i) => i.id.split("/")[5]);

beforeAll(async () => {
  expect((await heartbeat({ url: env.TEST_WORKING_DECODER_URL, capacity: 4 })).status).toBe(204);
});

describe("the collection", () => {
  it("lists the working decoder's images as manifests, leaving the mosaic out; each manifest it names is served", async () => {
    const doc = await collectionOf("/iiif/3/collection.json");
    expect(doc.id).toBe(`${BASE}/iiif/3/collection.json`);
    expect(doc.partOf).toBeUndefined();
    const ids = manifestIds(doc);
    expect(ids).toEqual(expect.arrayContaining(["late", "noise", "published", "slow", "utm-quadrants"]));
    expect(ids).not.toContain("quadrants"); // a mosaic: its manifest is 404
    expect([...ids].sort((a, b) => (`${a}.tif` < `${b}.tif` ? -1 : 1))).toEqual(ids);
    const published = (doc.items as Json[]).find((i) => i.id.endsWith("/published/manifest.json"))!;
    expect(published.label).toEqual({ none: ["published"] }); // no entry: the id, as its manifest says
    expect((await call("/iiif/3/published/manifest.json")).status).toBe(200);
  });

  it("pages after a cursor: the page names the whole as partOf", async () => {
    const doc = await collectionOf("/iiif/3/collection.json?page=noise");
    expect(doc.id).toBe(`${BASE}/iiif/3/collection.json?page=noise`);
    expect(doc.partOf).toEqual([{ id: `${BASE}/iiif/3/collection.json`, type: "Collection", label: expect.any(Object) }]);
    const ids = manifestIds(doc);
    expect(ids).toEqual(expect.arrayContaining(["published", "slow", "utm-quadrants"]));
    expect(ids).not.toContain("late");
    expect(ids).not.toContain("noise");
  });

  it("links the next page as a Collection item, from a listing kept by its cursor; hostile labels stay JSON strings", async () => {
    const hostile = `</script><script>alert("x")</script>\u2028`;
    const listing: SourceListing = { sources: [{ id: "kept-a", label: { en: [hostile] } }, { id: "kept-b" }], next: "kept-b" };
    await caches.default.put(listingKey("kept"), Response.json(listing, { headers: { "cache-control": "max-age=60" } }));
    const res = await call("/iiif/3/collection.json?page=kept");
    expect(res.headers.get("content-type")).toBe("application/json"); // never read as HTML
    const doc = (await res.json()) as Json;
    expect(doc.items).toEqual([
      { id: `${BASE}/iiif/3/kept-a/manifest.json`, type: "Manifest", label: { en: [hostile] } },
      { id: `${BASE}/iiif/3/kept-b/manifest.json`, type: "Manifest", label: { none: ["kept-b"] } },
      { id: `${BASE}/iiif/3/collection.json?page=kept-b`, type: "Collection", label: expect.any(Object) },
    ]);
  });

  it("is cached for INFO_MAX_AGE with a strong ETag (304 on If-None-Match), JSON-LD when asked, and HEAD", async () => {
    const res = await call("/iiif/3/collection.json");
    expect(res.headers.get("cache-control")).toMatch(/^public, max-age=60\b/);
    const etag = res.headers.get("etag")!;
    expect(etag).toMatch(/^"[^"]+"$/);
    expect((await call("/iiif/3/collection.json", { headers: { "if-none-match": etag } })).status).toBe(304);
    const ld = await call("/iiif/3/collection.json", { headers: { accept: "application/ld+json" } });
    expect(ld.headers.get("content-type")).toMatch(/^application\/ld\+json;profile=/);
    expect((await call("/iiif/3/collection.json", { method: "HEAD" })).status).toBe(200);
  });

  it("refuses a cursor that is no source id (400), before asking a decoder", async () => {
    for (const page of ["", "..%2Fx", "a%2Fb", ".hidden", "%00", "a%20b", "x".repeat(513), "a&page=b"]) {
      const res = await call(`/iiif/3/collection.json?page=${page}`);
      expect(res.status, page.slice(0, 20)).toBe(400);
    }
  });
});
