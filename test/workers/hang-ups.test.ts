// Clients that ask for a whole picture and hang up while it renders, in front of a real decoder
// that works (test/support/workers-global-setup.ts), over a 1000² picture. A render already inside libvips cannot be
// stopped, so admission must stay with it until it ends: the decoders' own count of fulls running
// at once never passes full_max. (Disconnects emulated at the Worker's entry: Miniflare's HTTP
// entry does not pass a client's disconnect on, Cloudflare does.)
import { env } from "cloudflare:workers";
import { describe, expect, it, onTestFinished } from "vitest";
import { get, heartbeat, metric, settled } from "./helpers";

const decoder = () => env.TEST_WORKING_DECODER_URL;
// Upscaled to 1500 px and rotated by 30°: an estimate above the 32 MiB full threshold and a few
// hundred milliseconds of libvips. Each request a different size, so none is an edge-cache hit.
let sizes = 1500;
const full = () => `/iiif/3/slow/full/%5E${sizes++},/30/default.jpg`;

async function decoderMetric(name: string): Promise<number> {
  const text = await (await fetch(`${decoder()}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(name + " "));
  return Number(line?.split(" ")[1] ?? 0);
}

describe("clients that hang up on a full", () => {
  it("never get more than full_max fulls running at once on the decoder; admission is held until each render ends", async () => {
    // Capacity 4 at the default TILES_THREAD_RATIO of 0.5: tile_min 2, full_max 2; reported
    // every second, as a live decoder does (DECODER_TTL is 3 s here).
    const report = () => heartbeat({ url: decoder(), capacity: 4, memoryBytes: 4_000_000_000 });
    expect((await report()).status).toBe(204);
    const beating = setInterval(() => void report(), 1000);
    onTestFinished(() => clearInterval(beating));
    expect(await metric("full_max_threads")).toBe(2);
    const warm = await get(full()); // opens the source; its blocks stay decoded
    expect(warm.status).toBe(200);
    await warm.arrayBuffer();
    const cancelled = await decoderMetric('tessera_decoder_rejected_total{reason="cancelled"}');

    const until = Date.now() + 4000;
    const lane = async () => {
      while (Date.now() < until) {
        const client = new AbortController();
        const asked = get(full(), { signal: client.signal }).then((r) => r.arrayBuffer(), () => undefined);
        await scheduler.wait(300);
        client.abort();
        await asked.catch(() => {});
      }
    };
    await Promise.all(Array.from({ length: 6 }, lane));
    await settled(8000);

    expect(await decoderMetric('tessera_decoder_decodes_running_max{partition="full"}')).toBeLessThanOrEqual(2);
    expect(await decoderMetric('tessera_decoder_decodes_running{partition="full"}')).toBe(0);
    // The hang-ups reached the decoder as cancels, and nothing expired: each lease ended with its work.
    expect(await decoderMetric('tessera_decoder_rejected_total{reason="cancelled"}')).toBeGreaterThan(cancelled);
    expect(await metric("leases_expired_total")).toBe(0);
    expect(await decoderMetric("tessera_decoder_work_budget_used_bytes")).toBe(0);
  }, 30_000);
});
