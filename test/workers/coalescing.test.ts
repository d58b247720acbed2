// Bursts of identical misses through the Worker and the admission DO, in front of a real decoder
// that only this file sends work to (test/support/workers-global-setup.ts), so its own request
// counts say how many decodes ran: a burst is decoded once, every client gets the same bytes,
// clients that leave take nothing from the others, an error reaches every waiter, and
// COALESCE=false decodes each.
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import { AdmissionDO } from "../../edge/admission/admission-do";
import { DECODER } from "../../shared/protocol";
import { get, heartbeat, metric } from "./helpers";

const decoder = () => env.TEST_COUNTED_DECODER_URL;
// Tiles of the bundled UTM sample at zoom 12 (columns 2218..2221 hold it); each test asks its own,
// so none is an edge-cache hit left by another.
const tile = (x: number, suffix = ".png") => `/tiles/utm-quadrants/WebMercatorQuad/12/${x}/1427${suffix}`;
// Upscaled and rotated: a few hundred milliseconds of libvips, long enough to leave mid-decode.
const slow = (width: number) => `/iiif/3/slow/full/%5E${width},/30/default.jpg`;

/** Requests the decoder answered on `route` ("tiles" or "image") with `status`. */
async function decodes(route: string, status = 200): Promise<number> {
  const text = await (await fetch(`${decoder()}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`tessera_decoder_requests_total{route="${route}",status="${status}"}`));
  return Number(line?.split(" ")[1] ?? 0);
}

const burst = (path: string, n: number) => Promise.all(Array.from({ length: n }, () => get(path)));
const bytes = async (res: Response) => new Uint8Array(await res.arrayBuffer());

/** The sample's current version, for asking the DO directly. */
let version: string;
beforeEach(async () => {
  expect((await heartbeat({ url: decoder(), capacity: 4, memoryBytes: 4_000_000_000 })).status).toBe(204);
  // The source's metadata is then in the edge's cache: a burst's only misses are its pixels.
  version = (await get(tile(2221, ".jpg"))).headers.get("x-tessera-version")!;
});

describe("identical misses at once", () => {
  it("are decoded once: 50 clients, one decode, the same bytes and ETag for all", async () => {
    const [before, coalesced] = [await decodes("tiles"), await metric("coalesced_total")];
    const answers = await burst(tile(2218), 50);
    expect(answers.map((r) => r.status)).toEqual(Array(50).fill(200));
    expect(await decodes("tiles")).toBe(before + 1);
    expect(await metric("coalesced_total")).toBe(coalesced + 49);
    const first = await bytes(answers[0]);
    expect(first.length).toBeGreaterThan(0);
    for (const res of answers.slice(1)) {
      expect(res.headers.get("etag")).toBe(answers[0].headers.get("etag"));
      expect(await bytes(res)).toEqual(first);
    }
    expect([await metric("permits_in_use"), await metric("coalescing")]).toEqual([0, 0]);
  });

  it("of two different tiles are two decodes", async () => {
    const before = await decodes("tiles");
    const [a, b] = await Promise.all([burst(tile(2219, ".webp"), 20), burst(tile(2220, ".webp"), 20)]);
    expect([...a, ...b].every((r) => r.status === 200)).toBe(true);
    expect(await decodes("tiles")).toBe(before + 2);
    expect(await bytes(a[0])).not.toEqual(await bytes(b[0]));
  });

  it("answer the others when one follower's client leaves; it gets nothing", async () => {
    const before = await decodes("image");
    const leader = get(slow(1600));
    await scheduler.wait(50);
    const leaving = new AbortController();
    const gone = get(slow(1600), { signal: leaving.signal });
    const others = burst(slow(1600), 5);
    await scheduler.wait(50);
    leaving.abort();
    await expect(gone).rejects.toThrow();
    const answers = [await leader, ...(await others)];
    expect(answers.map((r) => r.status)).toEqual(Array(6).fill(200));
    const first = await bytes(answers[0]);
    for (const res of answers.slice(1)) expect(await bytes(res)).toEqual(first);
    expect(await decodes("image")).toBe(before + 1);
  });

  it("answer the followers when the leader's client leaves: its decode is not cancelled", async () => {
    const [before, cancelled] = [await decodes("image"), await metric("coalesced_total")];
    const leaving = new AbortController();
    const leader = get(slow(1700), { signal: leaving.signal });
    await scheduler.wait(50);
    const followers = burst(slow(1700), 5);
    await scheduler.wait(50);
    leaving.abort();
    await expect(leader).rejects.toThrow();
    const answers = await followers;
    expect(answers.map((r) => r.status)).toEqual(Array(5).fill(200));
    expect((await bytes(answers[0])).slice(0, 2)).toEqual(new Uint8Array([0xff, 0xd8])); // a JPEG
    expect(await decodes("image")).toBe(before + 1);
    expect(await metric("coalesced_total")).toBe(cancelled + 5);
  });

  it("pass the decoder's 400 (a band past the source's count) to every follower, from one decode", async () => {
    const before = await decodes("tiles", 400);
    const answers = await burst(tile(2219, ".png?bidx=4"), 10);
    expect(answers.map((r) => r.status)).toEqual(Array(10).fill(400));
    for (const res of answers) expect(await res.json()).toMatchObject({ error: "bad_request", message: expect.stringMatching(/band/) });
    expect(await decodes("tiles", 400)).toBe(before + 1);
  });

  it("are each decoded with COALESCE=false", async () => {
    const before = await decodes("tiles");
    await runInDurableObject(env.ADMISSION.get(env.ADMISSION.idFromName("default")), async (_instance: AdmissionDO, state) => {
      const separate = new AdmissionDO(state, { ...env, COALESCE: "false" });
      separate.decoders.heartbeat({ url: decoder(), capacity: 4, memoryBytes: 4_000_000_000 }, Date.now());
      const path = DECODER.tile("utm-quadrants", "WebMercatorQuad/12/2220/1428.png", version);
      const answers = await Promise.all([1, 2, 3].map(() => separate.fetch(new Request(`https://admission${path}`))));
      expect(answers.map((r) => r.status)).toEqual([200, 200, 200]);
      await Promise.all(answers.map((r) => r.arrayBuffer()));
    });
    expect(await decodes("tiles")).toBe(before + 3);
  });
});
