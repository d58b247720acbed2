// Answers above STREAM_ANSWER_BYTES flow through the admission DO and the Worker as the decoder
// sends them, never held whole: in front of a decoder whose large answers come in two parts, the
// second when the test releases it (or never: it dies after the first; test/support/
// workers-global-setup.ts). The client has the first bytes while the decoder still holds the
// last; the permit is held until the last byte has gone through and is freed on every path (the
// end, the client leaving, the decoder dying, the deadline); a stream cut short errors rather than
// ending as if whole, and is never stored; a stream has one reader, so identical requests
// waiting for a large answer are each decoded on their own once it comes.
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import worker from "../../edge/index";
import { streamedAnswer } from "../support/streamed-answer";
import { BASE, cacheSourceInfo, get, heartbeat, metric, settled, squareSource } from "./helpers";

const decoder = () => env.TEST_STREAMING_DECODER_URL;
const expected = streamedAnswer();

interface DecoderState {
  /** Requests by source id. */
  requests: Record<string, number>;
  /** Answers waiting for their release. */
  held: number;
  /** Answers that ended before their last byte. */
  cut: number;
}
const state = async () => (await (await fetch(`${decoder()}/state`)).json()) as DecoderState;
const release = () => fetch(`${decoder()}/release`, { method: "POST" }).then((r) => r.text());

/** Sources whose answers are `held-…` until released, `cut-…` short, else sent at once. */
const SOURCES = ["held-first", "held-head", "held-leaving", "held-late", "held-shared", "held-joined", "cut-short", "whole-burst"];
const image = (id: string) => `/iiif/3/${id}/full/max/0/default.png`;

/** A request through the Worker, and what it does once it has answered (storing the answer), to wait for. */
function request(path: string, init?: RequestInit): { answer: Promise<Response>; stored: () => Promise<void> } {
  const ctx = createExecutionContext();
  return { answer: worker.fetch(new Request(BASE + path, init), env, ctx), stored: () => waitOnExecutionContext(ctx) };
}

/** Reads what is left of a body; rejects if it errors. */
async function rest(reader: ReadableStreamDefaultReader<Uint8Array>, first: Uint8Array[] = []): Promise<Uint8Array> {
  const chunks = [...first];
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
  }
  const bytes = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) bytes.set(c, (at += c.length) - c.length);
  return bytes;
}

/** Where `bytes` differ from the decoder's answer: -1 when they are all of it (a diff of 3 MB is too large to print). */
function difference(bytes: Uint8Array | ArrayBuffer): number {
  const actual = new Uint8Array(bytes);
  const at = actual.findIndex((b, i) => b !== expected[i]);
  return at !== -1 || actual.length === expected.length ? at : Math.min(actual.length, expected.length);
}

/** Waits until `check` holds, at most `ms`. */
async function until(check: () => Promise<boolean>, ms = 5000): Promise<void> {
  const by = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > by) throw new Error(`not within ${ms} ms`);
    await scheduler.wait(20);
  }
}

beforeAll(async () => {
  // JPEG-stored RGB, as a decoder reports them: a whole-image PNG of it is a tile by its work (86
  // units), so identical requests are not held back by the full partition's few permits.
  for (const id of SOURCES) await cacheSourceInfo({ ...squareSource(id, [1000, 500]), channels: 3, codec: "jpeg" });
});
beforeEach(async () => {
  await settled();
  expect((await heartbeat({ url: decoder(), capacity: 4, memoryBytes: 4_000_000_000 })).status).toBe(204);
});

describe("an answer above STREAM_ANSWER_BYTES", () => {
  it("reaches the client as the decoder sends it, holds its permit to the last byte, and is stored as it passes", async () => {
    const { answer, stored } = request(image("held-first"));
    const res = await answer;
    expect(res.status).toBe(200);
    expect(res.headers.get("x-tessera-cache")).toBe("miss");
    const reader = res.body!.getReader();
    const first = await reader.read();
    expect(first.done).toBe(false);
    // The client has bytes; the decoder has not sent its last ones yet, and the permit is held.
    expect((await state()).held).toBe(1);
    expect(await metric("permits_in_use")).toBe(1);
    expect(await release()).toBe("1");
    expect(difference(await rest(reader, [first.value!]))).toBe(-1);
    await stored();
    expect(await metric("permits_in_use")).toBe(0);

    const again = await get(image("held-first"));
    expect(again.headers.get("x-tessera-cache")).toBe("hit");
    expect(difference(await again.arrayBuffer())).toBe(-1);
    expect((await state()).requests["held-first"]).toBe(1);
  });

  it("asked with HEAD, still goes to the cache to its last byte, and frees the permit then", async () => {
    const { answer, stored } = request(image("held-head"), { method: "HEAD" });
    const res = await answer;
    expect(res.status).toBe(200);
    expect(res.body).toBeNull();
    await until(async () => (await state()).held === 1);
    await release();
    // With the last byte, not at the deadline (REQUEST_TIMEOUT is 2 s here).
    await until(async () => (await metric("permits_in_use")) === 0, 500);
    await stored();
    const again = await get(image("held-head"));
    expect(again.headers.get("x-tessera-cache")).toBe("hit");
    expect(difference(await again.arrayBuffer())).toBe(-1);
  });

  it("errors the client's body when the decoder dies midway, stores nothing and frees the permit", async () => {
    const [released, cut] = [await metric("released_total"), (await state()).cut];
    const { answer, stored } = request(image("cut-short"));
    const res = await answer;
    expect(res.status).toBe(200); // the headers went before the decoder died
    await expect(res.arrayBuffer()).rejects.toThrow();
    await stored();
    await until(async () => (await metric("permits_in_use")) === 0);
    expect(await metric("released_total")).toBe(released + 1);
    expect((await state()).cut).toBe(cut + 1);
    // Nothing was stored: the next request is a miss that reaches the decoder again.
    const again = await get(image("cut-short"));
    expect(again.headers.get("x-tessera-cache")).toBe("miss");
    await expect(again.arrayBuffer()).rejects.toThrow();
    expect((await state()).requests["cut-short"]).toBe(2);
  });

  it("frees the permit when the client leaves mid-stream, stops the decoder's answer and stores nothing", async () => {
    const cut = (await state()).cut;
    const client = new AbortController();
    const { answer, stored } = request(image("held-leaving"), { signal: client.signal });
    const reader = (await answer).body!.getReader();
    await reader.read();
    expect(await metric("permits_in_use")).toBe(1);
    client.abort();
    await expect(rest(reader)).rejects.toThrow();
    // At once, long before the deadline (REQUEST_TIMEOUT is 2 s here), and before the decoder ends.
    await until(async () => (await metric("permits_in_use")) === 0, 500);
    await until(async () => (await state()).cut === cut + 1, 500);
    await stored();
    const again = await get(image("held-leaving"));
    expect(again.headers.get("x-tessera-cache")).toBe("miss");
    await release();
    expect(difference(await again.arrayBuffer())).toBe(-1);
  });

  it("is cut at REQUEST_TIMEOUT: the client's body errors, nothing is stored, the permit is freed", async () => {
    const timeouts = await metric("request_timeouts_total");
    const { answer, stored } = request(image("held-late"));
    const res = await answer;
    expect(res.status).toBe(200);
    await expect(res.arrayBuffer()).rejects.toThrow();
    await stored();
    expect(await metric("request_timeouts_total")).toBe(timeouts + 1);
    await until(async () => (await metric("permits_in_use")) === 0);
    const again = await get(image("held-late"));
    expect(again.headers.get("x-tessera-cache")).toBe("miss");
    await release();
    expect(difference(await again.arrayBuffer())).toBe(-1);
  });
});

describe("identical requests for an answer above STREAM_ANSWER_BYTES", () => {
  it("waiting when it comes: the first reads its stream, every other is decoded on its own; every byte to each", async () => {
    const coalesced = await metric("coalesced_total");
    const answers = Promise.all([1, 2, 3].map(() => get(image("held-shared"))));
    // The followers waited for the first answer's headers; it is large, so each asked for its own.
    await until(async () => (await state()).held === 3);
    expect((await state()).requests["held-shared"]).toBe(3);
    await release();
    const bodies = await Promise.all((await answers).map((res) => res.arrayBuffer()));
    for (const body of bodies) expect(difference(body)).toBe(-1);
    expect(await metric("coalesced_total")).toBe(coalesced);
    await until(async () => (await metric("permits_in_use")) === 0);
  });

  it("arriving once it flows are decoded on their own: none misses the bytes already sent", async () => {
    const first = await get(image("held-joined"));
    const reader = first.body!.getReader();
    const head = await reader.read();
    const late = get(image("held-joined"));
    await until(async () => (await state()).held === 2);
    await release();
    expect(difference(await rest(reader, [head.value!]))).toBe(-1);
    expect(difference(await (await late).arrayBuffer())).toBe(-1);
    expect((await state()).requests["held-joined"]).toBe(2);
  });

  it("reach every client of a burst, whole", async () => {
    expect((await heartbeat({ url: decoder(), capacity: 8, memoryBytes: 4_000_000_000 })).status).toBe(204); // none queues
    const read = async (res: Response) => ({ status: res.status, difference: difference(await res.arrayBuffer()) });
    const answers = await Promise.all(Array.from({ length: 8 }, () => get(image("whole-burst")).then(read)));
    expect(answers).toEqual(Array(8).fill({ status: 200, difference: -1 }));
    await until(async () => (await metric("permits_in_use")) === 0);
  });
});
