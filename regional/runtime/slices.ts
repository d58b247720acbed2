// Long computations on the event loop, in slices. A map tile's stages (warps, expressions, pixel
// selection, colouring) grow with pixels × nodes × assets: run at once, one hostile tile held the
// loop for seconds, and /health, heartbeats, deadlines and every other request waited. Each
// stage instead works through its pixels in chunks and, once it has held the loop for SLICE_MS,
// waits for its turn again: the computations that wait take turns one a loop iteration, in the
// order they stopped, with the loop's I/O (new requests, answers, timers) between every two.
// The request's signal is checked at every chunk, so a client that leaves or a deadline that
// passes ends the computation within a chunk. A cheap tile finishes within its first slice and
// never waits.
//
// A computation of the full partition (a 32-asset mosaic, an expression at the node cap) does
// not run here but in the render pool's processes, at their lower priority (compose-tile.ts): its
// slices there keep that process's reads and abort answered. A tile stays on the loop: its
// inputs are the decoder's shared block cache (neighbouring tiles read the same blocks), which
// a pool process cannot reach, and its answer is wanted in milliseconds.

import { setImmediate as nextIteration } from "node:timers/promises";

/** The most a computation holds the event loop before it lets other work in. */
export const SLICE_MS = 4;

/**
 * Work units (about one inner-loop step: a multiply-add, a comparison) between two looks at the
 * clock and the signal: some 0.1–0.5 ms, so a slice ends close to SLICE_MS.
 */
const CHUNK_UNITS = 1 << 17;

/** Computations waiting for their next turn, in the order they stopped. */
const waiting: (() => void)[] = [];

/** The next waiting computation runs, one a loop iteration (setImmediate: after the loop's I/O). */
async function takeTurns(): Promise<void> {
  while (waiting.length > 0) {
    await nextIteration();
    waiting.shift()!();
  }
}

/** One request's computation: its slices, and its signal. */
export class Slices {
  /** When its slice began; undefined until it first runs (it then waits behind those waiting). */
  private since: number | undefined;

  constructor(readonly signal: AbortSignal) {}

  /**
   * Runs `work` over items [0, count) in chunks, each of about CHUNK_UNITS units at `unitsPerItem`
   * an item, letting other work in between once a slice is over.
   */
  async each(count: number, unitsPerItem: number, work: (start: number, end: number) => void): Promise<void> {
    const step = Math.max(1, Math.floor(CHUNK_UNITS / Math.max(1, unitsPerItem)));
    for (let start = 0; start < count; start += step) {
      await this.pause();
      work(start, Math.min(count, start + step));
    }
  }

  /** Throws if the request is over; waits for this computation's next turn once its slice is. */
  async pause(): Promise<void> {
    this.signal.throwIfAborted();
    const now = performance.now();
    if (this.since === undefined && waiting.length === 0) this.since = now;
    if (this.since !== undefined && now - this.since < SLICE_MS) return;
    await new Promise<void>((resolve) => {
      waiting.push(resolve);
      if (waiting.length === 1) void takeTurns();
    });
    this.signal.throwIfAborted();
    this.since = performance.now();
  }
}
