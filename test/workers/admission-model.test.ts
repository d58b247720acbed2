// The two-partition admission model (edge/admission/model.ts) inside workerd, driven directly:
// the specification's worked examples, FIFO order, the tile floor, the memory budget, basic mode.
import { describe, expect, it } from "vitest";
import { admissionConfig, fullMemory, partitions } from "../../shared/admission-config";
import { HttpError } from "../../shared/errors";
import { shardShare } from "../../shared/regions";
import { DecoderRegistry } from "../../edge/admission/decoders";
import { AdmissionModel, type Grant, type ModelSettings } from "../../edge/admission/model";

const MiB = 1024 * 1024;
const never = new AbortController().signal;

const settings = (overrides: Partial<ModelSettings> = {}): ModelSettings => ({
  mode: "advanced",
  tilesThreadRatio: 0.5,
  tilesMemoryRatio: 0.25,
  fullMaxWaiting: 16,
  shards: 1,
  ...overrides,
});

/** Decoders as heartbeats report them, this DO being `shard` of `shards`. */
function registry(reports: { url: string; capacity: number; memoryBytes: number }[], shard = 0, shards = 1, ratio = 0.25): DecoderRegistry {
  const r = new DecoderRegistry(60_000, (memoryBytes) => shardShare(fullMemory(memoryBytes, ratio), shard, shards));
  for (const report of reports) r.heartbeat(report, Date.now());
  return r;
}

/** A model of n permits and `memory`, before one decoder that reports them. */
function model(overrides: Partial<ModelSettings> = {}, n = 16, memory = 1024 * MiB): AdmissionModel {
  const s = settings(overrides);
  const m = new AdmissionModel(s, registry([{ url: "http://decoder", capacity: Math.max(n, 1), memoryBytes: memory }], 0, 1, s.tilesMemoryRatio));
  m.resize(n, memory);
  return m;
}
const admitMany = (m: AdmissionModel, partition: "tile" | "full", count: number, bytes = 40 * MiB) =>
  Promise.all(Array.from({ length: count }, () => m.admit(partition, bytes, 1000, never)));
async function status(p: Promise<unknown>): Promise<number | "admitted"> {
  try {
    await p;
    return "admitted";
  } catch (e) {
    return (e as HttpError).status;
  }
}

describe("two-partition admission model", () => {
  it("splits 16 threads at ratio 0.5 into 8 tile_min / 8 full_max, rounding without a clamp", () => {
    expect(partitions(16, 0.5)).toEqual({ tileMin: 8, fullMax: 8 });
    expect(partitions(2, 0)).toEqual({ tileMin: 0, fullMax: 2 });
    expect(partitions(2, 1)).toEqual({ tileMin: 2, fullMax: 0 });
    expect(partitions(4, 0.25)).toEqual({ tileMin: 1, fullMax: 3 });
    expect(partitions(1, 0.5)).toEqual({ tileMin: 1, fullMax: 0 });
    expect(partitions(0, 0.5)).toEqual({ tileMin: 0, fullMax: 0 });
    const m = model();
    expect([m.tileMin, m.fullMax, m.fullMem]).toEqual([8, 8, 768 * MiB]);
  });

  it("admits nothing with n = 0: both partitions are shed at once with 503 + Retry-After", async () => {
    for (const mode of ["advanced", "basic"] as const) {
      const m = model({ mode }, 0);
      for (const partition of ["tile", "full"] as const) {
        const started = Date.now();
        const err = (await m.admit(partition, 40 * MiB, 1000, never).catch((e) => e)) as HttpError;
        expect([err.status, err.retryAfterSeconds]).toEqual([503, 1]);
        expect(Date.now() - started).toBeLessThan(500);
      }
      expect([m.counters.tileShed, m.counters.fullShed, m.global.inUse]).toEqual([1, 1, 0]);
    }
    // Auto-sized with no decoder, the budget is 0 too: that is transient, not "can never fit".
    const empty = model({}, 0, 0);
    expect(await status(empty.admit("full", 40 * MiB, 1000, never))).toBe(503);
    expect(empty.counters.memoryTooLarge).toBe(0);
  });

  it("with TILES_THREAD_RATIO 1 (full_max 0) sheds every full at once and gives tiles all n", async () => {
    const m = model({ tilesThreadRatio: 1 }, 4);
    expect(await status(m.admit("full", 40 * MiB, 1000, never))).toBe(503);
    expect(m.counters.fullShed).toBe(1);
    await admitMany(m, "tile", 4);
    expect(m.global.inUse).toBe(4);
  });

  it("with TILES_THREAD_RATIO 0 (tile_min 0) lets fulls take every permit", async () => {
    const m = model({ tilesThreadRatio: 0 }, 4);
    await admitMany(m, "full", 4, 10 * MiB);
    expect([m.global.inUse, m.fullInUse]).toEqual([4, 4]);
  });

  it("refuses every full with 413 when full_mem is 0 (it can never fit), not an endless 503", async () => {
    const m = model({ tilesMemoryRatio: 1 }, 16);
    expect(m.fullMem).toBe(0);
    const err = (await m.admit("full", 40 * MiB, 1000, never).catch((e) => e)) as HttpError;
    expect([err.status, err.retryAfterSeconds]).toEqual([413, undefined]);
    expect(m.counters.memoryTooLarge).toBe(1);
    expect(await status(m.admit("tile", 0, 1000, never))).toBe("admitted");
  });

  it("lets a 9th tile burst into idle full capacity (tiles may take all 16)", async () => {
    const m = model();
    await admitMany(m, "tile", 16);
    expect(m.global.inUse).toBe(16);
    expect(await status(m.admit("tile", 0, 50, never))).toBe(503);
    expect(m.counters.tileShed).toBe(1);
  });

  it("refuses a 9th full with tiles idle: at once past FULL_MAX_WAITING, else after the queue timeout", async () => {
    const m = model({ fullMaxWaiting: 0 });
    await admitMany(m, "full", 8, 10 * MiB);
    expect(await status(m.admit("full", 10 * MiB, 1000, never))).toBe(503);
    expect([m.global.inUse, m.counters.fullShed, m.fullWaiting]).toEqual([8, 1, 0]);

    const waiting = model({ fullMaxWaiting: 4 });
    await admitMany(waiting, "full", 8, 10 * MiB);
    const started = Date.now();
    expect(await status(waiting.admit("full", 10 * MiB, 300, never))).toBe(503);
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    expect(waiting.counters.fullShed).toBe(1);
  });

  it("keeps tile_min permits for tiles while full_max fulls run (the tile floor)", async () => {
    const m = model();
    const fulls = await admitMany(m, "full", 8, 10 * MiB);
    await admitMany(m, "tile", 8);
    expect(m.global.inUse).toBe(16);
    fulls[0].release();
    // The freed permit goes to the next tile, never to a 9th full: the full partition is at cap.
    const ninthFull = m.admit("full", 10 * MiB, 1000, never);
    const tile = await m.admit("tile", 0, 1000, never);
    // full_in_use counts every held full-partition permit: the 9th holds one while it waits.
    expect([m.fullInUse, m.full.inUse, m.fullWaiting]).toEqual([8, 8, 1]);
    tile.release();
    await ninthFull;
    expect(m.fullInUse).toBe(8);
  });

  it("serves waiters in arrival order (FIFO), tiles never shed for full-partition pressure", async () => {
    const m = model({}, 2);
    const held = await admitMany(m, "tile", 2);
    const order: number[] = [];
    const waiters = [0, 1, 2].map((i) => m.admit("tile", 0, 2000, never).then((g) => (order.push(i), g)));
    expect(m.tileWaiting).toBe(3);
    held[0].release();
    held[1].release();
    const granted = await Promise.all(waiters.slice(0, 2));
    granted[0].release();
    await waiters[2];
    expect(order).toEqual([0, 1, 2]);
    expect(m.counters.tileShed + m.counters.fullShed).toBe(0);
  });

  it("answers 503 + Retry-After when the budget is transiently full, 413 without it when one request can never fit", async () => {
    const m = model({}, 16, 100 * MiB); // full_mem = 75 MiB
    const first = await m.admit("full", 40 * MiB, 1000, never);
    const busy = await m.admit("full", 40 * MiB, 1000, never).catch((e: HttpError) => e);
    expect(busy).toBeInstanceOf(HttpError);
    expect([(busy as HttpError).status, (busy as HttpError).retryAfterSeconds]).toEqual([503, 1]);
    const huge = await m.admit("full", 76 * MiB, 1000, never).catch((e: HttpError) => e);
    expect([(huge as HttpError).status, (huge as HttpError).retryAfterSeconds]).toEqual([413, undefined]);
    expect([m.counters.memoryRejected, m.counters.memoryTooLarge]).toEqual([1, 1]);
    // A refused full holds nothing; a released one gives its bytes back.
    expect([m.global.inUse, m.full.inUse, m.reservedBytes]).toEqual([1, 1, 40 * MiB]);
    first.release();
    first.release(); // idempotent
    expect([m.global.inUse, m.full.inUse, m.reservedBytes, m.fullInUse]).toEqual([0, 0, 0, 0]);
    await m.admit("full", 40 * MiB, 1000, never);
  });

  it("in basic mode admits what advanced would shed and shadow-counts only that", async () => {
    const m = model({ mode: "basic" }, 16, 100 * MiB);
    const grants: Grant[] = await admitMany(m, "full", 9, 40 * MiB);
    expect(m.fullInUse).toBe(9);
    // The 9th was admitted with full_max (8) fulls running: advanced would not have run it.
    expect(m.counters.fullShadowRejected).toBe(1);
    // Of the first eight, advanced would hold the first 40 MiB of its 75 and refuse the rest.
    expect(m.counters.memoryShadowRejected).toBe(7);
    // Too large is counted as too large only, not also as over the cap or the budget.
    await m.admit("full", 200 * MiB, 1000, never);
    expect([m.counters.memoryShadowTooLarge, m.counters.fullShadowRejected, m.counters.memoryShadowRejected]).toEqual([1, 1, 7]);
    expect([m.counters.fullShed, m.counters.memoryRejected, m.counters.memoryTooLarge]).toEqual([0, 0, 0]);
    // The basic tier (the global cap) is still enforced.
    await admitMany(m, "tile", 6);
    expect(await status(m.admit("tile", 0, 50, never))).toBe(503);
    grants.forEach((g) => g.release());
  });

  it("in basic mode counts every full admitted while full_in_use ≥ full_max, whatever FULL_MAX_WAITING", async () => {
    // Advanced would have held the 9th and 10th back (queued or shed), never run them beside 8.
    const m = model({ mode: "basic", fullMaxWaiting: 16 }, 16, 1024 * MiB);
    const grants = await admitMany(m, "full", 8, 10 * MiB);
    expect(m.counters.fullShadowRejected).toBe(0);
    await admitMany(m, "full", 2, 10 * MiB);
    expect(m.counters.fullShadowRejected).toBe(2);
    expect(m.counters.memoryShadowRejected).toBe(0);
    // Below full_max again, a full is one advanced would run.
    grants.slice(0, 3).forEach((g) => g.release());
    await m.admit("full", 10 * MiB, 1000, never);
    expect(m.counters.fullShadowRejected).toBe(2);
  });

  it("in basic mode measures the memory shadow against what advanced would hold, not all it admitted", async () => {
    const m = model({ mode: "basic" }, 16, 100 * MiB); // full_mem 75 MiB
    const first = await m.admit("full", 40 * MiB, 1000, never);
    const second = await m.admit("full", 40 * MiB, 1000, never); // advanced: 503, holds nothing
    expect(m.counters.memoryShadowRejected).toBe(1);
    first.release();
    // Advanced would now hold nothing: 40 MiB fits its budget, though basic still runs the second.
    await m.admit("full", 40 * MiB, 1000, never);
    expect(m.counters.memoryShadowRejected).toBe(1);
    second.release();
  });

  it("frees a waiter's place when its client goes away", async () => {
    const m = model({}, 2);
    await admitMany(m, "tile", 2);
    const client = new AbortController();
    const waiting = status(m.admit("tile", 0, 5000, client.signal));
    expect(m.tileWaiting).toBe(1);
    client.abort(new Error("gone"));
    expect(await waiting).toBe(undefined); // not an HttpError: nothing was shed
    expect([m.tileWaiting, m.counters.tileShed]).toEqual([0, 0]);
  });

  it("follows the decoders when auto-sized: a smaller pool drains, a larger one grants waiters", async () => {
    const m = model({}, 2);
    const held = await admitMany(m, "tile", 2);
    const waiter = m.admit("tile", 0, 2000, never);
    m.resize(3, 1024 * MiB);
    await waiter;
    m.resize(1, 1024 * MiB);
    held.forEach((g) => g.release());
    expect(m.global.inUse).toBe(1);
    expect(await status(m.admit("tile", 0, 50, never))).toBe(503);
  });
});

describe("fulls placed by each decoder's full memory", () => {
  /** Two decoders of these memory limits, 8 permits each, this model being `shard` of `shards`. */
  function placed(memory: [number, number], overrides: Partial<ModelSettings> = {}, shard = 0): { m: AdmissionModel; r: DecoderRegistry } {
    const s = settings(overrides);
    const r = registry(memory.map((memoryBytes, i) => ({ url: `http://d${i}`, capacity: 8, memoryBytes })), shard, s.shards, s.tilesMemoryRatio);
    const m = new AdmissionModel(s, r);
    const { capacity, memoryBytes, largestFullShare } = r.totals(Date.now());
    m.resize(shardShare(capacity, shard, s.shards), shardShare(memoryBytes, shard, s.shards), largestFullShare);
    return { m, r };
  }
  const heldOn = (r: DecoderRegistry) => Object.fromEntries(r.memory(Date.now()).map((d) => [d.url, d.reservedBytes]));

  it("holds each full on a decoder whose share has room, and sheds one that fits the sum but no decoder", async () => {
    const { m, r } = placed([120 * MiB, 120 * MiB]); // shares of 90 MiB, full_mem 180 MiB
    const [first, second] = await admitMany(m, "full", 2, 48 * MiB);
    expect(new Set([first.decoder!.url, second.decoder!.url]).size).toBe(2);
    expect(heldOn(r)).toEqual({ "http://d0": 48 * MiB, "http://d1": 48 * MiB });
    const third = (await m.admit("full", 48 * MiB, 1000, never).catch((e) => e)) as HttpError;
    expect([third.status, third.retryAfterSeconds, third.message]).toEqual([503, 1, "no decoder has room for this full-image decode's memory now; retry shortly"]);
    expect([m.counters.memoryRejected, m.reservedBytes, m.global.inUse, m.full.inUse]).toEqual([1, 96 * MiB, 2, 2]);
    // A smaller full still fits beside one of them; released, the bytes leave their decoder.
    const small = await m.admit("full", 40 * MiB, 1000, never);
    expect(heldOn(r)[small.decoder!.url]).toBe(88 * MiB);
    [first, second, small].forEach((g) => g.release());
    expect([heldOn(r), m.reservedBytes]).toEqual([{ "http://d0": 0, "http://d1": 0 }, 0]);
  });

  it("moves a full's bytes with it when its decoder goes, and finds none when no other has room", async () => {
    const { m, r } = placed([120 * MiB, 120 * MiB]);
    const [first, second] = await admitMany(m, "full", 2, 48 * MiB);
    const other = second.decoder!.url;
    r.forget(first.decoder!.url); // unreachable, or draining
    expect(first.moveOn()).toBeUndefined(); // the other has 42 MiB of its 90 left
    expect(heldOn(r)).toEqual({ [other]: 48 * MiB });
    second.release();
    expect(first.moveOn()!.url).toBe(other);
    expect([heldOn(r), m.reservedBytes]).toEqual([{ [other]: 48 * MiB }, 48 * MiB]);
    first.release();
    expect([heldOn(r), m.reservedBytes]).toEqual([{ [other]: 0 }, 0]);
  });

  it("in basic mode runs a full no decoder has room for on the least loaded, shadow-counted, and keeps measuring against what advanced would hold", async () => {
    const { m, r } = placed([100 * MiB, 50 * MiB], { mode: "basic" }); // shares of 75 and 37.5 MiB
    const first = await m.admit("full", 48 * MiB, 1000, never); // advanced: on d0
    expect([first.decoder!.url, m.counters.memoryShadowRejected]).toEqual(["http://d0", 0]);
    const second = await m.admit("full", 48 * MiB, 1000, never); // advanced: 503; basic runs it on idle d1
    expect([second.decoder!.url, m.counters.memoryShadowRejected]).toEqual(["http://d1", 1]);
    expect(heldOn(r)).toEqual({ "http://d0": 48 * MiB, "http://d1": 48 * MiB });
    first.release();
    // d0 is free again for what advanced would hold, though basic still runs the second on d1.
    const third = await m.admit("full", 48 * MiB, 1000, never);
    expect([third.decoder!.url, m.counters.memoryShadowRejected, m.counters.memoryRejected]).toEqual(["http://d0", 1, 0]);
  });

  it("gives each of two shards half of each decoder's full memory: summed, no decoder is over-committed", async () => {
    // Decoders of 128 MiB: full shares of 96 MiB, 48 MiB a shard.
    const shards = [0, 1].map((shard) => placed([128 * MiB, 128 * MiB], { shards: 2 }, shard));
    const grants = await Promise.all(shards.map(({ m }) => admitMany(m, "full", 2, 48 * MiB)));
    for (const { m } of shards) {
      expect(await status(m.admit("full", 40 * MiB, 1000, never))).toBe(503);
      expect([m.fullMem, m.reservedBytes, m.counters.memoryRejected]).toEqual([96 * MiB, 96 * MiB, 1]);
    }
    for (const url of ["http://d0", "http://d1"]) {
      expect(shards.reduce((sum, { r }) => sum + heldOn(r)[url], 0)).toBe(96 * MiB);
    }
    grants.flat().forEach((g) => g.release());
    // One larger than a shard's share of any decoder can never be placed: 413, saying why.
    const huge = (await shards[0].m.admit("full", 49 * MiB, 1000, never).catch((e) => e)) as HttpError;
    expect([huge.status, huge.retryAfterSeconds]).toEqual([413, undefined]);
    expect(huge.message).toBe(
      `this request needs an estimated ${49 * MiB} bytes to decode, more than the ${48 * MiB}-byte full-image share of the largest decoder that this admission shard may use (ADMISSION_SHARDS = 2 split each decoder's full-image memory between them)`,
    );
  });
});

describe("admission configuration", () => {
  it("has the specified defaults and falls back to basic on an unrecognized mode", () => {
    const c = admissionConfig({});
    expect([c.nthreads, c.tilesThreadRatio, c.memoryLimit, c.tilesMemoryRatio, c.mode]).toEqual([0, 0.5, 0, 0.25, "advanced"]);
    expect([c.largeDecodeThresholdBytes, c.requestTimeoutMs, c.bodyReadTimeoutMs]).toEqual([33554432, 60000, 10000]);
    expect(admissionConfig({ ADMISSION_MODE: "enforce" })).toMatchObject({ mode: "basic", unrecognizedMode: "enforce" });
  });

  it("fails loudly on a bad value, naming the variable", () => {
    expect(() => admissionConfig({ TILES_THREAD_RATIO: "1.5" })).toThrow(/TILES_THREAD_RATIO must be a number from 0 to 1/);
    expect(() => admissionConfig({ MEMORY_LIMIT: "4G" })).toThrow(/MEMORY_LIMIT must be a whole number/);
    expect(() => admissionConfig({ REQUEST_TIMEOUT: "5", QUEUE_TIMEOUT: "10" })).toThrow(/REQUEST_TIMEOUT must exceed/);
    // Past the longest deadline a decoder accepts: every signed request would be refused.
    expect(() => admissionConfig({ REQUEST_TIMEOUT: "601" })).toThrow(/REQUEST_TIMEOUT must be a whole number from 1 to 600/);
    expect(admissionConfig({ REQUEST_TIMEOUT: "600" }).requestTimeoutMs).toBe(600_000);
  });
});

describe("decoder routing", () => {
  const report = (url: string, capacity = 2) => ({ url, capacity, memoryBytes: 1 });

  it("picks the least loaded live decoder, shares an idle fleet, and skips expired ones", () => {
    const r = new DecoderRegistry(1000, (memoryBytes) => memoryBytes);
    r.heartbeat(report("http://a"), 0);
    r.heartbeat(report("http://b"), 0);
    expect([r.pick(10)!.url, r.pick(10)!.url, r.pick(10)!.url]).toEqual(["http://a", "http://b", "http://a"]);
    r.pick(10)!.inFlight = 1; // b
    expect(r.pick(10)!.url).toBe("http://a");
    r.heartbeat(report("http://a"), 900);
    expect(r.pick(1500)!.url).toBe("http://a"); // b's last heartbeat is too old
    expect(r.totals(1500)).toEqual({ capacity: 2, memoryBytes: 1, largestFullShare: 1 });
  });

  it("sends tiles away from a decoder busy with a full while another has room", () => {
    const r = new DecoderRegistry(1000, (memoryBytes) => memoryBytes);
    r.heartbeat(report("http://a"), 0);
    r.heartbeat(report("http://b"), 0);
    const a = r.pick(1)!;
    a.inFlight = 1;
    a.fullsInFlight = 1;
    const b = r.pick(1)!;
    expect(b.url).toBe("http://b");
    b.inFlight = 2; // b now at capacity with tiles, a at capacity with its full plus one
    expect(r.pick(1)!.url).toBe("http://b");
  });
});
