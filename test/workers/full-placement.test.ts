// Fulls placed by memory on two real decoders, both frozen with SIGSTOP so that each full they
// take stays there (408 at REQUEST_TIMEOUT, its bytes held until the lease's alarm): a full goes
// only to a decoder whose own full share, memory × (1 − TILES_MEMORY_RATIO), has room for its
// estimate beside the fulls already there; when none has, it is shed as the budget sheds.
import { env } from "cloudflare:workers";
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import { cacheSourceInfo, get, heartbeat, labelOf, metric, settled, squareSource } from "./helpers";

const [a, b] = [env.TEST_DECODER_URL, env.TEST_SECOND_FROZEN_DECODER_URL];

// A 4000² RGB source the edge already knows: full/pct:50 reads its 2000 px overview,
// (2 × 4M read + 4M scaled + 4M encoded) px × 3 = 48 MB, a full; so in every format below.
const pct50 = (format: string) => `/iiif/3/big/full/pct:50/0/default.${format}`;
const FULL = 48_000_000;

/** A per-decoder sample of /metrics: `name{decoder="label"} value`. */
async function ofDecoder(name: string, url: string): Promise<number> {
  const text = await (await get("/metrics")).text();
  const prefix = `tessera_decode_memory_decoder_${name}{decoder="${await labelOf(url)}"} `;
  const line = text.split("\n").find((l) => l.startsWith(prefix));
  if (line === undefined) throw new Error(`no ${name} for ${url} on /metrics`);
  return Number(line.split(" ")[1]);
}

/** Registers both frozen decoders through the real heartbeat route, with these memory limits. */
async function register(memoryA: number, memoryB: number): Promise<void> {
  for (const [url, memoryBytes] of [[a, memoryA], [b, memoryB]] as const) {
    expect((await heartbeat({ url, capacity: 4, memoryBytes })).status).toBe(204);
  }
}

/** Sends fulls one after another (each reaches its decoder before the next is admitted). */
async function hung(paths: string[]): Promise<Promise<Response>[]> {
  const pending: Promise<Response>[] = [];
  for (const path of paths) {
    pending.push(get(path));
    await scheduler.wait(200);
  }
  return pending;
}

beforeAll(() => cacheSourceInfo(squareSource("big", [4000, 2000, 1000])));
beforeEach(() => settled(6000));

describe("fulls placed by each decoder's own full share", () => {
  it("puts two fulls that fit one decoder's share each, not both, on different decoders, and sheds a third", async () => {
    await register(120_000_000, 120_000_000); // full shares of 90 MB each, 180 MB summed
    expect([await ofDecoder("budget_bytes", a), await ofDecoder("budget_bytes", b)]).toEqual([90_000_000, 90_000_000]);
    const rejected = await metric("tessera_decode_memory_rejected_total");
    const held = await hung([pct50("jpg"), pct50("png")]);
    expect([await ofDecoder("reserved_bytes", a), await ofDecoder("reserved_bytes", b)]).toEqual([FULL, FULL]);
    // The page may be open to anyone: it names each decoder by its label, never by its address.
    const page = await (await get("/metrics")).text();
    for (const url of [a, b]) expect(page.includes(new URL(url).host)).toBe(false);
    // 144 MB would fit the summed budget, but no decoder has 48 MB of its 90 left.
    const third = await get(pct50("webp"));
    expect(third.status).toBe(503);
    expect(third.headers.get("retry-after")).toBe("1");
    expect(((await third.json()) as { message: string }).message).toMatch(/no decoder has room/);
    expect(await metric("tessera_decode_memory_rejected_total")).toBe(rejected + 1);
    expect(await metric("tessera_decode_memory_reserved_bytes")).toBe(2 * FULL);
    expect((await Promise.all(held)).map((r) => r.status)).toEqual([408, 408]);
  }, 15_000);

  it("never places a full on a decoder whose share it does not fit, however idle: the next is shed instead", async () => {
    await register(100_000_000, 50_000_000); // shares of 75 MB and 37.5 MB: only a fits a 48 MB full
    const held = await hung([pct50("jpg")]);
    expect([await ofDecoder("reserved_bytes", a), await ofDecoder("reserved_bytes", b)]).toEqual([FULL, 0]);
    // 96 MB would fit the summed 112.5 MB, and b is idle, but a full there would overrun it.
    const second = await get(pct50("png"));
    expect(second.status).toBe(503);
    expect([await ofDecoder("reserved_bytes", a), await ofDecoder("reserved_bytes", b)]).toEqual([FULL, 0]);
    expect((await Promise.all(held)).map((r) => r.status)).toEqual([408]);
  }, 15_000);

  it("moves a full, and its bytes, to another decoder with room when its own cannot be reached", async () => {
    expect((await heartbeat({ url: a, capacity: 4, memoryBytes: 200_000_000 })).status).toBe(204);
    const held = await hung([pct50("jpg")]); // on a, which is then busier than an idle decoder
    const unreachable = "http://127.0.0.1:9"; // nothing listens there
    expect((await heartbeat({ url: unreachable, capacity: 4, memoryBytes: 200_000_000 })).status).toBe(204);
    const retries = await metric("decoder_retries_total");
    const moved = get(pct50("png"));
    await scheduler.wait(300);
    expect(await metric("decoder_retries_total")).toBe(retries + 1);
    expect(await ofDecoder("reserved_bytes", a)).toBe(2 * FULL);
    const page = await get("/metrics").then((r) => r.text());
    expect(page.includes(`decoder="${await labelOf(unreachable)}"`)).toBe(false);
    expect(page.includes(unreachable)).toBe(false);
    expect((await Promise.all([...held, moved])).map((r) => r.status)).toEqual([408, 408]);
  }, 15_000);
});
