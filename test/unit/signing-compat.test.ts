// The decoder verifies what the previous edge signed (no grant of work), so a deploy that rolls
// the decoders first loses no request; a grant of work added to, or dropped from, a signed
// request fails like any other changed limit.
import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { signRequest, verifyRequest, type SignedLimits } from "../../shared/protocol";

const SECRET = "signing-compat-secret";
const PATH = "/v1/image/test-pattern/full/max/0/default.jpg?version=v1";
const LIMITS: SignedLimits = { timeoutMs: "30000", grantBytes: "1048576", partition: "tile", requestId: "r-1" };

/** A signature as the edge before the grant of work made it: seven lines, the limits in order. */
function previousEdgeSignature(now: number): string {
  const expires = now + 60_000;
  const text = ["GET", PATH, expires, LIMITS.timeoutMs, LIMITS.grantBytes, LIMITS.partition, LIMITS.requestId].join("\n");
  return `${expires}.${createHmac("sha256", SECRET).update(text).digest("hex")}`;
}

describe("signatures across a rolling deploy", () => {
  const now = Date.now();

  it("a signature of the previous edge verifies", async () => {
    await expect(verifyRequest(SECRET, "GET", PATH, previousEdgeSignature(now), now, undefined, LIMITS)).resolves.toBe(now + 60_000);
  });

  it("a grant of work added to it fails", async () => {
    await expect(verifyRequest(SECRET, "GET", PATH, previousEdgeSignature(now), now, undefined, { ...LIMITS, grantWork: "59999" })).rejects.toThrow(/signature/);
  });

  it("a signed grant of work verifies only as sent", async () => {
    const signed = await signRequest(SECRET, "GET", PATH, now, { ...LIMITS, grantWork: "249" });
    await expect(verifyRequest(SECRET, "GET", PATH, signed, now, undefined, { ...LIMITS, grantWork: "249" })).resolves.toBe(now + 60_000);
    await expect(verifyRequest(SECRET, "GET", PATH, signed, now, undefined, { ...LIMITS, grantWork: "60000" })).rejects.toThrow(/signature/);
    await expect(verifyRequest(SECRET, "GET", PATH, signed, now, undefined, LIMITS)).rejects.toThrow(/signature/);
  });
});
