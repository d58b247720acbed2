// How the admission DO reaches a decoder on a miss. It keeps its connections open: a decoder
// that has just answered gets the next request without a trial connection first, so misses in a
// row cost no TCP handshake each (the decoder counts the connections it accepts). And it reads a
// small answer (below STREAM_ANSWER_BYTES) whole before passing it on, so one cut short is a 502
// (the decoder failed), not stored, and its permit is freed; larger ones stream (streaming.test.ts).
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { get, heartbeat, metric } from "./helpers";

async function accepted(decoderUrl: string): Promise<number> {
  const text = await (await fetch(`${decoderUrl}/metrics`)).text();
  return Number(/^tessera_decoder_connections_total (\d+)$/m.exec(text)?.[1]);
}

/** A distinct 64² region of the test pattern: a miss every time. */
const region = (i: number) => `/iiif/3/published/${i * 64},0,64,64/64,/0/default.jpg`;

describe("forwarding to a decoder", () => {
  it("sends misses in a row over kept-open connections, not a new one each", async () => {
    const decoder = env.TEST_CONNECTIONS_DECODER_URL;
    expect((await heartbeat({ url: decoder, capacity: 4 })).status).toBe(204);
    expect((await get(region(0))).status).toBe(200); // the first: metadata, then a tile
    const before = await accepted(decoder);
    for (let i = 1; i <= 10; i++) {
      const res = await get(region(i));
      expect(res.status).toBe(200);
      expect(res.headers.get("x-tessera-cache")).toBe("miss");
      await res.arrayBuffer();
    }
    // At most one more: the metrics request above may have opened its own.
    expect((await accepted(decoder)) - before).toBeLessThanOrEqual(1);
  });

  it("answers 502 when the decoder dies midway through its answer, stores nothing and frees the permit", async () => {
    // Registered last, so it is the one not picked yet: the next forward goes to it.
    expect((await heartbeat({ url: env.TEST_CUTTING_DECODER_URL, capacity: 4 })).status).toBe(204);
    const released = await metric("released_total");
    const res = await get(region(12));
    expect(res.status).toBe(502);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(res.headers.get("x-tessera-cache")).toBeNull();
    expect(await metric("released_total")).toBe(released + 1);
    expect(await metric("permits_in_use")).toBe(0);
  });
});
