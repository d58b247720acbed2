// The decoder verifies what the previous edge signed (no grant of work); a grant of work added to,
// or dropped from, a signed request fails like any other changed limit. The request id every call
// now carries is signed where the previous decoder already read one, so a deploy that puts the
// edge first loses no request either.
import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { DECODER, REQUEST_ID_HEADER, SIGNATURE_HEADER, signedHeaders, signRequest, verifyRequest, type SignedLimits } from "../../shared/protocol";

const SECRET = "signing-compat-secret";
const PATH = "/v1/image/test-pattern/full/max/0/default.jpg?version=v1";
const LIMITS: SignedLimits = { timeoutMs: "30000", grantBytes: "1048576", partition: "tile", requestId: "r-1" };

/** A signature as the edge before the grant of work made it: seven lines, the limits in order. */
function previousEdgeSignature(now: number): string {
  const expires = now + 60_000;
  return `${expires}.${previousMac(["GET", PATH, expires, LIMITS.timeoutMs, LIMITS.grantBytes, LIMITS.partition, LIMITS.requestId])}`;
}

/** The MAC the previous decoder computed over a request's seven lines (an absent limit as "-"). */
const previousMac = (lines: unknown[]) => createHmac("sha256", SECRET).update(lines.join("\n")).digest("hex");

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

  it("a call without limits (an invalidation, a cancel) carries a fresh signed id the previous decoder verifies", async () => {
    const path = DECODER.invalidate("test-pattern");
    const [first, second] = [await signedHeaders(SECRET, "POST", path, {}, now), await signedHeaders(SECRET, "POST", path, {}, now)];
    expect(first[REQUEST_ID_HEADER]).toMatch(/^[0-9a-f-]{36}$/);
    expect(second[REQUEST_ID_HEADER]).not.toBe(first[REQUEST_ID_HEADER]);
    const [expires, mac] = first[SIGNATURE_HEADER].split(".");
    expect(mac).toBe(previousMac(["POST", path, expires, "-", "-", "-", first[REQUEST_ID_HEADER]]));
  });
});
