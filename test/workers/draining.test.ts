// Decoders that leave: the admission DO drops one that says it is leaving at once, and a request
// it sends to a draining decoder before hearing so (a real decoder, started draining for the test)
// goes to another live decoder under the same permit, never back to the client as that 503.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { get, heartbeat, labelOf, metric } from "./helpers";

/** A distinct 64² region of the test pattern: a miss every time. */
const region = (i: number) => `/iiif/3/published/${i * 64},64,64,64/64,/0/default.jpg`;

/** A real decoder, started for the caller and draining: its URL. */
const drainingDecoder = async () => (await fetch(env.TEST_DRAINING_DECODER_CONTROL_URL, { method: "POST" })).text();

const live = async () => [await metric("decoders_live"), await metric("permits_total")];

describe("a decoder that leaves", () => {
  it("is dropped from routing and the auto-sized sums by its leaving heartbeat, at once", async () => {
    expect((await heartbeat({ url: env.TEST_WORKING_DECODER_URL, capacity: 4 })).status).toBe(204);
    expect((await heartbeat({ url: "http://127.0.0.1:9", capacity: 6 })).status).toBe(204);
    expect(await live()).toEqual([2, 10]);
    expect((await heartbeat({ url: "http://127.0.0.1:9", capacity: 6, leaving: true })).status).toBe(204);
    expect(await live()).toEqual([1, 4]);
    // Nothing listens there: were it still routed to, a forward would count a retry.
    const retries = await metric("decoder_retries_total");
    for (const i of [0, 1, 2]) expect((await get(region(i))).status).toBe(200);
    expect(await metric("decoder_retries_total")).toBe(retries);
  });

  it("refuses a heartbeat whose leaving is not true or false", async () => {
    expect((await heartbeat({ url: "http://127.0.0.1:9", leaving: "soon" as unknown as true })).status).toBe(400);
  });

  it("has a request it sent to a draining decoder answered by another, under the same permit", async () => {
    expect((await heartbeat({ url: env.TEST_WORKING_DECODER_URL, capacity: 4 })).status).toBe(204);
    expect((await get(region(4))).status).toBe(200); // the source's metadata, now known to the edge
    // Never picked yet, the draining decoder is the one picked first among idle equals.
    expect((await heartbeat({ url: await drainingDecoder(), capacity: 16 })).status).toBe(204);
    const [resends, released] = [await metric("draining_resends_total"), await metric("released_total")];
    const res = await get(region(5));
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/jpeg");
    expect(await metric("draining_resends_total")).toBe(resends + 1);
    expect(await metric("released_total")).toBe(released + 1); // one admission, however many decoders it went to
    expect(await live()).toEqual([1, 4]);
    expect(await metric("permits_in_use")).toBe(0);
  });

  it("moves a full it sent to a draining decoder, and the bytes held for it, to another decoder with room", async () => {
    expect((await heartbeat({ url: env.TEST_WORKING_DECODER_URL, capacity: 4 })).status).toBe(204);
    expect((await get(region(7))).status).toBe(200); // the source's metadata, now known to the edge
    const drainingUrl = await drainingDecoder();
    expect((await heartbeat({ url: drainingUrl, capacity: 16 })).status).toBe(204);
    const resends = await metric("draining_resends_total");
    // A GIF's encode makes a full by its work alone (hundreds of units), far from any share's bytes.
    const res = await get("/iiif/3/published/full/400,/0/default.gif");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/gif");
    await res.arrayBuffer();
    expect(await metric("draining_resends_total")).toBe(resends + 1);
    const text = await (await get("/metrics")).text();
    // Nothing is left held anywhere: not on the working decoder, not on the one that left.
    expect(text).toContain(`tessera_decode_memory_decoder_reserved_bytes{decoder="${await labelOf(env.TEST_WORKING_DECODER_URL)}"} 0`);
    expect(text).not.toContain(`decoder="${await labelOf(drainingUrl)}"`);
    expect([await metric("tessera_decode_memory_reserved_bytes"), await metric("permits_in_use"), await metric("full_in_use")]).toEqual([0, 0, 0]);
  });

  it("has a file transfer it sent to a draining decoder streamed by another", async () => {
    expect((await heartbeat({ url: env.TEST_WORKING_DECODER_URL, capacity: 4 })).status).toBe(204);
    expect((await get("/iiif/3/published/info.json")).status).toBe(200); // the metadata, known before the draining decoder joins
    expect((await heartbeat({ url: await drainingDecoder(), capacity: 16 })).status).toBe(204);
    const resends = await metric("draining_resends_total");
    const res = await get("/iiif/3/published/file");
    expect(res.status).toBe(200);
    expect((await res.arrayBuffer()).byteLength).toBe(Number(res.headers.get("content-length")));
    expect(await metric("draining_resends_total")).toBe(resends + 1);
    expect(await live()).toEqual([1, 4]);
    expect(await metric("file_transfers")).toBe(0);
  });

  it("answers 503 + Retry-After, never the decoder's draining answer, when no other decoder is left", async () => {
    expect((await heartbeat({ url: await drainingDecoder(), capacity: 16 })).status).toBe(204);
    await heartbeat({ url: env.TEST_WORKING_DECODER_URL, capacity: 4, leaving: true });
    expect(await live()).toEqual([1, 16]);
    const res = await get(region(6));
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("1");
    expect(res.headers.get("x-tessera-draining")).toBeNull();
    expect(((await res.json()) as { message: string }).message).toMatch(/no decoder is registered/);
    expect(await live()).toEqual([0, 0]);
    expect(await metric("permits_in_use")).toBe(0);
  });
});
