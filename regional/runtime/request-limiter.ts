// The request limiter: at most `max` public requests in the
// decoder at once; the next one is refused immediately (503 + Retry-After), never queued,
// because the admission DO in front already queues fairly and a second queue here would only
// hide overload. Internal sub-work (prefetch, shared block decodes) never takes a permit: only
// the HTTP handler acquires, once per request.

import { HttpError } from "../../shared/errors";

export const DEFAULT_MAX_IN_FLIGHT = 64;
/** /file transfers: they decode nothing, so they have a cap of their own beside the requests'. */
export const DEFAULT_MAX_FILE_TRANSFERS = 16;

export class RequestLimiter {
  private active = 0;

  constructor(
    readonly max: number = DEFAULT_MAX_IN_FLIGHT,
    private readonly what = "requests",
  ) {
    if (!Number.isSafeInteger(max) || max < 1) throw new RangeError("request limit must be ≥ 1");
  }

  get inFlight(): number {
    return this.active;
  }

  /** Takes a permit or throws 503; the returned function gives it back (idempotent). */
  acquire(): () => void {
    if (this.active >= this.max) {
      throw new HttpError("overloaded", `decoder busy: ${this.max} ${this.what} in flight`, 1);
    }
    this.active++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.active--;
    };
  }
}
