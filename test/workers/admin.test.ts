// POST /admin/sources/{id}/invalidate through the Worker and the admission DO, in front of a
// real decoder that works (test/support/workers-global-setup.ts; ADMIN_TOKEN is set here).
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { infoKey } from "../../edge/source-info";
import { get, heartbeat, metric } from "./helpers";

const invalidate = (id: string, token?: string, body?: string, query = "") =>
  get(`/admin/sources/${id}/invalidate${query}`, {
    method: "POST",
    body,
    headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
  });

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
    expect(await res.json()).toEqual({ id: "published", decoders: 1, invalidated: 1, dropped: 1 });
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
    expect(await res.json()).toEqual({ id: "quadrants", member: "utm-quadrants.tif", decoders: 1, invalidated: 1, dropped: 1 });
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
