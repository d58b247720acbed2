// The request ids of the signed requests a decoder has taken, each kept until its signature
// expires. Whoever captured one signed request (from a log, a proxy, the network between the DO
// and the decoder) could otherwise send it again and again while it is current: the same
// invalidation many times, the same grant reserving memory on every replay. Every signed request
// carries an id of its own, signed with it (REQUEST_ID_HEADER), and a decoder takes each id once:
// a replay is refused (401) before any work, any permit or any reservation.
//
// What remembering costs: an id is kept while its signature is current, which verifyRequest
// bounds by SIGNATURE_LIFETIME_MS, so the set holds at most the ids taken in that time (some
// 110 bytes each). Only the edge's secret makes valid ids; still, a flood of them (a runaway
// edge, a leaked secret) must not grow the set without bound. At MAX_ACCEPTED_IDS a decoder
// refuses new signed requests (503, Retry-After: until the oldest id expires) rather than forget
// an id still current, which would let that request be replayed.

import { HttpError } from "../../shared/errors";
import { REQUEST_ID_HEADER } from "../../shared/protocol";
import { isValidRequestId } from "../../shared/request-id";

/** Some 55 MB of ids: 7,000 signed requests a second for a whole lifetime, past any decoder's pace. */
export const MAX_ACCEPTED_IDS = 500_000;

export class AcceptedIds {
  /** Each id taken, to the expiry of its signature, in the order they came. */
  private readonly expiries = new Map<string, number>();

  constructor(private readonly max = MAX_ACCEPTED_IDS) {}

  get size(): number {
    return this.expiries.size;
  }

  /**
   * Takes the id of a request whose signature, expiring at `expires`, was verified: 401 without
   * a valid id or for one taken already, 503 while as many ids are kept as may be.
   */
  take(id: string | null | undefined, expires: number, now: number): void {
    if (!isValidRequestId(id)) {
      throw new HttpError("unauthorized", `a signed request must carry its own ${REQUEST_ID_HEADER} (8 to 64 letters, digits, "-" or "_")`);
    }
    this.forgetExpired(now);
    if (this.expiries.has(id)) throw new HttpError("unauthorized", `replayed edge request: request id ${id} was taken already`);
    if (this.expiries.size >= this.max) {
      const oldest = this.expiries.values().next().value ?? now;
      const retryAfter = Math.max(1, Math.ceil((oldest - now) / 1000));
      throw new HttpError("overloaded", `the decoder keeps ${this.max} signed request ids, as many as it may, until they expire; retry shortly`, retryAfter);
    }
    this.expiries.set(id, expires);
  }

  /**
   * Drops the ids whose signatures have expired, oldest first. Ids come nearly in the order of
   * their expiries (every signature lives SIGNATURE_TTL_MS from its signer's clock), so one that
   * expires behind a later one waits for it: still gone within SIGNATURE_LIFETIME_MS of its taking.
   */
  private forgetExpired(now: number): void {
    for (const [id, expires] of this.expiries) {
      if (expires >= now) return;
      this.expiries.delete(id);
    }
  }
}
