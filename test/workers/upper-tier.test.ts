// The upper tier through the real Worker, admission DO and working decoder: another edge
// location's miss is answered from the DO's own location's cache, without a permit or a decode.
// Another location is simulated by its own Cache API namespace for the edge's decoded answers
// (TEST_LOCATION_CACHES: the request's cf.colo "1", "2", … names it, "pop-1", "pop-2", …); the
// DO's metrics (released_total counts every admitted decode, upper_tier_* the tier) prove what
// was decoded.
import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import { TIER_KEY_HEADER, TIER_SOURCE_HEADER } from "../../edge/admission/upper-tier";
import { decodedCacheKey } from "../../edge/handlers/cached-decode";
import { DECODER } from "../../shared/protocol";
import { ACCESS_VARS, BASE, bytes, cacheSourceInfo, getWith, heartbeat, metric } from "./helpers";
import { forgetSourceInfo, infoKey } from "../../edge/source-info";
import type { SourceInfo } from "../../shared/protocol";

/** A request at the simulated edge location `pop` (its own cache of decoded answers). */
const at = (pop: number, path: string, init: RequestInit = {}, vars = {}) =>
  getWith(path, { TEST_LOCATION_CACHES: "true", ...vars }, { ...init, cf: { colo: String(pop) } });
const counts = async () => ({ decodes: await metric("released_total"), hits: await metric("upper_tier_hits_total"), stored: await metric("upper_tier_stored_total") });
const invalidate = (id: string) => getWith(`/admin/sources/${id}/invalidate`, {}, { method: "POST", headers: { authorization: `Bearer ${env.ADMIN_TOKEN}` } });

beforeEach(async () => {
  expect((await heartbeat({ url: env.TEST_WORKING_DECODER_URL, capacity: 4 })).status).toBe(204);
});

describe("the upper tier (other edge locations simulated by their own Cache API namespaces)", () => {
  it("answers a second location's miss with no second decode: the same bytes, ETag, version and cache-control", async () => {
    const tile = "/tiles/utm-quadrants/WebMercatorQuad/12/2219/1427.png";
    await at(1, "/tiles/utm-quadrants/WebMercatorQuad/tilejson.json"); // the metadata, decoded apart
    const before = await counts();
    const first = await at(1, tile);
    expect([first.status, first.headers.get("x-tessera-cache")]).toEqual([200, "miss"]);
    const decoded = await counts();
    expect(decoded).toEqual({ decodes: before.decodes + 1, hits: before.hits, stored: before.stored + 1 });

    const second = await at(2, tile);
    expect([second.status, second.headers.get("x-tessera-cache")]).toEqual([200, "miss"]); // a miss at pop-2's edge…
    expect(await counts()).toEqual({ ...decoded, hits: decoded.hits + 1 }); // …answered by the tier: not admitted, not decoded
    for (const header of ["etag", "content-type", "x-tessera-version", "cache-control"]) {
      expect(second.headers.get(header), header).toBe(first.headers.get(header));
    }
    expect(await bytes(second)).toEqual(await bytes(first));
    // pop-2's edge keeps it now: its next request is its own hit.
    expect((await at(2, tile)).headers.get("x-tessera-cache")).toBe("hit");
  });

  it("no longer serves a source's entries once it is invalidated (even at its current version): the next location decodes again", async () => {
    const image = "/iiif/3/published/0,0,64,64/32,/0/default.png";
    expect((await at(1, image)).status).toBe(200);
    const before = await counts();
    expect((await invalidate("published")).status).toBe(200);
    const after = await at(2, image);
    expect(after.status).toBe(200);
    // Admitted: the invalidation's fan-out, the metadata the edge forgot, and the image decoded afresh.
    expect(await counts()).toEqual({ decodes: before.decodes + 3, hits: before.hits, stored: before.stored + 1 });
    // The fresh answer is shared again.
    expect((await at(3, image)).status).toBe(200);
    expect(await metric("upper_tier_hits_total")).toBe(before.hits + 1);
  });

  it("never keeps a restricted source's answers: each location that may see it decodes its own", async () => {
    const vars = { ...ACCESS_VARS, PLAIN_ID_MODE: "revalidate" };
    await at(1, "/iiif/3/slow/info.json");
    const info = (await (await caches.default.match(infoKey({ id: "slow" })))!.json()) as SourceInfo;
    await forgetSourceInfo({ id: "slow" });
    await cacheSourceInfo({ ...info, access: { profile: "kiosk" } });
    const inRoom = { headers: { "cf-connecting-ip": "192.0.2.7" } };
    const image = "/iiif/3/slow/0,0,500,500/250,/0/default.jpg";
    const before = await counts();
    for (const pop of [1, 2]) {
      const res = await at(pop, image, inRoom, vars);
      expect([res.status, res.headers.get("cache-control")]).toEqual([200, "private, no-cache"]);
    }
    expect(await counts()).toEqual({ decodes: before.decodes + 2, hits: before.hits, stored: before.stored });
  });

  it("never keeps an answer streamed past STREAM_ANSWER_BYTES: the next location decodes it again", async () => {
    // 1000² of noise: a PNG of some 3 MB, past the 1 MiB wrangler.toml sets.
    const image = "/iiif/3/noise/0,0,1000,1000/max/0/default.png";
    await at(1, "/iiif/3/noise/info.json");
    const before = await counts();
    const first = await at(1, image);
    expect(first.status).toBe(200);
    expect((await bytes(first)).length).toBeGreaterThanOrEqual(Number(env.STREAM_ANSWER_BYTES));
    expect((await at(2, image)).status).toBe(200);
    expect(await counts()).toEqual({ decodes: before.decodes + 2, hits: before.hits, stored: before.stored });
  });

  it("never keeps an error: a decoder's 404 asked twice is a tier miss both times", async () => {
    const stub = env.ADMISSION.get(env.ADMISSION.idFromName("default"));
    const path = DECODER.image("no-such-source", "full/max/0/default.png", "v1");
    const key = decodedCacheKey(BASE, "image", "no-such-source", "full/max/0/default.png", "v1");
    const ask = () => stub.fetch(new Request(`https://admission${path}`, { headers: { [TIER_KEY_HEADER]: key, [TIER_SOURCE_HEADER]: "no-such-source" } }));
    const misses = await metric("upper_tier_misses_total");
    const before = await counts();
    for (let i = 0; i < 2; i++) {
      const res = await ask();
      expect(res.status).toBeGreaterThanOrEqual(400);
      await res.arrayBuffer();
    }
    expect(await metric("upper_tier_misses_total")).toBe(misses + 2);
    expect(await counts()).toEqual({ decodes: before.decodes + 2, hits: before.hits, stored: before.stored });
  });
});
