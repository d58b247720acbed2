// A counting semaphore with a bounded-time FIFO queue: the global decode permits.
// A released permit passes straight to the longest waiter, so order is strictly FIFO.

import { HttpError } from "../../shared/errors";

export type Release = () => void;

interface Waiter {
  grant: (release: Release) => void;
  timer: ReturnType<typeof setTimeout>;
}

export class PermitPool {
  private held = 0;
  private readonly queue: Waiter[] = [];

  constructor(readonly total: number) {}

  get inUse(): number {
    return this.held;
  }

  get waiting(): number {
    return this.queue.length;
  }

  /** Resolves with an idempotent release once a permit is held; 503 after `timeoutMs` waiting. */
  acquire(timeoutMs: number): Promise<Release> {
    if (this.held < this.total) {
      this.held++;
      return Promise.resolve(this.releaser());
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        grant: resolve,
        timer: setTimeout(() => {
          this.queue.splice(this.queue.indexOf(waiter), 1);
          reject(new HttpError("overloaded", "all decode permits are busy; retry shortly", 1));
        }, timeoutMs),
      };
      this.queue.push(waiter);
    });
  }

  private releaser(): Release {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.queue.shift();
      if (next) {
        clearTimeout(next.timer);
        next.grant(this.releaser()); // the permit changes hands; `held` is unchanged
      } else {
        this.held--;
      }
    };
  }
}
