// The Worker and the admission DO inside workerd, in front of a real decoder that is frozen
// (SIGSTOP, see test/support/workers-global-setup.ts): an answer other than 408 proves the
// edge answered alone (validation, CORS, cache hits); a hung decode is a real one.
import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it, vi } from "vitest";
import { infoKey } from "../../edge/source-info";
import { decodedCacheKey } from "../../edge/handlers/cached-decode";
import worker from "../../edge/index";
import type { Env } from "../../edge/env";
import { BASE, get, heartbeat, metric, settled, squareSource } from "./helpers";

beforeEach(async () => {
  expect((await heartbeat()).status).toBe(204);
});

const info = squareSource("cached", [1000, 500]);

describe("edge worker in workerd", () => {
  it("answers malformed IIIF requests with 400, a message naming the fault and CORS, before any admission", async () => {
    await caches.default.put(infoKey({ id: "cached" }), Response.json(info, { headers: { "cache-control": "max-age=60" } }));
    const shape = "{region}/{size}/{rotation}/{quality}.{format}";
    for (const [path, message] of [
      ["/iiif/3/x/a,b,c,d/max/0/default.jpg", "region"],
      ["/iiif/3/x/full/full/0/default.jpg", "size"],
      ["/iiif/3/x/full/max/0/default.bmp", "format"],
      ["/iiif/3/x/full/max/999/default.jpg", "rotation"],
      ["/iiif/3/%E0%A4%A/info.json", "identifier"],
      // A malformed parameter is 400 before more segments than the shape make an unknown image
      // (below). A "\\" in a parameter (as in some of the IIIF validator's random ones) splits it
      // in two: the first reads as the identifier "x/full" with the size "0", the next with an
      // empty rotation.
      ["/iiif/3/a/b/full/nonsense/0/default.jpg", 'size "nonsense"'],
      ["/iiif/2/a/b/full/full/0/default.nope", 'format "nope"'],
      ["/iiif/3/x/full/max\\0/0/default.jpg", 'size "0"'],
      ["/iiif/3/x/full/max/0/\\ZTE^I.jpg", 'rotation ""'],
      ["/iiif/2/x/full/full/0/ZT\\EI.jpg", 'size "0"'],
      // Not the image route's shape: a segment too few (more make an unknown image, below).
      ["/iiif/2/x/full/full/default.jpg", shape],
      ["/iiif/3/x/default.jpg", shape],
      ["/iiif/3/x/full/max/default.jpg", shape],
      // Larger than the format's encoder writes: refused by the grammar alone, the (unknown)
      // source never looked up…
      ["/iiif/3/x/full/%5E100000000,/0/default.png", "exceeds 10000000 pixels a side"],
      ["/iiif/3/x/full/%5E65501,/0/default.jpg", "exceeds 65500 pixels a side"],
      ["/iiif/3/x/full/%5E16384,/0/default.webp", "exceeds 16383 pixels a side"],
      ["/iiif/2/x/full/65536,1/0/default.gif", "exceeds 65535 pixels a side"],
      ["/iiif/3/x/full/%5E!65501,65501/0/default.pdf", "exceeds 65500 pixels a side"],
      // …or once resolved: a percentage.
      ["/iiif/2/cached/0,0,1000,10/pct:1700/0/default.webp", "exceeds 16383 pixels a side"],
      // A size past what one core renders within these tests' 2 s REQUEST_TIMEOUT: past the
      // declared maxArea (the canvas an angle grows to is held to the format in iiif-grammar).
      ["/iiif/3/cached/full/%5E12000,/45/default.webp", "exceeds the server's maxWidth/maxHeight/maxArea"],
    ]) {
      const res = await get(path);
      expect(res.status, path).toBe(400);
      expect(res.headers.get("access-control-allow-origin")).toBe("*");
      const body = (await res.json()) as { error: string; message: string };
      expect(body.error).toBe("bad_request");
      expect(body.message, path).toContain(message);
    }
    expect(await metric("released_total")).toBe(0);
  });

  it("answers an identifier with an unescaped slash (more segments than the grammar) as an unknown image: 404 once its image parameters are well formed", async () => {
    await caches.default.put(infoKey({ id: "cached" }), Response.json(info, { headers: { "cache-control": "max-age=60" } }));
    for (const [path, id] of [
      ["/iiif/3/a/b/full/max/0/default.jpg", "a/b"],
      ["/iiif/2/a/b/full/full/0/default.jpg", "a/b"],
      ["/iiif/3/cached/x/full/max/0/default.jpg", "cached/x"], // a known source's id as a prefix
      ["/iiif/3/a/b/c/full/max/0/default.jpg", "a/b/c"],
      ["/iiif/3/a/b/info.json", "a/b"],
      ["/iiif/2/a/b/info.json", "a/b"],
      // URL parsing reads "\\" as "/": one segment becomes two.
      ["/iiif/3/a\\b/full/max/0/default.jpg", "a/b"],
    ]) {
      const res = await get(path);
      expect(res.status, path).toBe(404);
      expect(res.headers.get("access-control-allow-origin")).toBe("*");
      const body = (await res.json()) as { error: string; message: string };
      expect(body.error).toBe("not_found");
      expect(body.message, path).toContain(`"${id}"`);
    }
    expect(await metric("released_total")).toBe(0);
  });

  it("answers unknown routes with 404 and preflights with CORS", async () => {
    expect((await get("/nope")).status).toBe(404);
    const pre = await get("/iiif/3/x/info.json", { method: "OPTIONS", headers: { origin: "https://viewer.example" } });
    expect(pre.status).toBe(204);
    expect(pre.headers.get("access-control-allow-origin")).toBe("*");
  });

  it("redirects the base URI to info.json with 303", async () => {
    const res = await get("/iiif/3/abc", { redirect: "manual" });
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe(`${BASE}/iiif/3/abc/info.json`);
  });

  it("answers 408 when the decode hangs past REQUEST_TIMEOUT, and keeps the permit until the lease ends: the decoder's work never stopped", async () => {
    await settled();
    const released = await metric("released_total");
    const started = Date.now();
    const res = await get("/iiif/3/hangs/info.json");
    expect(res.status).toBe(408);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1900);
    expect(await metric("permits_in_use")).toBe(1);
    await settled(); // the alarm ends it LEASE_GRACE (1 s here) after the deadline
    expect(Date.now() - started).toBeGreaterThanOrEqual(2900);
    expect(await metric("released_total")).toBe(released + 1);
  });

  it("answers a client that goes away at once but keeps its permit until the decoder's work stops (disconnect emulated at the edge→DO hop: Miniflare's HTTP entry does not pass a client's disconnect on, Cloudflare does)", async () => {
    await settled();
    const released = await metric("released_total");
    const client = new AbortController();
    const admission = env.ADMISSION.get(env.ADMISSION.idFromName("default"));
    const pending = admission.fetch(new Request("https://admission/v1/info/hangs", { signal: client.signal }));
    const outcome = pending.then(() => "answered", () => "gone");
    // Admitted and forwarded to the frozen decoder (polled: a loaded machine takes a while).
    await expect.poll(() => metric("permits_in_use"), { timeout: 3000 }).toBe(1);
    client.abort();
    expect(await outcome).toBe("gone");
    await scheduler.wait(200);
    // The frozen decoder was told to stop (it cannot hear it) and never answers: the permit is
    // held until the lease's alarm, never handed to another request while the work may run.
    expect(await metric("permits_in_use")).toBe(1);
    await settled();
    expect(await metric("released_total")).toBe(released + 1);
  });

  it("serves info.json and a cached tile while the decoder hangs (cache hits never admit)", async () => {
    // Warm the edge cache the way a previous miss would have (fake: no Cloudflare network here).
    await caches.default.put(infoKey({ id: "cached" }), Response.json(info, { headers: { "cache-control": "max-age=60" } }));
    const tile = new Uint8Array([0xff, 0xd8, 0xff, 0xd9]);
    await caches.default.put(
      decodedCacheKey(BASE, "image", "cached", "0,0,256,256/256,256/0/default.jpg", "v1"),
      new Response(tile, { headers: { "content-type": "image/jpeg", "cache-control": "max-age=60" } }),
    );
    const released = await metric("released_total");

    const infoRes = await get("/iiif/3/cached/info.json");
    expect(infoRes.status).toBe(200);
    const doc = (await infoRes.json()) as { id: string; tiles: { scaleFactors: number[] }[] };
    expect(doc.id).toBe(`${BASE}/iiif/3/cached@v1`); // PLAIN_ID_MODE "snapshot": the current version
    expect(doc.tiles[0].scaleFactors).toEqual([1, 2]);

    // Equivalent spellings of the same tile find the same entry.
    for (const spelling of ["0,0,256,256/256,/0/default.jpg", "0,0,256,256/max/0/default.jpg"]) {
      const res = await get(`/iiif/3/cached/${spelling}`);
      expect(res.status).toBe(200);
      expect(res.headers.get("x-tessera-cache")).toBe("hit");
      expect(new Uint8Array(await res.arrayBuffer())).toEqual(tile);
    }
    expect(await metric("released_total")).toBe(released);
  });

  it("fails loudly on a bad variable, naming it", async () => {
    const badEnv: Env = { ...env, NTHREADS: "many" };
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    // A route that reads the config, and one that fails before reading it (an unknown route).
    for (const path of ["/iiif/3/x/info.json", "/no-such-route"]) {
      const res = await worker.fetch(new Request(`${BASE}${path}`), badEnv, createExecutionContext());
      expect(res.status, path).toBe(502);
      expect(((await res.json()) as { message: string }).message).toMatch(/NTHREADS must be a whole number/);
    }
    // The operator's log says it too, once a request, as one structured line with the request's id.
    expect(logged.mock.calls.map(([line]) => JSON.parse(String(line)))).toEqual([
      { level: "error", msg: expect.stringMatching(/NTHREADS must be a whole number/), requestId: expect.any(String) },
      { level: "error", msg: expect.stringMatching(/NTHREADS must be a whole number/), requestId: expect.any(String) },
    ]);
    logged.mockRestore();
  });
});

describe("the public address in ids and links", () => {
  const forged = { "x-forwarded-host": "evil.example", "x-forwarded-proto": "http" };
  const warm = async () => {
    await caches.default.put(infoKey({ id: "cached" }), Response.json(info, { headers: { "cache-control": "max-age=60" } }));
    await caches.default.put(
      decodedCacheKey(BASE, "image", "cached", "0,0,256,256/max/0/default.jpg", "v1"),
      new Response(new Uint8Array([0xff, 0xd8, 0xff, 0xd9]), { headers: { "content-type": "image/jpeg", "cache-control": "max-age=60" } }),
    );
  };
  const idOf = async (res: Response) => ((await res.json()) as { id: string }).id;

  it("ignores a client's X-Forwarded-Host/-Proto: the public info.json every viewer gets keeps the real address", async () => {
    await warm();
    const attacked = await get("/iiif/3/cached/info.json", { headers: forged });
    expect(await idOf(attacked)).toBe(`${BASE}/iiif/3/cached@v1`);
    // What a shared cache stores from the attacker's request is what the next viewer is sent.
    const viewer = await get("/iiif/3/cached/info.json");
    expect(attacked.headers.get("etag")).toBe(viewer.headers.get("etag"));
    const redirect = await get("/iiif/3/cached", { headers: forged, redirect: "manual" });
    expect(redirect.headers.get("location")).toBe(`${BASE}/iiif/3/cached/info.json`);
    const tile = await get("/iiif/3/cached/0,0,256,256/max/0/default.jpg", { headers: forged });
    expect(tile.headers.get("link")).toContain(`<${BASE}/iiif/3/cached/0,0,256,256/max/0/default.jpg>`);
    expect(tile.headers.get("link")).not.toContain("evil.example");
  });

  it("uses PUBLIC_BASE_URL when set, and forwarded headers only when TRUST_FORWARDED_HEADERS is true", async () => {
    await warm();
    const call = (vars: Partial<Env>, headers: Record<string, string> = forged) =>
      worker.fetch(new Request(`${BASE}/iiif/3/cached/info.json`, { headers }), { ...env, ...vars }, createExecutionContext());
    const pinned = { PUBLIC_BASE_URL: "https://tiles.example.org/maps/", TRUST_FORWARDED_HEADERS: "true" };
    expect(await idOf(await call(pinned))).toBe("https://tiles.example.org/maps/iiif/3/cached@v1");
    expect(await idOf(await call({ TRUST_FORWARDED_HEADERS: "true" }))).toBe("http://evil.example/iiif/3/cached@v1");
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    for (const [vars, name] of [
      [{ TRUST_FORWARDED_HEADERS: "yes" }, /TRUST_FORWARDED_HEADERS must be true or false/],
      [{ COALESCE: "off" }, /COALESCE must be true or false/],
      [{ PUBLIC_BASE_URL: "tiles.example.org" }, /PUBLIC_BASE_URL must be an absolute http\(s\) URL/],
    ] as const) {
      const res = await call(vars);
      expect(res.status).toBe(502);
      expect(((await res.json()) as { message: string }).message).toMatch(name);
    }
    logged.mockRestore();
  });
});

describe("a misconfigured edge", () => {
  it("answers REQUEST_TIMEOUT above the decoders' 600 s with a 502 naming it, never cached, before any admission", async () => {
    const released = await metric("released_total");
    for (const path of ["/iiif/3/x/info.json", "/iiif/3/x/full/max/0/default.jpg", "/tiles/x/WebMercatorQuad/0/0/0.png"]) {
      const res = await worker.fetch(new Request(`${BASE}${path}`), { ...env, REQUEST_TIMEOUT: "601" }, createExecutionContext());
      expect(res.status, path).toBe(502);
      expect(res.headers.get("cache-control")).toBe("no-store");
      expect(((await res.json()) as { message: string }).message).toContain("REQUEST_TIMEOUT must be a whole number from 1 to 600");
    }
    expect(await metric("released_total")).toBe(released);
  });
});

describe("GET /metrics", () => {
  const token = "metrics-test-token-4f1c";
  const scrape = (authorization?: string, vars: Partial<Env> = { METRICS_TOKEN: token }) =>
    worker.fetch(
      new Request(`${BASE}/metrics`, { headers: authorization ? { authorization } : {} }),
      { ...env, ...vars },
      createExecutionContext(),
    );

  it("with METRICS_TOKEN set, answers 401 without the bearer token (nor a wrong or partial one), 200 with it", async () => {
    for (const authorization of [undefined, "Bearer wrong", `Bearer ${token.slice(0, -1)}`, `Bearer ${token}x`, token, `Basic ${token}`]) {
      const res = await scrape(authorization);
      expect(res.status, authorization).toBe(401);
      expect(res.headers.get("www-authenticate")).toBe('Bearer realm="metrics"');
      expect(res.headers.get("cache-control")).toBe("no-store");
      expect(await res.text()).not.toContain("tessera_admission_");
    }
    const ok = await scrape(`Bearer ${token}`);
    expect(ok.status).toBe(200);
    expect(await ok.text()).toContain("tessera_admission_permits_total");
  });

  it("takes the scheme in any case and after any run of spaces, as HTTP authentication schemes are (RFC 7235)", async () => {
    for (const authorization of [`bearer ${token}`, `BEARER ${token}`, `Bearer  ${token}`]) {
      expect((await scrape(authorization)).status, authorization).toBe(200);
    }
    for (const authorization of [`Bearer${token}`, `Bearer ${token} extra`, `Bearerx ${token}`]) {
      expect((await scrape(authorization)).status, authorization).toBe(401);
    }
  });

  it("stays open when METRICS_TOKEN is unset", async () => {
    expect((await scrape(undefined, {})).status).toBe(200);
  });
});
