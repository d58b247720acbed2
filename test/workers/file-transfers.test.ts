// GET /iiif/3/{id}/file through the Worker and the admission DO, in front of a real decoder
// that works (test/support/workers-global-setup.ts): a transfer decodes nothing, so it holds no
// decode permit, has its own cap (MAX_FILE_TRANSFERS = 1 here), and a slow reader is not cut
// off by REQUEST_TIMEOUT (2 s here) once the bytes flow, while one slower than FILE_MIN_RATE is.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { get, heartbeat, metric } from "./helpers";

describe("file transfers", () => {
  it("stream past REQUEST_TIMEOUT to a slow reader, without a decode permit, under their own cap", async () => {
    expect((await heartbeat({ url: env.TEST_WORKING_DECODER_URL, capacity: 4 })).status).toBe(204);
    const res = await get("/iiif/3/noise/file");
    expect(res.status).toBe(200);
    const size = Number(res.headers.get("content-length"));
    expect(size).toBeGreaterThan(20_000_000);
    const reader = res.body!.getReader();
    let received = (await reader.read()).value!.byteLength;
    // Mid-transfer: a place under the transfer cap, no decode permit.
    expect([await metric("file_transfers"), await metric("permits_in_use")]).toEqual([1, 0]);
    const shed = await metric("file_transfers_shed_total");
    const refused = await get("/iiif/3/noise/file");
    expect(refused.status).toBe(503);
    expect(await metric("file_transfers_shed_total")).toBe(shed + 1);
    expect(refused.headers.get("retry-after")).toBe("1");
    expect(((await refused.json()) as { message: string }).message).toContain("1 file transfers in progress");
    // A decode is admitted meanwhile.
    const tile = await get("/iiif/3/slow/0,0,256,256/max/0/default.jpg");
    expect(tile.status).toBe(200);
    await tile.arrayBuffer();

    // Read slowly: the whole transfer lasts well past the 2 s REQUEST_TIMEOUT, no pause of 1 s or more.
    const started = Date.now();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      received += value.byteLength;
      if (Date.now() - started < 3000) await scheduler.wait(50);
    }
    expect(Date.now() - started).toBeGreaterThan(2500);
    expect(received).toBe(size);
    expect(await metric("file_transfers")).toBe(0);
  }, 30_000);

  it("cut a reader slower than FILE_MIN_RATE over a REQUEST_TIMEOUT window, so trickling clients cannot keep every place", async () => {
    expect((await heartbeat({ url: env.TEST_WORKING_DECODER_URL, capacity: 4 })).status).toBe(204);
    const res = await get("/iiif/3/noise/file");
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    const started = Date.now();
    let received = 0;
    let failed: unknown;
    // A chunk (some 4 kB) every 500 ms: well under FILE_MIN_RATE here.
    while (Date.now() - started < 10_000) {
      try {
        const { done, value } = await reader.read();
        if (done) break;
        received += value.byteLength;
      } catch (e) {
        failed = e;
        break;
      }
      await scheduler.wait(500);
    }
    expect(failed, `read ${received} bytes in ${Date.now() - started} ms`).toBeDefined();
    expect(Date.now() - started).toBeLessThan(8000); // within two windows and the first byte's wait
    await expect.poll(() => metric("file_transfers")).toBe(0);
  }, 30_000);
});
