// Memory returned once the decoder is idle after large work. A large render or a many-asset map
// tile leaves hundreds of MB behind that nothing frees while the decoder is idle: pixel buffers
// that only a collection frees (V8 collects when JavaScript allocates, and an idle decoder does
// not), and the render pool's threads, which keep what they grew. So does a spell of many small
// decodes: a few dozen 32-asset 256² map tiles, each reserving a few MiB, left the main heap and
// its buffers 120 MiB larger. SETTLE_IDLE_MS after the last decode of a spell that reserved more
// than SETTLE_ABOVE_BYTES at once, or that grew the main thread's heap and buffers by as much
// since the last settle, with no decode running, the decoder runs its settle steps: the render
// pool replaced by a fresh one, a full collection of the main thread's heap. Measured after the
// largest png or jp2 (5800²) or a spell of 32-asset map tiles, the process stayed 100–358 MiB
// above its idle figure for good; settled (with the allocator settings, allocator.ts), −4 to
// +25 MiB within 30 s.

import { getHeapStatistics, setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

/** A spell of decodes whose largest reservation is above this settles; less leaves too little to be worth a thread's start. */
const SETTLE_ABOVE_BYTES = 64 * 2 ** 20;
/** How long the decoder must have been idle. */
export const SETTLE_IDLE_MS = 2000;

export class Settle {
  private running = 0;
  private largestBytes = 0;
  private timer: NodeJS.Timeout | undefined;

  /**
   * The main thread's heap and buffers when the first decode since the last settle started: by
   * then the settle's collection (which runs in steps) has given back what it frees.
   */
  private heldBefore: number | undefined;

  constructor(
    private readonly steps: (() => void)[],
    private readonly held: () => number = mainThreadBytes,
  ) {}

  /** Counts in a decode that reserved `bytes`; the returned function counts it out (once). */
  start(bytes: number): () => void {
    this.heldBefore ??= this.held();
    this.running++;
    this.largestBytes = Math.max(this.largestBytes, bytes);
    clearTimeout(this.timer);
    let running = true;
    return () => {
      if (!running) return;
      running = false;
      if (--this.running > 0) return;
      if (this.largestBytes > SETTLE_ABOVE_BYTES || this.held() - this.heldBefore! > SETTLE_ABOVE_BYTES) {
        this.timer = setTimeout(() => this.settle(), SETTLE_IDLE_MS).unref();
      }
    };
  }

  private settle(): void {
    if (this.running > 0) return;
    this.largestBytes = 0;
    for (const step of this.steps) step();
    this.heldBefore = undefined;
  }
}

/**
 * What a collection of the main thread may return: its heap and the buffers its objects hold.
 * Read at every spell's start and end, often under load: V8's figures only, not
 * process.memoryUsage(), which also reads the RSS from /proc (an open, a read and a close).
 */
function mainThreadBytes(): number {
  const { total_heap_size, external_memory } = getHeapStatistics();
  return total_heap_size + external_memory;
}

/**
 * A full collection of this thread's heap. The decoder's runs in steps between other tasks
 * (`async`); a measurement waits for it (`sync`). Not V8's last-resort flavour, which also gives
 * the heap's spare pages back at once (some 40 MiB more a decoder after a mosaic flood) but held
 * the event loop for 160–220 ms, past what a viewer's tile may wait. V8 exposes it only on a
 * flag, set here, not at the process's start.
 */
export function collectGarbage(execution: "sync" | "async" = "async"): void {
  gc ??= exposedGc();
  gc({ type: "major", execution });
}

type Gc = (options: { type: "major"; execution: "sync" | "async" }) => void;
let gc: Gc | undefined;

function exposedGc(): Gc {
  setFlagsFromString("--expose-gc");
  return runInNewContext("gc") as Gc;
}
