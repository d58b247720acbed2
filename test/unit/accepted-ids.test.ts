// The decoder's memory of the request ids it took: each id once while its signature is current,
// gone once it has expired, and never more ids than the lifetime brings, however many come.
import { describe, expect, it } from "vitest";
import { HttpError } from "../../shared/errors";
import { SIGNATURE_LIFETIME_MS } from "../../shared/protocol";
import { AcceptedIds } from "../../regional/http/accepted-ids";

const TTL = 60_000;
const NOW = 1_700_000_000_000;

/** The HttpError `take` throws, or undefined when it takes the id. */
function refusal(ids: AcceptedIds, id: string | null, expires: number, now: number): HttpError | undefined {
  try {
    ids.take(id, expires, now);
    return undefined;
  } catch (err) {
    if (err instanceof HttpError) return err;
    throw err;
  }
}

describe("the ids a decoder took", () => {
  it("takes an id once until its signature expires, then forgets it", () => {
    const ids = new AcceptedIds();
    expect(refusal(ids, "request-0001", NOW + TTL, NOW)).toBeUndefined();
    const again = refusal(ids, "request-0001", NOW + TTL, NOW + TTL);
    expect([again?.status, again?.message]).toEqual([401, "replayed edge request: request id request-0001 was taken already"]);
    expect(refusal(ids, "request-0002", NOW + 2 * TTL, NOW + TTL + 1)).toBeUndefined();
    expect(ids.size).toBe(1);
  });

  it("refuses a missing or malformed id (401)", () => {
    const ids = new AcceptedIds();
    for (const id of [null, "", "short", "x".repeat(65), "has space in it", "a".repeat(16) + "\n"]) {
      const err = refusal(ids, id, NOW + TTL, NOW);
      expect(err?.status, JSON.stringify(id)).toBe(401);
      expect(err?.message).toMatch(/must carry its own x-tessera-request-id/);
    }
    expect(ids.size).toBe(0);
  });

  it("at its cap refuses new ids (503 until the oldest expires) and forgets none still current", () => {
    const ids = new AcceptedIds(3);
    for (const n of [1, 2, 3]) expect(refusal(ids, `request-000${n}`, NOW + TTL + n, NOW)).toBeUndefined();
    const full = refusal(ids, "request-0004", NOW + 10_000 + TTL, NOW + 10_000);
    expect([full?.status, full?.retryAfterSeconds]).toEqual([503, 51]); // the first expires 50.001 s later
    expect(full?.message).toMatch(/keeps 3 signed request ids/);
    expect(refusal(ids, "request-0001", NOW + TTL, NOW + 10_000)?.status).toBe(401); // still remembered
    expect(refusal(ids, "request-0004", NOW + 2 * TTL, NOW + TTL + 3)).toBeUndefined(); // the first two have expired
    expect(ids.size).toBe(2);
  });

  it("under a flood of distinct ids holds no more than one lifetime's worth, whatever the signers' clocks", () => {
    const ids = new AcceptedIds(Infinity);
    let excess = -Infinity;
    // An id every 5 ms for three lifetimes, each from a signer whose clock is up to a
    // signature's life behind or the skew allowance ahead, as verifyRequest lets through.
    for (let t = 0; t < 3 * SIGNATURE_LIFETIME_MS; t += 5) {
      const ahead = ((t * 7919) % (SIGNATURE_LIFETIME_MS + 1)) - TTL; // -TTL … +skew, scattered
      ids.take(`flooded-${t}`, NOW + t + TTL + ahead, NOW + t);
      const takenInLifetime = Math.floor(Math.min(t, SIGNATURE_LIFETIME_MS) / 5) + 1;
      excess = Math.max(excess, ids.size - takenInLifetime);
    }
    expect(excess).toBeLessThanOrEqual(0);
  });
});
