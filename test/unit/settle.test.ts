// When the decoder settles: SETTLE_IDLE_MS after a spell of decodes ends, if the spell reserved
// more than 64 MiB at once or grew the main thread's heap and buffers by as much since the last
// settle (a few dozen small map tiles did, none large alone), and never while a decode runs.
// The process-level figures are memory-after-large-renders.test.ts's.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { Settle, SETTLE_IDLE_MS } from "../../regional/runtime/settle";

const MIB = 2 ** 20;

describe("settling", () => {
  let held = 0;
  let settles = 0;
  let settle: Settle;
  beforeEach(() => {
    vi.useFakeTimers();
    held = 100 * MIB;
    settles = 0;
    settle = new Settle([() => settles++], () => held);
  });
  afterEach(() => vi.useRealTimers());

  /** A spell of `count` decodes one after another, each reserving `bytes` and growing the heap by `grows`. */
  const spell = (count: number, bytes: number, grows: number) => {
    for (let i = 0; i < count; i++) {
      const end = settle.start(bytes);
      held += grows;
      end();
    }
  };

  it("follows a spell that reserved more than 64 MiB at once, once idle", () => {
    spell(1, 65 * MIB, 0);
    vi.advanceTimersByTime(SETTLE_IDLE_MS - 1);
    expect(settles).toBe(0);
    vi.advanceTimersByTime(1);
    expect(settles).toBe(1);
  });

  it("follows a spell of small decodes that grew the heap and buffers by more than 64 MiB since the last settle", () => {
    spell(40, 4 * MIB, MIB); // 40 MiB: not yet
    vi.advanceTimersByTime(SETTLE_IDLE_MS);
    expect(settles).toBe(0);
    spell(40, 4 * MIB, MIB); // 80 MiB since the start
    vi.advanceTimersByTime(SETTLE_IDLE_MS);
    expect(settles).toBe(1);
    // Counted from what the settle left: the same again is needed for the next.
    spell(40, 4 * MIB, MIB);
    vi.advanceTimersByTime(SETTLE_IDLE_MS);
    expect(settles).toBe(1);
  });

  it("waits while a decode runs, and for SETTLE_IDLE_MS after the last", () => {
    const first = settle.start(100 * MIB);
    const second = settle.start(MIB);
    first();
    vi.advanceTimersByTime(SETTLE_IDLE_MS * 2);
    expect(settles).toBe(0);
    second();
    vi.advanceTimersByTime(SETTLE_IDLE_MS / 2);
    settle.start(MIB)(); // a newcomer restarts the wait
    vi.advanceTimersByTime(SETTLE_IDLE_MS - 1);
    expect(settles).toBe(0);
    vi.advanceTimersByTime(1);
    expect(settles).toBe(1);
  });
});
