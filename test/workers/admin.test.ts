// POST /admin/sources/{id}/invalidate through the Worker and the admission DO, in front of a
// real decoder that works (test/support/workers-global-setup.ts; ADMIN_TOKEN is set here).
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { edgeConfig, type Env } from "../../edge/env";
import { infoKey } from "../../edge/source-info";
import { get, heartbeat, metric } from "./helpers";

const invalidate = (id: string, token?: string, body?: string, query = "") =>
  get(`/admin/sources/${id}/invalidate${query}`, {
    method: "POST",
    body,
    headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
  });

/** What the stand-in of Cloudflare's purge API (test/support/workers-global-setup.ts) was asked so far. */
const purgeCalls = async () => (await (await fetch(`${env.CLOUDFLARE_API_BASE}/calls`)).json()) as { path: string; authorization?: string; body: unknown }[];

describe("POST /admin/sources/{id}/invalidate", () => {
  it("refuses a missing, wrong or partial token with 401, uncached, before anything else", async () => {
    for (const token of [undefined, "wrong", "admin-test", `${env.ADMIN_TOKEN}0`]) {
      const res = await invalidate("published", token);
      expect(res.status, String(token)).toBe(401);
      expect(res.headers.get("www-authenticate")).toBe('Bearer realm="admin"');
      expect(res.headers.get("cache-control")).toBe("no-store");
    }
    expect(await metric("released_total")).toBe(0); // never admitted
  });

  it("is admitted as a tile (it decodes nothing): a publisher invalidates with full_max 0 and with no full memory", async () => {
    // One permit (full_max 0 at the default ratio), then a full budget of nothing: fulls are shed or 413.
    for (const report of [{ capacity: 1 }, { capacity: 4, memoryBytes: 1 }]) {
      expect((await heartbeat({ url: env.TEST_WORKING_DECODER_URL, ...report })).status).toBe(204);
      const [fullShed, tooLarge, released] = [await metric("full_shed_total"), await metric("tessera_decode_memory_too_large_total"), await metric("released_total")];
      const res = await invalidate("published", env.ADMIN_TOKEN);
      expect(res.status, JSON.stringify(report)).toBe(200);
      expect(await res.json()).toMatchObject({ id: "published", decoders: 1, invalidated: 1 });
      expect([await metric("full_shed_total"), await metric("tessera_decode_memory_too_large_total"), await metric("released_total")]).toEqual([fullShed, tooLarge, released + 1]);
    }
  });

  it("makes every decoder drop the source's snapshots and the edge its metadata", async () => {
    expect((await heartbeat({ url: env.TEST_WORKING_DECODER_URL, capacity: 4 })).status).toBe(204);
    const info = await get("/iiif/3/published/info.json");
    expect(info.status).toBe(200);
    await info.arrayBuffer();
    expect(await caches.default.match(infoKey({ id: "published" }))).toBeDefined();
    const released = await metric("released_total");

    const res = await invalidate("published", env.ADMIN_TOKEN);
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(await res.json()).toEqual({ id: "published", decoders: 1, invalidated: 1, dropped: 1, purged: true });
    expect(await caches.default.match(infoKey({ id: "published" }))).toBeUndefined();
    expect(await metric("released_total")).toBe(released + 1);
    // Nothing left to drop the second time.
    expect(await (await invalidate("published", env.ADMIN_TOKEN)).json()).toMatchObject({ dropped: 0 });
    // The next request opens the source afresh.
    expect((await get("/iiif/3/published/info.json")).status).toBe(200);
  });

  it("with ?member=, makes every decoder open that asset of the mosaic afresh (invalidate_source(mosaic, member))", async () => {
    expect((await heartbeat({ url: env.TEST_WORKING_DECODER_URL, capacity: 4 })).status).toBe(204);
    const tile = await get("/tiles/quadrants/WebMercatorQuad/12/2219/1427.png");
    expect(tile.status).toBe(200); // the member is open now
    await tile.arrayBuffer();
    const member = (token?: string) => invalidate("quadrants", token, undefined, "?member=utm-quadrants.tif");
    const res = await member(env.ADMIN_TOKEN);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ id: "quadrants", member: "utm-quadrants.tif", decoders: 1, invalidated: 1, dropped: 1, purged: false });
    expect(await (await member(env.ADMIN_TOKEN)).json()).toMatchObject({ dropped: 0 });
    expect((await member("wrong")).status).toBe(401);
    expect((await invalidate("quadrants", env.ADMIN_TOKEN, undefined, "?member=")).status).toBe(400);
  });

  it("answers 400 for a bad id and 413 for a body far larger than an admin call", async () => {
    expect((await invalidate("%E0%A4%A", env.ADMIN_TOKEN)).status).toBe(400);
    expect((await invalidate("published@v1", env.ADMIN_TOKEN)).status).toBe(400);
    expect((await invalidate("published", env.ADMIN_TOKEN, "x".repeat(64 * 1024))).status).toBe(413);
  });
});

describe("every location (Cloudflare's purge API stood in: it cannot exist here)", () => {
  it("an invalidation purges the plain id's answers by their tag, with the zone's token; a member's purges nothing", async () => {
    expect((await heartbeat({ url: env.TEST_WORKING_DECODER_URL, capacity: 4 })).status).toBe(204);
    const before = (await purgeCalls()).length;
    expect(await (await invalidate("published", env.ADMIN_TOKEN)).json()).toMatchObject({ purged: true });
    expect((await purgeCalls()).slice(before)).toEqual([{ path: "/zones/test-zone/purge_cache", authorization: "Bearer test-purge-token", body: { tags: ["tessera:published"] } }]);
    const again = (await purgeCalls()).length;
    const member = await invalidate("quadrants", env.ADMIN_TOKEN, undefined, "?member=utm-quadrants.tif");
    expect(await member.json()).toMatchObject({ purged: false });
    expect((await purgeCalls()).length).toBe(again);
  });

  it("tags a plain id's answers with the source and its version, a snapshot's with its version alone", async () => {
    expect((await heartbeat({ url: env.TEST_WORKING_DECODER_URL, capacity: 4 })).status).toBe(204);
    const plain = await get("/iiif/3/published/info.json");
    const version = plain.headers.get("x-tessera-version")!;
    expect(version).toBeTruthy();
    expect(plain.headers.get("cache-tag")).toBe(`tessera:published,tessera:published@${version}`);
    const tile = await get("/iiif/3/published/0,0,256,256/256,/0/default.jpg");
    expect(tile.status).toBe(200);
    expect(tile.headers.get("cache-tag")).toBe(`tessera:published,tessera:published@${version}`);
    const snapshot = await get(`/iiif/3/published@${version}/info.json`);
    expect(snapshot.status).toBe(200);
    expect(snapshot.headers.get("cache-tag")).toBe(`tessera:published@${version}`);
    // Answers that are about no source carry none.
    expect((await get("/tileMatrixSets")).headers.get("cache-tag")).toBeNull();
  });
});

describe("the purge settings", () => {
  it("take a zone and a token together; one alone stops the Worker naming the other", () => {
    const base = { ...env, CLOUDFLARE_ZONE_ID: "", CLOUDFLARE_PURGE_TOKEN: "", CLOUDFLARE_API_BASE: "" } as Env;
    expect(edgeConfig(base).purge).toBeUndefined();
    expect(edgeConfig({ ...base, CLOUDFLARE_ZONE_ID: "z", CLOUDFLARE_PURGE_TOKEN: "t" }).purge).toEqual({ zoneId: "z", token: "t", apiBase: "https://api.cloudflare.com/client/v4" });
    expect(() => edgeConfig({ ...base, CLOUDFLARE_ZONE_ID: "z" })).toThrow(/CLOUDFLARE_PURGE_TOKEN is not set, but CLOUDFLARE_ZONE_ID is/);
    expect(() => edgeConfig({ ...base, CLOUDFLARE_PURGE_TOKEN: "t" })).toThrow(/CLOUDFLARE_ZONE_ID is not set, but CLOUDFLARE_PURGE_TOKEN is/);
  });
});
