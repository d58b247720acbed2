// Admission across regions and shards, through the real Worker and admission DOs in workerd and
// four real decoders (test/support/workers-regions-setup.ts). A remote region cannot exist on
// one machine: "near" and "far" are two regions by name, their decoders all local. The bindings
// (vitest.config.ts) give four regions of two shards each, nearest first: "spare" (never a
// decoder), "near", "far", and "broken", whose shard 1 throws on every call
// (TEST_THROWING_SHARD, a binding only tests set). SOURCE_REGIONS maps id prefixes to them.
// Which shard an id hashes to is fixed (FNV-1a); the ids here are chosen for it and checked.
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { placement, shardOf } from "../../../shared/regions";
import { get, heartbeat, labelOf } from "../helpers";

const near = env.TEST_NEAR_DECODER_URLS.split(",");
const far = env.TEST_FAR_DECODER_URLS.split(",");
const shardOfId = (id: string) => shardOf(placement(env), id);

/** Registers decoders in a region through the real heartbeat route (every shard of it hears). */
async function register(urls: string[], region: string): Promise<Response[]> {
  return Promise.all(urls.map((url) => heartbeat({ url, region, capacity: 2, memoryBytes: 4_000_000_000 })));
}

/** GET /metrics as `name region/shard` → value (samples with further labels are left out). */
async function metrics(): Promise<Map<string, number>> {
  const res = await get("/metrics");
  expect(res.status).toBe(200);
  const values = new Map<string, number>();
  for (const line of (await res.text()).split("\n")) {
    const m = /^(\w+)\{region="([^"]+)",shard="(\d+)"\} (\S+)$/.exec(line);
    if (m) values.set(`${m[1]} ${m[2]}/${m[3]}`, Number(m[4]));
  }
  return values;
}

/** A metric of one shard, or summed over a region's shards. */
const of = (m: Map<string, number>, name: string, region: string, shard?: number): number =>
  shard !== undefined
    ? m.get(`tessera_admission_${name} ${region}/${shard}`) ?? NaN
    : [0, 1].reduce((sum, s) => sum + of(m, name, region, s), 0);

/** Requests a decoder has answered, all statuses, on the routes the DO forwards (not /metrics). */
async function answered(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return [...text.matchAll(/^tessera_decoder_requests_total\{route="(?!metrics")[^}]*\} (\d+)$/gm)].reduce((n, m) => n + Number(m[1]), 0);
}
const answeredBy = async (urls: string[]) => (await Promise.all(urls.map(answered))).reduce((a, b) => a + b, 0);

/** A distinct 64² tile of one of the test-pattern copies: never an edge-cache hit. */
let tiles = 0;
const tile = (id: string) => {
  const n = tiles++;
  return `/iiif/3/${id}/${(n % 15) * 64},${Math.floor(n / 15) * 64},64,64/64,/0/default.jpg`;
};
/** A distinct whole-image render of a 3000² copy: a full-partition decode. */
let fulls = 0;
const full = (id: string) => `/iiif/3/${id}/full/${2990 - fulls++},/0/default.jpg`;

async function ok(path: string): Promise<number> {
  const started = Date.now();
  const res = await get(path);
  expect(res.status, `${path}: ${res.status} ${res.status === 200 ? "" : await res.clone().text()}`).toBe(200);
  await res.arrayBuffer();
  return Date.now() - started;
}

beforeAll(async () => {
  // The ids below were chosen for the shard they hash to.
  expect(["near-pattern", "far-pattern", "both-pattern", "broken-a", "broken-b", "far-big-a", "far-big-b"].map(shardOfId)).toEqual([0, 1, 1, 0, 1, 1, 0]);
  for (const res of [...(await register(near, "near")), ...(await register(far, "far"))]) expect(res.status).toBe(204);
});

describe("two regions (the far one faked on this machine) with two decoders each", () => {
  it("gives every shard of a region its decoders and a fixed half of their 4 permits", async () => {
    const m = await metrics();
    for (const region of ["near", "far"]) {
      for (const shard of [0, 1]) {
        expect(of(m, "decoders_live", region, shard), `${region}/${shard}`).toBe(2);
        expect(of(m, "permits_total", region, shard), `${region}/${shard}`).toBe(2);
        expect(of(m, "tile_min_threads", region, shard)).toBe(1);
        expect(of(m, "full_max_threads", region, shard)).toBe(1);
      }
      expect(of(m, "memory_limit_bytes", region)).toBe(8_000_000_000); // the region's envelope, split in two
      expect(of(m, "shard_up", region)).toBe(2);
    }
    expect(of(m, "permits_total", "spare")).toBe(0);
  });

  it("decodes each source in the region that serves it", async () => {
    const before = { near: await answeredBy(near), far: await answeredBy(far) };
    for (let i = 0; i < 4; i++) await ok(tile("near-pattern"));
    const afterNear = { near: await answeredBy(near), far: await answeredBy(far) };
    expect(afterNear.near).toBeGreaterThanOrEqual(before.near + 4);
    expect(afterNear.far).toBe(before.far);
    for (let i = 0; i < 4; i++) await ok(tile("far-pattern"));
    expect(await answeredBy(near)).toBe(afterNear.near);
    expect(await answeredBy(far)).toBeGreaterThanOrEqual(afterNear.far + 4);
  });

  it("fails over to the next region that serves a source when the nearest has no live decoder", async () => {
    const m0 = await metrics();
    const nearBefore = await answeredBy(near);
    const res = await get(tile("both-pattern")); // spare first: no decoder there, then near
    expect(res.status).toBe(200);
    expect(res.headers.has("x-tessera-no-decoders")).toBe(false);
    await res.arrayBuffer();
    expect(await answeredBy(near)).toBeGreaterThan(nearBefore);
    const m1 = await metrics();
    expect(of(m1, "tile_shed_total", "spare", 1)).toBeGreaterThan(of(m0, "tile_shed_total", "spare", 1));
    // Served by spare alone, nothing else can: the usual 503.
    const lost = await get(tile("lost-pattern"));
    expect(lost.status).toBe(503);
    expect(lost.headers.get("retry-after")).toBe("1");
    expect(lost.headers.has("x-tessera-no-decoders")).toBe(false);
    expect(await lost.json()).toMatchObject({ error: "overloaded" });
  });

  it("rejects a heartbeat naming a region the edge does not have, with 400", async () => {
    const [res] = await register([near[0]], "mars");
    expect(res.status).toBe(400);
    expect((await res.json<{ message: string }>()).message).toBe(`heartbeat region "mars" is not one of the edge's REGIONS (spare, near, far, broken)`);
  });

  it("invalidates a source in every region, through the shard that admits it there", async () => {
    const invalidate = () => get("/admin/sources/near-pattern/invalidate", { method: "POST", headers: { authorization: `Bearer ${env.ADMIN_TOKEN}` } });
    await ok(tile("near-pattern")); // a near decoder has it open
    const res = await invalidate();
    expect(res.status).toBe(200);
    // near's 2 decoders and far's 2; spare and broken have none (nothing open there).
    const answer = await res.json<{ decoders: number; invalidated: number; dropped: number }>();
    expect(answer).toMatchObject({ id: "near-pattern", decoders: 4, invalidated: 4 });
    expect(answer.dropped).toBeGreaterThanOrEqual(1);
    expect(await (await invalidate()).json()).toEqual({ id: "near-pattern", decoders: 4, invalidated: 4, dropped: 0, purged: false });
  });
});

describe("a crawler flood", () => {
  it("of full-image renders in the far region leaves the near region's tiles unqueued, unshed and about as fast", async () => {
    const latencies = async () => {
      const ms: number[] = [];
      for (let i = 0; i < 8; i++) ms.push(await ok(tile("near-pattern")));
      return ms.sort((a, b) => a - b)[4];
    };
    await ok(tile("near-pattern")); // warm
    const quiet = await latencies();
    const m0 = await metrics();
    // 16 distinct fulls, over both far shards: more than its 2 full permits can run at once.
    const flood = Promise.all(Array.from({ length: 16 }, (_, i) => get(full(i % 2 ? "far-big-a" : "far-big-b")).then(async (r) => (await r.arrayBuffer(), r.status))));
    await scheduler.wait(300);
    const during = await latencies();
    const mid = await metrics();
    const statuses = await flood;
    const m1 = await metrics();

    // The flood was on while the tiles ran: the far region ran fulls and queued more.
    expect(of(mid, "full_in_use", "far")).toBeGreaterThan(0);
    expect(of(mid, "full_waiting", "far")).toBeGreaterThan(0);
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThan(0);
    for (const name of ["tile_shed_total", "full_shed_total", "request_timeouts_total"]) {
      expect(of(m1, name, "near"), name).toBe(of(m0, name, "near"));
    }
    expect(of(mid, "tile_waiting", "near")).toBe(0);
    expect(of(mid, "full_waiting", "near")).toBe(0);
    // The decoders share this machine's two cores, so CPU contention alone slows near's tiles a
    // little; admission adds no wait. A generous bound: within 4× plus 500 ms of the quiet median.
    expect(during, `median tile ${quiet} ms quiet, ${during} ms during the flood`).toBeLessThan(quiet * 4 + 500);
  });

  it("never holds more permits, fulls or reserved bytes in a region than the region has, summed over its shards", async () => {
    const samples: Map<string, number>[] = [];
    const flood = Promise.all([
      ...Array.from({ length: 12 }, (_, i) => get(full(["far-big-a", "far-big-b", "far-big-c", "far-big-d"][i % 4]))),
      ...Array.from({ length: 24 }, () => get(tile("far-pattern"))),
    ]).then((all) => Promise.all(all.map((r) => r.arrayBuffer())));
    let done = false;
    void flood.finally(() => (done = true));
    while (!done) {
      samples.push(await metrics());
      await scheduler.wait(50);
    }
    await flood;
    expect(samples.length).toBeGreaterThan(3);
    const peak = (f: (m: Map<string, number>) => number) => Math.max(...samples.map(f));
    expect(peak((m) => of(m, "permits_total", "far"))).toBe(4);
    expect(peak((m) => of(m, "permits_in_use", "far"))).toBeGreaterThan(1); // both shards were busy
    expect(peak((m) => of(m, "permits_in_use", "far"))).toBeLessThanOrEqual(4);
    expect(peak((m) => of(m, "full_in_use", "far"))).toBeLessThanOrEqual(2); // full_max 1 per shard
    const fullMem = samples[0].get("tessera_decode_memory_budget_bytes far/0")! + samples[0].get("tessera_decode_memory_budget_bytes far/1")!;
    expect(peak((m) => (m.get("tessera_decode_memory_reserved_bytes far/0") ?? 0) + (m.get("tessera_decode_memory_reserved_bytes far/1") ?? 0))).toBeLessThanOrEqual(fullMem);
    for (const m of samples) {
      for (const shard of [0, 1]) expect(of(m, "permits_in_use", "far", shard)).toBeLessThanOrEqual(of(m, "permits_total", "far", shard));
    }
  });
});

describe("shards of a region whose permits do not divide evenly", () => {
  it("own the floor of an even split, the remainder one each to the first, adding up to the region's", async () => {
    const beats = await Promise.all([
      heartbeat({ url: far[0], region: "far", capacity: 3, memoryBytes: 3_000_000_001 }),
      heartbeat({ url: far[1], region: "far", capacity: 2, memoryBytes: 2_000_000_000 }),
    ]);
    for (const res of beats) expect(res.status).toBe(204);
    const m = await metrics();
    expect([of(m, "permits_total", "far", 0), of(m, "permits_total", "far", 1)]).toEqual([3, 2]);
    expect([of(m, "full_max_threads", "far", 0), of(m, "full_max_threads", "far", 1)]).toEqual([1, 1]);
    expect([of(m, "memory_limit_bytes", "far", 0), of(m, "memory_limit_bytes", "far", 1)]).toEqual([2_500_000_001, 2_500_000_000]);
    for (const res of await register(far, "far")) expect(res.status).toBe(204); // back to 2 + 2
  });
});

describe("fulls across two shards, placed by each decoder's full memory", () => {
  // A far-big full of about 2990 px wide reads the 3000² level whole: (2 × 9M read + 8.9M scaled
  // + 8.9M encoded) px × 3 ≈ 107 MB. Each shard may hold half of each decoder's full share.
  const FULL_MAX = 107_640_600;

  /** This page's per-decoder samples of the far region: `shard label` → value. */
  async function ofDecoders(name: "budget_bytes" | "reserved_bytes", page?: string): Promise<Map<string, number>> {
    const text = page ?? (await (await get("/metrics")).text());
    const values = new Map<string, number>();
    const sample = new RegExp(`^tessera_decode_memory_decoder_${name}\\{region="far",shard="(\\d+)",decoder="([^"]+)"\\} (\\S+)$`, "gm");
    for (const [, shard, label, value] of text.matchAll(sample)) values.set(`${shard} ${label}`, Number(value));
    return values;
  }

  it("refuses with 413, saying why, a full that fits a decoder's full share but not one shard's half of it", async () => {
    for (const url of far) expect((await heartbeat({ url, region: "far", capacity: 2, memoryBytes: 200_000_000 })).status).toBe(204);
    try {
      // Full shares of 150 MB, 75 MB a shard: the full fits the one, not the other.
      expect([...(await ofDecoders("budget_bytes")).values()]).toEqual([75_000_000, 75_000_000, 75_000_000, 75_000_000]);
      for (const id of ["far-big-a", "far-big-b"]) {
        const res = await get(full(id));
        expect(res.status, `${id} on shard ${shardOfId(id)}`).toBe(413);
        expect(res.headers.get("retry-after")).toBeNull();
        expect((await res.json<{ message: string }>()).message).toMatch(
          /more than the 75000000-byte full-image share of the largest decoder that this admission shard may use \(ADMISSION_SHARDS = 2 split each decoder's full-image memory between them\)$/,
        );
      }
    } finally {
      for (const res of await register(far, "far")) expect(res.status).toBe(204);
    }
  });

  it("never holds more on a decoder, summed over the shards, than its full share, and reports it per decoder truthfully", async () => {
    // Full shares of 225 MB, 112.5 MB a shard: one full a shard on each decoder, two on one in all.
    for (const url of far) expect((await heartbeat({ url, region: "far", capacity: 2, memoryBytes: 300_000_000 })).status).toBe(204);
    try {
      const farLabels = await Promise.all(far.map(labelOf));
      const pages: string[] = [];
      const flood = Promise.all(Array.from({ length: 8 }, (_, i) => get(full(["far-big-a", "far-big-b", "far-big-c", "far-big-d"][i % 4])).then(async (r) => (await r.arrayBuffer(), r.status))));
      let done = false;
      void flood.finally(() => (done = true));
      while (!done) {
        pages.push(await (await get("/metrics")).text());
        await scheduler.wait(50);
      }
      expect(await flood).toEqual(Array(8).fill(200));
      let peak = 0;
      for (const page of pages) {
        const budget = await ofDecoders("budget_bytes", page);
        const reserved = await ofDecoders("reserved_bytes", page);
        expect([...budget.values()]).toEqual([112_500_000, 112_500_000, 112_500_000, 112_500_000]);
        for (const label of farLabels) {
          const held = [0, 1].map((shard) => reserved.get(`${shard} ${label}`) ?? 0);
          held.forEach((bytes, shard) => expect(bytes).toBeLessThanOrEqual(budget.get(`${shard} ${label}`)!));
          expect(held[0] + held[1]).toBeLessThanOrEqual(225_000_000);
          peak = Math.max(peak, held[0] + held[1]);
        }
        // The shard's reserved bytes are exactly those it holds on its decoders.
        const m = new Map<string, number>();
        for (const line of page.split("\n")) {
          const sample = /^tessera_decode_memory_reserved_bytes\{region="far",shard="(\d)"\} (\S+)$/.exec(line);
          if (sample) m.set(sample[1], Number(sample[2]));
        }
        for (const shard of [0, 1]) expect(farLabels.reduce((sum, label) => sum + (reserved.get(`${shard} ${label}`) ?? 0), 0)).toBe(m.get(String(shard)));
      }
      expect(peak).toBeGreaterThan(FULL_MAX / 2); // fulls were held while sampled
    } finally {
      for (const res of await register(far, "far")) expect(res.status).toBe(204);
    }
  });
});

describe("a shard that throws (TEST_THROWING_SHARD, a binding only tests set)", () => {
  it("fails only the sources that hash to it; its region's other shard and every other region serve on", async () => {
    // The near decoders serve the region "broken" too: its heartbeat reaches shard 0 and not 1.
    const [beat] = await register([near[0]], "broken");
    expect(beat.status).toBe(503);
    expect((await beat.json<{ message: string }>()).message).toBe(`1 of 2 admission shards of region "broken" did not take the heartbeat`);

    await ok(tile("broken-a")); // shard 0
    const failed = await get(tile("broken-b")); // shard 1
    expect(failed.status).toBe(503);
    expect(failed.headers.get("retry-after")).toBe("1");
    await ok(tile("near-pattern"));
    await ok(tile("far-pattern"));

    const m = await metrics();
    expect(m.get("tessera_admission_shard_up broken/1")).toBe(0);
    for (const shard of ["broken/0", "near/0", "near/1", "far/0", "far/1", "spare/0", "spare/1"]) {
      expect(m.get(`tessera_admission_shard_up ${shard}`), shard).toBe(1);
    }
    expect(m.get("tessera_admission_permits_total broken/1")).toBeUndefined(); // it reported nothing
    expect(m.get("tessera_admission_decoders_live broken/0")).toBe(1);

    // An invalidation that cannot reach every region says which one, and can be sent again.
    const res = await get("/admin/sources/broken-b/invalidate", { method: "POST", headers: { authorization: `Bearer ${env.ADMIN_TOKEN}` } });
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({ error: "overloaded", message: expect.stringMatching(/^region "broken": admission is unavailable/) });
  });
});
