// A counting semaphore: at most `max` holders at once, the others wait in arrival order. The HTTP
// asset reader bounds its connections over all hosts with it (undici bounds them per host only).
// A waiter whose signal aborts leaves the queue at once, so a cancelled request never waits on.

export class Slots {
  private held = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(readonly max: number) {
    if (!Number.isSafeInteger(max) || max < 1) throw new RangeError("slot count must be ≥ 1");
  }

  /** Waits for a slot; the returned function gives it back (idempotent). Rejects with the signal's reason. */
  async acquire(signal?: AbortSignal): Promise<() => void> {
    signal?.throwIfAborted();
    if (this.held < this.max) this.held++;
    else await this.queue(signal);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.handOver();
    };
  }

  /** Waits until a releasing holder hands its slot to this waiter. */
  private queue(signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      const wake = () => {
        signal?.removeEventListener("abort", leave);
        resolve();
      };
      const leave = () => {
        this.waiting.splice(this.waiting.indexOf(wake), 1);
        reject(signal?.reason);
      };
      this.waiting.push(wake);
      signal?.addEventListener("abort", leave, { once: true });
    });
  }

  /** A released slot goes straight to the first waiter, else back to the pool. */
  private handOver(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.held--;
  }
}
