// The edge's request id, through the real Worker: the client's own when valid, else cf-ray, else
// a UUID; on every answer (a cache hit gets its own request's id, not the stored one's) and in
// every JSON error body; a hostile id is replaced, never echoed.
import { env } from "cloudflare:workers";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { get, heartbeat } from "./helpers";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const withId = (id: string, headers: Record<string, string> = {}) => ({ headers: { "x-request-id": id, ...headers } });

beforeAll(async () => {
  expect((await heartbeat({ url: env.TEST_WORKING_DECODER_URL, capacity: 4 })).status).toBe(204);
});

describe("the request id at the edge", () => {
  it("answers a miss and then a hit of the same tile each with its own request's id", async () => {
    const tile = "/iiif/3/published/128,128,64,64/64,/0/default.jpg";
    const miss = await get(tile, withId("first-request-0001"));
    expect([miss.status, miss.headers.get("x-tessera-cache"), miss.headers.get("x-request-id")]).toEqual([200, "miss", "first-request-0001"]);
    await miss.arrayBuffer();
    const hit = await get(tile, withId("second_request_0002"));
    expect([hit.status, hit.headers.get("x-tessera-cache"), hit.headers.get("x-request-id")]).toEqual([200, "hit", "second_request_0002"]);
  });

  it("lets a page on any origin read it, and the other headers a viewer uses, on every answer: miss, hit, info.json, error", async () => {
    // A browser hides every header of a cross-origin answer that the answer itself does not
    // expose: on a preflight, Access-Control-Expose-Headers means nothing.
    const origin = { origin: "https://viewer.example" };
    const tile = "/iiif/3/published/192,128,64,64/64,/0/default.jpg";
    for (const [path, status, cache] of [[tile, 200, "miss"], [tile, 200, "hit"], ["/iiif/3/published/info.json", 200, null], ["/iiif/3/published/bogus/max/0/default.jpg", 400, null]] as const) {
      const res = await get(path, withId("cross-origin-01", origin));
      await res.arrayBuffer();
      expect([res.status, res.headers.get("x-tessera-cache")], path).toEqual([status, cache]);
      expect(res.headers.get("access-control-allow-origin"), path).toBe("*");
      const exposed = (res.headers.get("access-control-expose-headers") ?? "").toLowerCase().split(/\s*,\s*/);
      expect(exposed, path).toEqual(expect.arrayContaining(["x-request-id", "etag", "link", "x-tessera-cache", "x-tessera-version"]));
    }
  });

  it("puts the id in every JSON error body, a refusal from the decoder's side included", async () => {
    for (const [path, status] of [["/no/such/route", 404], ["/iiif/3/no-such-source/info.json", 404], ["/iiif/3/published/bogus/max/0/default.jpg", 400]] as const) {
      for (const id of ["error-body-id-1", "error-body-id-2"]) {
        const res = await get(path, withId(id));
        expect(res.status, path).toBe(status);
        expect(res.headers.get("x-request-id"), path).toBe(id);
        expect(await res.json(), path).toMatchObject({ requestId: id });
      }
    }
  });

  it("falls back to cf-ray, then to a fresh UUID", async () => {
    const ray = await get("/tileMatrixSets", { headers: { "cf-ray": "8f1e2d3c4b5a6978-AMS" } });
    expect(ray.headers.get("x-request-id")).toBe("8f1e2d3c4b5a6978-AMS");
    const [a, b] = [await get("/tileMatrixSets"), await get("/tileMatrixSets")];
    expect(a.headers.get("x-request-id")).toMatch(UUID);
    expect(b.headers.get("x-request-id")).toMatch(UUID);
    expect(a.headers.get("x-request-id")).not.toBe(b.headers.get("x-request-id"));
  });

  it("replaces a hostile id (too short, too long, quotes, spaces, unicode, separators) and never echoes it", async () => {
    const safe = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_".split("");
    const hostile = fc.oneof(
      fc.array(fc.constantFrom(...safe), { minLength: 1, maxLength: 7 }).map((a) => a.join("")),
      fc.array(fc.constantFrom(...safe), { minLength: 65, maxLength: 400 }).map((a) => a.join("")),
      fc
        .tuple(fc.array(fc.constantFrom(...safe), { minLength: 8, maxLength: 40 }), fc.constantFrom('"', "'", " x", "<script>", ";", ",", ".", "/", "%0d%0a", "\t"), fc.nat())
        // Inside the id: a header's leading and trailing spaces are not part of its value.
        .map(([a, bad, at]) => a.slice(0, 1 + (at % (a.length - 1))).join("") + bad + a.slice(1 + (at % (a.length - 1))).join("")),
    );
    await fc.assert(
      fc.asyncProperty(hostile, async (id) => {
        const res = await get("/no/such/route", { headers: { "x-request-id": id, "cf-ray": id } });
        const given = res.headers.get("x-request-id");
        expect(given).toMatch(UUID);
        expect(((await res.json()) as { requestId: string }).requestId).toBe(given);
      }),
      { numRuns: 60 },
    );
    // Unicode too (once: workerd warns of every non-ASCII header value it is handed).
    const unicode = await get("/no/such/route", { headers: { "x-request-id": "trace-id-\u00e9t\u00e9-1" } });
    expect(unicode.headers.get("x-request-id")).toMatch(UUID);
  });
});
