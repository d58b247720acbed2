// The admission DO inside workerd, through the real Worker, in front of the real decoder frozen
// with SIGSTOP (every forwarded decode hangs): auto-sizing from heartbeats, the memory budget's
// 503 vs 413, identical decodes holding one permit, decoder expiry and retry, lease expiry by
// alarm, the mode fallback, /metrics.
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { AdmissionDO } from "../../edge/admission/admission-do";
import { infoKey } from "../../edge/source-info";
import { HttpError } from "../../shared/errors";
import { SIGNATURE_HEADER, signRequest } from "../../shared/protocol";
import { heartbeatTarget } from "../../shared/registration";
import { get, heartbeat, metric, settled, squareSource } from "./helpers";

const stub = () => env.ADMISSION.get(env.ADMISSION.idFromName("default"));

// A 4000×4000 RGB source the edge already knows (fake: no decoder answers info here).
// full/max: (2 × 16M read + 16M scaled + 16M encoded) px × 3 = 192 MB, more than full_mem (60 MB);
// full/pct:50 reads the 2000 px overview: 16M px × 3 = 48 MB, a full (≥ 32 MiB) that fits once.
const big = squareSource("big", [4000, 2000, 1000]);

beforeAll(async () => {
  await caches.default.put(infoKey({ id: "big" }), Response.json(big, { headers: { "cache-control": "max-age=600" } }));
});
beforeEach(async () => {
  await settled();
  // 16 permits and an 80 MB envelope, reported by the one live decoder (NTHREADS=MEMORY_LIMIT=0).
  expect((await heartbeat()).status).toBe(204);
});

describe("admission DO", () => {
  it("sizes itself from the live decoders' reports and exports every admission metric", async () => {
    const text = await (await get("/metrics")).text();
    for (const name of [
      "permits_in_use", "permits_total", "full_in_use", "tile_waiting", "full_waiting", "tile_shed_total",
      "full_shed_total", "full_shadow_rejected_total", "classifier_disagreement_total", "tile_min_threads",
      "full_max_threads", "tiles_thread_ratio", "tiles_memory_ratio", "memory_limit_bytes",
      "large_decode_threshold_bytes", "large_decode_threshold_work", "leases_expired_total",
    ]) {
      expect(text).toMatch(new RegExp(`^# TYPE tessera_admission_${name} (gauge|counter)$`, "m"));
    }
    for (const name of ["budget_bytes", "reserved_bytes", "rejected_total", "too_large_total", "shadow_rejected_total", "shadow_too_large_total"]) {
      expect(text).toMatch(new RegExp(`^tessera_decode_memory_${name} \\d+$`, "m"));
    }
    expect(text).toContain('tessera_admission_mode{mode="advanced",fallback="false"} 1');
    expect([await metric("permits_total"), await metric("tile_min_threads"), await metric("full_max_threads")]).toEqual([16, 8, 8]);
    expect(await metric("memory_limit_bytes")).toBe(80_000_000);
    expect(await metric("tessera_decode_memory_budget_bytes")).toBe(60_000_000);
  });

  it("refuses a full that can never fit with 413 and no Retry-After, before any decoder", async () => {
    const before = await metric("tessera_decode_memory_too_large_total");
    const res = await get("/iiif/3/big/full/max/0/default.jpg");
    expect(res.status).toBe(413);
    expect(res.headers.get("retry-after")).toBeNull();
    expect(await metric("tessera_decode_memory_too_large_total")).toBe(before + 1);
    expect(await metric("permits_in_use")).toBe(0);
  });

  it("sheds a full with 503 + Retry-After while the budget is in use, and gives the bytes back", async () => {
    const rejected = await metric("tessera_decode_memory_rejected_total");
    const first = get("/iiif/3/big/full/pct:50/0/default.jpg"); // hangs in the frozen decoder
    await scheduler.wait(200);
    expect(await metric("tessera_decode_memory_reserved_bytes")).toBe(48_000_000);
    expect(await metric("full_in_use")).toBe(1);
    // Another request of the same cost: the same one would wait for the first's answer (coalesced).
    const second = await get("/iiif/3/big/full/pct:50/0/default.png");
    expect(second.status).toBe(503);
    expect(second.headers.get("retry-after")).toBe("1");
    expect(await metric("tessera_decode_memory_rejected_total")).toBe(rejected + 1);
    expect((await first).status).toBe(408);
    // The client has its 408, but the frozen decoder's work never stopped: the bytes stay
    // admitted until the lease's alarm ends it (REQUEST_TIMEOUT + LEASE_GRACE, 1 s here), counted as expired.
    expect([await metric("tessera_decode_memory_reserved_bytes"), await metric("full_in_use")]).toEqual([48_000_000, 1]);
    const expired = await metric("leases_expired_total");
    await settled();
    expect([await metric("tessera_decode_memory_reserved_bytes"), await metric("full_in_use")]).toEqual([0, 0]);
    expect(await metric("leases_expired_total")).toBe(expired + 1);
  }, 15_000); // it waits out a deadline and a grace by design

  it("holds one permit for identical decodes at once; all get 408 at the first's deadline, and nothing stays held", async () => {
    const [timeouts, coalesced] = [await metric("request_timeouts_total"), await metric("coalesced_total")];
    const path = "/iiif/3/big/768,768,256,256/max/0/default.jpg";
    const first = get(path); // hangs in the frozen decoder
    await scheduler.wait(300);
    const started = Date.now();
    const followers = [get(path), get(path), get(path)];
    await scheduler.wait(200);
    expect([await metric("permits_in_use"), await metric("coalescing")]).toEqual([1, 1]);
    const answers = await Promise.all([first, ...followers]);
    expect(answers.map((r) => r.status)).toEqual([408, 408, 408, 408]);
    // Before the followers' own REQUEST_TIMEOUT (2 s from their arrival): the first's ended them.
    expect(Date.now() - started).toBeLessThan(1900);
    expect(await metric("request_timeouts_total")).toBe(timeouts + 1);
    expect(await metric("coalesced_total")).toBe(coalesced + 3);
    expect(await metric("coalescing")).toBe(0);
    await settled();
  });

  it("refuses with 413 a full that fits the decoders' summed budget but not the largest decoder's share", async () => {
    // (Before the next test, which registers the same silent decoder and waits for it to expire.)
    // Two decoders of 80 MB: full_mem 120 MB, each one's full share 60 MB. A 45° full/pct:50
    // reads the 2000 px overview and rotates it: (2 × 4M + 4M + 2 × 8M) px × 3 ≈ 84 MB.
    expect((await heartbeat({ url: "http://127.0.0.1:9", capacity: 16 })).status).toBe(204);
    expect(await metric("tessera_decode_memory_budget_bytes")).toBe(120_000_000);
    const before = await metric("tessera_decode_memory_too_large_total");
    const res = await get("/iiif/3/big/full/pct:50/45/default.jpg");
    expect(res.status).toBe(413);
    expect(((await res.json()) as { message: string }).message).toContain("60000000-byte full-image share of the largest decoder");
    expect(await metric("tessera_decode_memory_too_large_total")).toBe(before + 1);
    expect(await metric("permits_in_use")).toBe(0);
  });

  it("drops a decoder that stops heartbeating from the sums (DECODER_TTL = 3 s)", async () => {
    expect((await heartbeat({ url: "http://127.0.0.1:9", capacity: 4 })).status).toBe(204);
    expect([await metric("permits_total"), await metric("decoders_live")]).toEqual([20, 2]);
    await scheduler.wait(2000);
    await heartbeat(); // only the frozen decoder keeps beating
    await scheduler.wait(1100);
    expect([await metric("permits_total"), await metric("decoders_live")]).toEqual([16, 1]);
  });

  it("retries once on another decoder when the chosen one cannot be reached, and forgets it", async () => {
    const retries = await metric("decoder_retries_total");
    const busy = get("/iiif/3/big/0,0,256,256/max/0/default.jpg"); // the frozen decoder now has one in flight
    await scheduler.wait(200);
    // A decoder with nothing listening: the least loaded, so it is picked first.
    expect((await heartbeat({ url: "http://127.0.0.1:9", capacity: 16 })).status).toBe(204);
    const res = await get("/iiif/3/big/256,0,256,256/max/0/default.jpg");
    expect(res.status).toBe(408); // reached the (frozen) live decoder after the retry: not a 502
    expect(await metric("decoder_retries_total")).toBe(retries + 1);
    expect(await metric("decoders_live")).toBe(1);
    expect((await busy).status).toBe(408);
  });

  it("answers a decoder's 401 (its secret was rotated) as 502, never cached as the client's error", async () => {
    const busy = get("/iiif/3/big/0,512,256,256/max/0/default.jpg"); // the frozen decoder now has one in flight
    await scheduler.wait(200);
    // A real decoder holding another secret: it refuses every request the edge signs.
    expect((await heartbeat({ url: env.TEST_ROTATED_DECODER_URL, capacity: 16 })).status).toBe(204);
    for (const attempt of ["first", "second"]) {
      const res = await get("/iiif/3/big/512,512,256,256/max/0/default.jpg");
      expect(res.status, attempt).toBe(502);
      expect(res.headers.get("cache-control"), attempt).toBe("no-store");
      expect(res.headers.get("x-tessera-cache"), attempt).toBeNull(); // not stored, so never a hit
      expect(await res.text(), attempt).not.toContain(env.TEST_ROTATED_DECODER_URL);
    }
    expect((await busy).status).toBe(408);
  });

  // (In this test runner workerd logs the reset as "Uncaught (in promise) Network connection
  // lost" although the DO catches the rejection; the same caught fetch logs nothing in plain
  // Miniflare, where the e2e tests run the stack.)
  it("never sends a request again after it reached a decoder that then died: 502, no retry", async () => {
    const retries = await metric("decoder_retries_total");
    const busy = get("/iiif/3/big/0,256,256,256/max/0/default.jpg"); // the frozen decoder now has one in flight
    await scheduler.wait(200);
    // Accepts the request, then resets the connection: the least loaded, so it is picked first.
    expect((await heartbeat({ url: env.TEST_DROPPING_DECODER_URL, capacity: 16 })).status).toBe(204);
    const started = Date.now();
    const res = await get("/iiif/3/big/256,256,256,256/max/0/default.jpg");
    expect(res.status).toBe(502); // not a 408 from the frozen decoder: it was never sent there
    expect(await res.text()).not.toContain(env.TEST_DROPPING_DECODER_URL);
    expect(Date.now() - started).toBeLessThan(1500);
    expect(await metric("decoder_retries_total")).toBe(retries);
    expect(await metric("permits_in_use")).toBe(1); // only the busy one's
    expect((await busy).status).toBe(408);
  });

  it("reclaims a lease whose holder never releases it, by alarm, and counts it", async () => {
    const expired = await metric("leases_expired_total");
    // Fake: a holder that loses its release (the DO's own paths always release; only a bug could not).
    await runInDurableObject(stub(), async (instance: AdmissionDO) => {
      await instance.lease("tile", 0, new AbortController().signal);
    });
    expect(await metric("permits_in_use")).toBe(1);
    await scheduler.wait(3100); // REQUEST_TIMEOUT (2 s) + the lease grace (1 s)
    await heartbeat();
    await runDurableObjectAlarm(stub()); // runs it now unless Miniflare already has
    expect(await metric("decoders_live")).toBe(1);
    expect(await metric("permits_in_use")).toBe(0);
    expect(await metric("leases_expired_total")).toBe(expired + 1);
  });

  it("answers 503 + Retry-After, not 502, when the DO fails under a request (here: it is reset)", async () => {
    // Reset while the request hangs in the frozen decoder, within its 2 s REQUEST_TIMEOUT; on a
    // machine busy with the whole suite the reset can come after it (a 408), and is tried again.
    let res: Response | undefined;
    for (let attempt = 0; attempt < 3 && (res === undefined || res.status === 408); attempt++) {
      const pending = get(`/iiif/3/big/${512 + 256 * attempt},0,256,256/max/0/default.jpg`);
      await scheduler.wait(200);
      // abort() also fails the call that made it
      await runInDurableObject(stub(), (_instance: AdmissionDO, state) => state.abort("reset under load")).catch(() => {});
      res = await pending;
      if (res.status === 408) await heartbeat();
    }
    expect(res!.status).toBe(503);
    expect(res!.headers.get("retry-after")).toBe("1");
    expect(res!.headers.get("cache-control")).toBe("no-store");
    await heartbeat(); // the new instance knows no decoder until the next heartbeat
  }, 15_000);

  it("gives back the grant when arming the lease alarm fails, and arms it on the next lease", async () => {
    await runInDurableObject(stub(), async (_instance: AdmissionDO, state) => {
      await state.storage.deleteAlarm();
      const fresh = new AdmissionDO(state, env); // no alarm armed yet
      fresh.decoders.heartbeat({ url: env.TEST_DECODER_URL, capacity: 4, memoryBytes: 1000 }, Date.now());
      const setAlarm = vi.spyOn(state.storage, "setAlarm").mockRejectedValueOnce(new Error("storage unavailable"));
      const failed = (await fresh.lease("tile", 0, new AbortController().signal).catch((e) => e)) as HttpError;
      expect([failed.status, failed.retryAfterSeconds]).toEqual([503, 1]);
      expect(fresh.model.global.inUse).toBe(0);
      const lease = await fresh.lease("tile", 0, new AbortController().signal);
      expect(setAlarm).toHaveBeenCalledTimes(2);
      expect(await state.storage.getAlarm()).not.toBeNull();
      lease.release();
      setAlarm.mockRestore();
      await state.storage.deleteAlarm();
    });
  });

  it("runs an unrecognized ADMISSION_MODE as basic, with a log line and the mode gauge", async () => {
    const log = vi.spyOn(console, "log").mockImplementation(() => {});
    await runInDurableObject(stub(), async (_instance: AdmissionDO, state) => {
      const legacy = new AdmissionDO(state, { ...env, ADMISSION_MODE: "enforce" });
      const text = await (await legacy.fetch(new Request("https://admission/__admission/metrics"))).text();
      expect(text).toContain('tessera_admission_mode{mode="basic",fallback="true"} 1');
      expect(text).toContain('tessera_admission_mode{mode="advanced",fallback="true"} 0');
    });
    expect(log.mock.calls.some(([line]) => /ADMISSION_MODE.*enforce.*running in basic mode/.test(String(line)))).toBe(true);
    log.mockRestore();
  });
});

describe("decoder heartbeat route", () => {
  it("refuses unsigned heartbeats, and bodies that do not match the signed digest", async () => {
    const body = JSON.stringify({ url: "http://evil.example", capacity: 99, memoryBytes: 1 });
    const target = await heartbeatTarget(body);
    expect((await get(target, { method: "POST", body })).status).toBe(401);
    const signed = await signRequest(env.DECODER_SECRET, "POST", target);
    const other = JSON.stringify({ url: "http://evil.example", capacity: 98, memoryBytes: 1 });
    expect((await get(target, { method: "POST", body: other, headers: { [SIGNATURE_HEADER]: signed } })).status).toBe(401);
    expect((await heartbeat({ capacity: 0 })).status).toBe(400);
    expect(await metric("decoders_live")).toBe(1);
  });

  it("cuts off a body that trickles past BODY_READ_TIMEOUT with 408", async () => {
    const target = await heartbeatTarget("{}");
    const stalled = new ReadableStream({
      start(c) {
        c.enqueue(new TextEncoder().encode("{"));
      }, // and never closes
    });
    const started = Date.now();
    const res = await get(target, {
      method: "POST",
      body: stalled,
      headers: { [SIGNATURE_HEADER]: await signRequest(env.DECODER_SECRET, "POST", target) },
      duplex: "half",
    } as RequestInit);
    expect(res.status).toBe(408);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
  });
});
