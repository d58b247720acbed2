// The graceful drain (SIGTERM): the decoder takes no new work, finishes what it holds up to a
// deadline, and only then stops listening.
//
// Every new request (but the metrics page and a cancel) is answered 503 + Retry-After + DRAINING_HEADER before any work: the admission
// DO, seeing that header, knows nothing was done and sends the request to another decoder. The
// requests already held run on until TESSERA_DRAIN_TIMEOUT_MS; those still running then are
// cancelled and answer as any cancelled request does (503, retry). The decoder keeps listening
// LINGER_MS after its last request ends, so a request the DO sent before it heard this decoder is
// leaving gets that 503, not a refused connection.

import { Gauge, Registry } from "prom-client";
import { HttpError } from "../../shared/errors";

export const DEFAULT_DRAIN_TIMEOUT_MS = 30_000;
/** How long the decoder keeps answering 503 after its last held request ended. */
export const LINGER_MS = 1000;

/** What a drain did, for its log line. */
export interface DrainResult {
  /** Requests held when the drain began. */
  held: number;
  /** Requests cancelled at the deadline. */
  cancelled: number;
  ms: number;
}

export class Drain {
  private started = false;
  private readonly held = new Set<AbortController>();
  private allEnded: (() => void) | undefined;
  /** Its own registry, merged into the decoder's /metrics. */
  readonly registry = new Registry();

  constructor() {
    const drain = this;
    new Gauge({
      name: "tessera_decoder_draining",
      help: "1 once the decoder is draining (shutting down): new requests get 503, held ones finish.",
      registers: [this.registry],
      collect() {
        this.set(drain.started ? 1 : 0);
      },
    });
  }

  get draining(): boolean {
    return this.started;
  }

  /** Counts a request as held until the returned function is called (once its answer is written). */
  hold(controller: AbortController): () => void {
    this.held.add(controller);
    return () => {
      if (this.held.delete(controller) && this.held.size === 0) this.allEnded?.();
    };
  }

  /**
   * Starts draining. Resolves once every held request has ended (cancelled at `timeoutMs` if it
   * still runs), `leaving` has settled (the heartbeat telling the DO), and LINGER_MS have passed.
   */
  async drain(timeoutMs: number, leaving: Promise<unknown>): Promise<DrainResult> {
    this.started = true;
    const began = performance.now();
    const held = this.held.size;
    let cancelled = 0;
    const deadline = setTimeout(() => {
      cancelled = this.held.size;
      const reason = new HttpError("overloaded", "the decoder shut down before this request finished; retry shortly", 1);
      for (const controller of this.held) controller.abort(reason);
    }, timeoutMs);
    if (this.held.size > 0) await new Promise<void>((resolve) => (this.allEnded = resolve));
    clearTimeout(deadline);
    await leaving;
    await new Promise((resolve) => setTimeout(resolve, LINGER_MS));
    return { held, cancelled, ms: Math.round(performance.now() - began) };
  }
}
