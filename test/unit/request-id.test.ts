// The request id rule, and the decoder's side of it: the id the edge sends is on the answer, in
// the request's log line and in its JSON error body; a hostile one is never echoed anywhere.
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LocalCatalog } from "../../regional/source/local";
import { isValidRequestId, X_REQUEST_ID } from "../../shared/request-id";
import { SAMPLES, signedGet, startDecoder, type Decoder } from "./regional-helpers";

const SAFE = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_".split("");
const validId = fc.array(fc.constantFrom(...SAFE), { minLength: 8, maxLength: 64 }).map((a) => a.join(""));
/** What an attacker sends: too short, too long, or with any character outside the safe set. */
const hostileId = fc.oneof(
  fc.array(fc.constantFrom(...SAFE), { maxLength: 7 }).map((a) => a.join("")),
  fc.array(fc.constantFrom(...SAFE), { minLength: 65, maxLength: 300 }).map((a) => a.join("")),
  fc
    .tuple(validId, fc.constantFrom("\r\n", "\n", '"', "'", " ", "é", "\u202e", "<", ";", "%0d%0a", "\0", ".", "/", "💥"), fc.nat())
    // Inside the id: a header's leading and trailing spaces are not part of its value.
    .map(([id, bad, at]) => id.slice(0, 1 + (at % (id.length - 1))) + bad + id.slice(1 + (at % (id.length - 1)))),
);

describe("the request id rule", () => {
  it("accepts 8 to 64 letters, digits, - and _", () => {
    fc.assert(fc.property(validId, (id) => isValidRequestId(id)));
  });
  it("refuses every other string", () => {
    fc.assert(fc.property(hostileId, (id) => !isValidRequestId(id)));
    for (const id of [null, undefined, "", "a".repeat(65)]) expect(isValidRequestId(id)).toBe(false);
  });
});

describe("the decoder and request ids", () => {
  let decoder: Decoder;
  beforeAll(async () => {
    decoder = await startDecoder(new LocalCatalog(SAMPLES));
  });
  afterAll(() => decoder.close());

  it("answers with the edge's id, and logs it on the request's line and in its error body", async () => {
    const id = "trace-Abc_123456";
    const res = await signedGet(decoder, "/v1/info/no-such-source", undefined, { [X_REQUEST_ID]: id });
    expect(res.status).toBe(404);
    expect(res.headers.get(X_REQUEST_ID)).toBe(id);
    expect(await res.json()).toMatchObject({ error: "not_found", requestId: id });
    expect(decoder.logs.find((l) => l.msg === "request" && l.requestId === id)).toMatchObject({ status: 404, path: "/v1/info/no-such-source" });
  });

  it("gives a request without a valid id one of its own, never echoing what was sent", async () => {
    await fc.assert(
      fc.asyncProperty(hostileId.filter((id) => !/[\r\n\0]/.test(id) && [...id].every((c) => c.charCodeAt(0) < 256)), async (hostile) => {
        const res = await fetch(`${decoder.url}/health`, { headers: { [X_REQUEST_ID]: hostile } });
        const given = res.headers.get(X_REQUEST_ID);
        expect(given).toMatch(/^[0-9a-f-]{36}$/);
        const line = decoder.logs.filter((l) => l.msg === "request").at(-1);
        expect(line?.requestId).toBe(given);
        // (Long enough not to occur in a log line by chance.)
        if (hostile.length >= 12) expect(JSON.stringify(decoder.logs)).not.toContain(JSON.stringify(hostile).slice(1, -1));
        await res.arrayBuffer();
      }),
      { numRuns: 50 },
    );
  });
});
