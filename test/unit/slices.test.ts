// Computations in slices of the event loop (regional/runtime/slices.ts), on real busy work: a
// long one lets the loop's other work in, several take turns, a short one never waits, and an
// abort ends one within a chunk. The decoder under hostile tiles is decoder-event-loop's.
import { describe, expect, it } from "vitest";
import { SLICE_MS, Slices } from "../../regional/runtime/slices";

/** Keeps the thread busy for `ms`. */
function busy(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end);
}

/** A computation of `chunks` chunks of `ms` each, recording `name` at every chunk into `log`. */
function computation(name: string, chunks: number, ms: number, log: string[], signal = new AbortController().signal): Promise<void> {
  // One item a chunk: each item is worth a whole chunk's units.
  return new Slices(signal).each(chunks, Number.MAX_SAFE_INTEGER, () => {
    log.push(name);
    busy(ms);
  });
}

describe("computations in slices", () => {
  it(`let the loop's other work in every ${SLICE_MS} ms or so`, async () => {
    const log: string[] = [];
    let ticks = 0;
    const ticking = setInterval(() => ticks++, 1);
    await computation("a", 100, 1, log); // 100 ms of work
    clearInterval(ticking);
    // Every slice ends with a turn of the loop: timers fire about once a slice, not once at the end.
    expect(ticks).toBeGreaterThan(10);
  });

  it("take turns, one slice each, in the order they stopped", async () => {
    const log: string[] = [];
    await Promise.all([computation("a", 30, 1, log), computation("b", 30, 1, log), computation("c", 30, 1, log)]);
    // No one runs to its end first, and each turn is one slice: a few 1 ms chunks of one computation.
    expect(Math.min(...["a", "b", "c"].map((n) => log.lastIndexOf(n)))).toBeGreaterThan(60);
    const turns: number[] = [];
    log.forEach((n, i) => (n === log[i - 1] ? turns[turns.length - 1]++ : turns.push(1)));
    const steady = turns.slice(3, -3).sort((x, y) => x - y);
    expect(steady[steady.length >> 1]).toBeGreaterThanOrEqual(2);
    expect(steady.at(-1)).toBeLessThanOrEqual(SLICE_MS + 2);
  });

  it("run a computation shorter than a slice at once, without waiting", async () => {
    const order: string[] = [];
    setImmediate(() => order.push("immediate"));
    await computation("short", 2, 0.5, order);
    order.push("done");
    expect(order).toEqual(["short", "short", "done"]);
  });

  it("end a computation within a chunk of its abort, with the abort's reason", async () => {
    const controller = new AbortController();
    const log: string[] = [];
    const running = computation("a", 10_000, 1, log, controller.signal);
    setTimeout(() => controller.abort(new Error("client left")), 50);
    await expect(running).rejects.toThrow("client left");
    const chunks = log.length;
    await new Promise((r) => setTimeout(r, 30));
    expect(log.length).toBe(chunks); // nothing ran after
    expect(chunks).toBeLessThan(200); // stopped long before its 10 s
  });
});
