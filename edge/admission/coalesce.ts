// Concurrent identical decodes, decoded once. Opening a viewer fires the same misses from many
// clients and every edge location at once; the admission DO sees them all, so the first of a
// decoder path (which names the canonical request and its version) is decoded and every other
// that arrives before its answer waits for it. The answer is for those waiting when it comes
// (one arriving later starts afresh). A small one is one buffer that every waiter's response
// shares, no copy each (answers.ts). A large one (STREAM_ANSWER_BYTES) is a stream, and a stream
// has one reader: it goes to the first waiter, and every other then decodes on its own through
// admission. Sharing it would hold every reader to the slowest (an edge Worker reads at its
// client's pace), so one client that stopped reading would stall them all until the deadline;
// or it would buffer what the slowest has yet to read, as much as the whole answer.
import { answerResponse, type DecodedAnswer } from "./answers";

/** A client waiting for a flight's answer: handed its own response of it (null: decode on your own), or its error. */
interface Waiter {
  answer(res: Response | null): void;
  fail(err: unknown): void;
}

/** One decode in flight and the clients still waiting for it. */
interface Flight {
  waiters: Set<Waiter>;
  /** Aborts once every waiter has gone: only then is the decode itself stopped. */
  abandoned: AbortController;
}

/** A deadline of a follower's own, which the DO counts when it passes. */
export interface Deadline {
  signal: AbortSignal;
  clear(): void;
}

/** A buffer to every waiter; a stream to the first, every other told to decode on its own. */
function hand(answer: DecodedAnswer, waiters: Waiter[]): void {
  if (answer.body instanceof ArrayBuffer) return waiters.forEach((waiter) => waiter.answer(answerResponse(answer)));
  const [first, ...others] = waiters;
  if (first) first.answer(answerResponse(answer));
  else void answer.body.cancel().catch(() => {}); // everyone left as it came
  for (const waiter of others) waiter.answer(null);
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
   * takes no permit of its own while it waits. A leader's error (a 4xx, a 5xx, its timeout) is
   * every follower's answer too, rather than a second decode of the same request.
   */
  async answer(key: string, client: AbortSignal, decode: (signal: AbortSignal) => Promise<DecodedAnswer>, deadline: () => Deadline): Promise<Response> {
    const flight = this.byKey.get(key);
    const res = flight ? await this.follow(key, flight, client, deadline) : await this.wait(key, this.start(key, decode), client);
    // Another waiter has the stream of a large answer: this one is decoded again, for itself.
    return res ?? answerResponse(await decode(client));
  }

  /** Waits for a flight under the follower's own deadline; counts it when the flight answered it. */
  private async follow(key: string, flight: Flight, client: AbortSignal, deadline: () => Deadline): Promise<Response | null> {
    const own = deadline();
    const signal = AbortSignal.any([client, own.signal]);
    try {
      const res = await this.wait(key, flight, signal);
      if (res) this.coalesced++;
      return res;
    } catch (err) {
      if (!signal.aborted) this.coalesced++; // the leader's error, answered here too
      throw err;
    } finally {
      own.clear();
    }
  }

  private start(key: string, decode: (signal: AbortSignal) => Promise<DecodedAnswer>): Flight {
    const flight: Flight = { waiters: new Set(), abandoned: new AbortController() };
    this.byKey.set(key, flight);
    decode(flight.abandoned.signal).then(
      (answer) => hand(answer, this.land(key, flight)),
      (err) => this.land(key, flight).forEach((waiter) => waiter.fail(err)),
    );
    return flight;
  }

  /** The flight's answer has come: it is for those waiting now; a request arriving from now on starts afresh. */
  private land(key: string, flight: Flight): Waiter[] {
    this.forget(key, flight);
    const waiters = [...flight.waiters];
    flight.waiters.clear();
    return waiters;
  }

  /** Waits for the flight's answer until `signal` aborts; the last waiter to leave abandons it. */
  private wait(key: string, flight: Flight, signal: AbortSignal): Promise<Response | null> {
    if (signal.aborted) return Promise.reject(signal.reason);
    return new Promise<Response | null>((resolve, reject) => {
      const waiter: Waiter = {
        answer: (res) => (signal.removeEventListener("abort", leave), resolve(res)),
        fail: (err) => (signal.removeEventListener("abort", leave), reject(err)),
      };
      const leave = () => {
        flight.waiters.delete(waiter);
        waiter.fail(signal.reason);
        if (flight.waiters.size > 0) return;
        this.forget(key, flight); // a request arriving now starts afresh, not on a cancelled decode
        flight.abandoned.abort(signal.reason);
      };
      flight.waiters.add(waiter);
      signal.addEventListener("abort", leave, { once: true });
    });
  }

  private forget(key: string, flight: Flight): void {
    if (this.byKey.get(key) === flight) this.byKey.delete(key);
  }
}
