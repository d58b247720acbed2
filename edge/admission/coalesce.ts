// Concurrent identical decodes, decoded once. Opening a viewer fires the same misses from many
// clients and every edge location at once; the admission DO sees them all, so the first of a
// decoder path (which names the canonical request and its version) is decoded and every other
// that arrives before its answer waits for it. The answer is buffered once and each waiter gets
// its own copy: decoded answers are bounded by the admitted estimate, the edge stores the whole
// answer anyway, and a buffer serves followers that join at any moment, where a tee of the
// stream would serve only those present when it started.
import { untilAborted } from "../../shared/abort";

/** A decoder's answer as every waiter gets it: the same status, headers and bytes. */
interface SharedAnswer {
  status: number;
  headers: [string, string][];
  body: ArrayBuffer | null;
}

/** One decode in flight and how many clients still wait for it. */
interface Flight {
  answer: Promise<SharedAnswer>;
  waiting: number;
  /** Aborts once every waiter has gone: only then is the decode itself stopped. */
  abandoned: AbortController;
}

/** A deadline of a follower's own, which the DO counts when it passes. */
export interface Deadline {
  signal: AbortSignal;
  clear(): void;
}

export class Flights {
  private readonly byKey = new Map<string, Flight>();
  /** Followers answered from a leader's decode (its answer or its error). */
  coalesced = 0;

  /** Decodes in flight now (each map entry is removed when its decode settles or is abandoned). */
  get size(): number {
    return this.byKey.size;
  }

  /**
   * Answers `client` from the decode in flight for `key`, or starts one with `decode`. The
   * decode runs under a signal that aborts only when every waiter has gone, so a leader whose
   * client leaves still answers its followers. A follower waits under its own `deadline()` and
   * takes no permit of its own: it decodes nothing. A leader's error (a 4xx, a 5xx, its
   * timeout) is every follower's answer too, rather than a second decode of the same request.
   */
  async answer(key: string, client: AbortSignal, decode: (signal: AbortSignal) => Promise<Response>, deadline: () => Deadline): Promise<Response> {
    const flight = this.byKey.get(key);
    if (!flight) return this.wait(key, this.start(key, decode), client);
    const own = deadline();
    const signal = AbortSignal.any([client, own.signal]);
    try {
      const res = await this.wait(key, flight, signal);
      this.coalesced++;
      return res;
    } catch (err) {
      if (!signal.aborted) this.coalesced++; // the leader's error, answered here too
      throw err;
    } finally {
      own.clear();
    }
  }

  private start(key: string, decode: (signal: AbortSignal) => Promise<Response>): Flight {
    const abandoned = new AbortController();
    const flight: Flight = { answer: decode(abandoned.signal).then(buffered), waiting: 0, abandoned };
    this.byKey.set(key, flight);
    const forget = () => this.forget(key, flight);
    flight.answer.then(forget, forget);
    return flight;
  }

  /** Waits for the flight's answer until `signal` aborts; the last waiter to leave abandons it. */
  private async wait(key: string, flight: Flight, signal: AbortSignal): Promise<Response> {
    if (signal.aborted) throw signal.reason;
    flight.waiting++;
    const leave = () => {
      if (--flight.waiting > 0) return;
      this.forget(key, flight); // a request arriving now starts afresh, not on a cancelled decode
      flight.abandoned.abort(signal.reason);
    };
    signal.addEventListener("abort", leave, { once: true });
    try {
      const { status, headers, body } = await untilAborted(flight.answer, signal);
      return new Response(body?.slice(0) ?? null, { status, headers });
    } finally {
      signal.removeEventListener("abort", leave);
    }
  }

  private forget(key: string, flight: Flight): void {
    if (this.byKey.get(key) === flight) this.byKey.delete(key);
  }
}

async function buffered(res: Response): Promise<SharedAnswer> {
  return { status: res.status, headers: [...res.headers], body: res.body ? await res.arrayBuffer() : null };
}
