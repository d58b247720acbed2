// Restricted sources (IIIF Authorization Flow 2.0) through the real Worker, admission DO and
// working decoder, over slow.tif (a 1000² JPEG COG) and the UTM map sample, each restricted by
// the metadata the edge holds for it. The tests play the operator's login (they sign its
// assertion) and the viewer (they read the token page's message); the browser's side is
// test/e2e/auth-flow.test.ts. Cloudflare's CF-Connecting-IP cannot be set by a client there;
// here the tests set it as Cloudflare's network would.
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { SignJWT } from "jose";
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { Restriction } from "../../shared/access";
import type { SourceInfo } from "../../shared/protocol";
import type { Env } from "../../edge/env";
import worker from "../../edge/index";
import { forgetSourceInfo, infoKey } from "../../edge/source-info";
import { ACCESS_VARS, BASE, cacheSourceInfo, heartbeat, squareSource } from "./helpers";

const VIEWER = "https://viewer.example.org";
const LOGIN = ACCESS_VARS.AUTH_LOGIN_URL;
// Documents name the plain id (the snapshot mode, which these tests' config sets, is tested below).
const VARS: Partial<Env> = { ...ACCESS_VARS, PLAIN_ID_MODE: "revalidate" };
const TILE = "0,0,500,500/250,/0/default.jpg";

async function call(path: string, init?: RequestInit, vars: Partial<Env> = VARS): Promise<Response> {
  const ctx = createExecutionContext();
  const res = await worker.fetch(new Request(BASE + path, init), { ...env, ...vars }, ctx);
  const body = new Uint8Array(await res.arrayBuffer());
  await waitOnExecutionContext(ctx); // its cache writes are done before the next request
  return new Response(res.status === 304 ? null : body, res);
}

const key = (text: string) => new TextEncoder().encode(text);
const jwt = (claims: Record<string, unknown>, audience: string, secret: string, exp = Math.floor(Date.now() / 1000) + 60) =>
  new SignJWT(claims).setProtectedHeader({ alg: "HS256" }).setAudience(audience).setExpirationTime(exp).sign(key(secret));

/** The edge's metadata of `id` as the working decoder reported it, restricted as `access` says. */
async function restrict(id: string, probePath: string, access: Restriction | undefined): Promise<SourceInfo> {
  await forgetSourceInfo({ id });
  expect((await call(probePath, undefined, {})).status).toBeLessThan(500);
  const info = (await (await caches.default.match(infoKey({ id })))!.json()) as SourceInfo;
  await forgetSourceInfo({ id });
  const restricted = { ...info, ...(access && { access }) };
  await cacheSourceInfo(restricted);
  return restricted;
}

/** A login through the access service and the login's return, as a browser would make it: the session cookie. */
async function logIn(see: string[] = ["slow"], origin = VIEWER): Promise<string> {
  const start = await call(`/auth/active?origin=${encodeURIComponent(origin)}`, { redirect: "manual" });
  expect(start.status).toBe(302);
  const state = new URL(start.headers.get("location")!).searchParams.get("state")!;
  const loginCookie = cookieOf(start, "__Host-tessera-login");
  const assertion = await jwt({ sub: "reader-1", see, state }, "tessera-login", VARS.AUTH_LOGIN_KEY!);
  const back = await call("/auth/active/return", {
    method: "POST",
    body: new URLSearchParams({ assertion }),
    headers: { "content-type": "application/x-www-form-urlencoded", cookie: `__Host-tessera-login=${loginCookie}` },
  });
  expect(back.status).toBe(200);
  return cookieOf(back, "__Host-tessera-session");
}

function cookieOf(res: Response, name: string): string {
  const line = res.headers.getSetCookie().find((c) => c.startsWith(`${name}=`));
  expect(line, `Set-Cookie ${name}`).toBeDefined();
  return line!.slice(name.length + 1).split(";")[0];
}

const session = (value: string) => ({ headers: { cookie: `__Host-tessera-session=${value}` } });

/** The message the token page posts, and the origin it posts it to. */
async function tokenMessage(res: Response): Promise<{ message: Record<string, unknown>; target: string }> {
  const html = await res.text();
  const [, message, target] = /window\.parent\.postMessage\((\{.*\}), ("[^"]*")\);/.exec(html) ?? [];
  expect(message, html).toBeDefined();
  return { message: JSON.parse(message), target: JSON.parse(target) };
}

beforeEach(async () => {
  expect((await heartbeat({ url: env.TEST_WORKING_DECODER_URL, capacity: 4 })).status).toBe(204);
});

describe("a restricted source, anonymously", () => {
  beforeAll(async () => {
    await heartbeat({ url: env.TEST_WORKING_DECODER_URL, capacity: 4 });
    await restrict("slow", "/iiif/3/slow/info.json", { profile: "active", degradedWidth: 200 });
  });

  it("has an info.json anyone may read that declares the probe, the login, its token and logout services (3.0 and 2.1)", async () => {
    const info3 = await call("/iiif/3/slow/info.json");
    expect(info3.status).toBe(200);
    expect(info3.headers.get("cache-control")).toMatch(/^public/);
    const doc3 = (await info3.json()) as Record<string, unknown>;
    expect(doc3["@context"]).toEqual(["http://iiif.io/api/auth/2/context.json", "http://iiif.io/api/image/3/context.json"]);
    expect(doc3.service).toEqual([
      expect.objectContaining({
        id: `${BASE}/iiif/3/slow/probe`,
        type: "AuthProbeService2",
        service: [
          expect.objectContaining({
            id: `${BASE}/auth/active`,
            type: "AuthAccessService2",
            profile: "active",
            label: { en: ["Log in to Example Library"] },
            service: [
              expect.objectContaining({ id: `${BASE}/auth/active/token`, type: "AuthAccessTokenService2" }),
              { id: `${BASE}/auth/logout`, type: "AuthLogoutService2", label: { en: ["Log out of Example Library"] } },
            ],
          }),
        ],
      }),
    ]);
    const doc2 = (await (await call("/iiif/2/slow/info.json")).json()) as { service: Record<string, unknown>[] };
    expect(doc2.service[0]).toMatchObject({ "@context": "http://iiif.io/api/auth/2/context.json", id: `${BASE}/iiif/2/slow/probe`, type: "AuthProbeService2" });
  });

  it("gets 401 for an image, /file and a snapshot, naming the probe and the degraded image, and no cache may keep the refusal", async () => {
    const version = (await call("/iiif/3/slow/info.json")).headers.get("x-tessera-version")!;
    for (const path of [`/iiif/3/slow/${TILE}`, `/iiif/2/slow/${TILE}`, "/iiif/3/slow/file", `/iiif/3/slow@${encodeURIComponent(version)}/${TILE}`]) {
      const res = await call(path);
      expect(res.status, path).toBe(401);
      expect(res.headers.get("cache-control"), path).toBe("no-store");
      const { message } = (await res.json()) as { message: string };
      const own = path.includes("@") ? `slow@${encodeURIComponent(version)}` : "slow";
      expect(message).toContain(`${BASE}/iiif/3/${own}/probe`);
      expect(message).toContain(`${BASE}/iiif/3/${own}~degraded`);
    }
  });

  it("may see the degraded image: its own info.json, 200 pixels wide, and its tiles, public; finer detail is 401", async () => {
    const info = (await (await call("/iiif/3/slow~degraded/info.json")).json()) as Record<string, unknown>;
    expect(info).toMatchObject({ id: `${BASE}/iiif/3/slow~degraded`, width: 200, height: 200, maxWidth: 200 });
    expect(info.service).toBeUndefined();
    const full = await call("/iiif/3/slow~degraded/full/max/0/default.png");
    expect(full.status).toBe(200);
    expect(full.headers.get("cache-control")).toMatch(/^public/);
    expect(full.headers.get("link")).toContain(`<${BASE}/iiif/3/slow~degraded/full/max/0/default.png>`);
    const half = await call("/iiif/3/slow~degraded/0,0,100,100/100,/0/default.png");
    expect(half.status).toBe(200);
    for (const finer of ["/iiif/3/slow~degraded/0,0,50,50/^100,/0/default.png", "/iiif/3/slow~degraded/full/^400,/0/default.png", "/iiif/3/slow~degraded/full/^pct:101/0/default.png"]) {
      const res = await call(finer);
      expect(res.status, finer).toBe(401);
      expect(((await res.json()) as { message: string }).message).toContain("/iiif/3/slow/probe");
    }
    // In PLAIN_ID_MODE=snapshot its info.json names the degraded image of the current snapshot, which serves too.
    const pinned = (await (await call("/iiif/3/slow~degraded/info.json", undefined, { ...VARS, PLAIN_ID_MODE: "snapshot" })).json()) as { id: string };
    expect(pinned.id).toMatch(new RegExp(`^${BASE}/iiif/3/slow@[^/~]+~degraded$`));
    expect((await call(`${pinned.id.slice(BASE.length)}/full/max/0/default.png`)).status).toBe(200);
    expect((await call("/iiif/3/slow~degraded/probe")).status).toBe(404);
    expect((await call("/iiif/3/slow~degraded/file")).status).toBe(404);
  });

  it("probes 401 with the degraded image as the substitute, and the heading and note to show", async () => {
    const res = await call("/iiif/3/slow/probe");
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    expect(await res.json()).toEqual({
      "@context": "http://iiif.io/api/auth/2/context.json",
      type: "AuthProbeResult2",
      status: 401,
      substitute: [{ id: `${BASE}/iiif/3/slow~degraded`, type: "ImageService3", profile: "level2", label: { en: ["200 pixels wide, for anyone"] } }],
      heading: { en: ["This image is restricted"] },
      note: { en: ["Log in to Example Library to see it in full. Anyone may see it 200 pixels wide."] },
    });
    const preflight = await call("/iiif/3/slow/probe", { method: "OPTIONS", headers: { origin: VIEWER, "access-control-request-method": "GET", "access-control-request-headers": "authorization" } });
    expect(preflight.headers.get("access-control-allow-headers")).toContain("authorization");
  });

  it("keeps a snapshot restricted whose plain id is gone (an object deleted, its versions kept): the snapshot's own rule holds", async () => {
    await cacheSourceInfo({ ...squareSource("deleted-scan", [1000]), access: { profile: "active" } }, "v1");
    const res = await call(`/iiif/3/deleted-scan@v1/${TILE}`);
    expect(res.status).toBe(401);
  });

  it("is withheld (501) by an edge without AUTH_SECRET", async () => {
    for (const path of ["/iiif/3/slow/info.json", `/iiif/3/slow/${TILE}`, "/iiif/3/slow/probe"]) expect((await call(path, undefined, {})).status, path).toBe(501);
  });
});

describe("a restricted source, logged in", () => {
  beforeAll(async () => {
    await heartbeat({ url: env.TEST_WORKING_DECODER_URL, capacity: 4 });
    await restrict("slow", "/iiif/3/slow/info.json", { profile: "active", degradedWidth: 200 });
  });

  it("serves image, /file and 2.1 answers to the session cookie, private; the token page posts a token the probe accepts", async () => {
    const cookie = await logIn();
    for (const path of [`/iiif/3/slow/${TILE}`, `/iiif/2/slow/${TILE}`, "/iiif/3/slow/file"]) {
      const res = await call(path, session(cookie));
      expect(res.status, path).toBe(200);
      expect(res.headers.get("cache-control"), path).toBe("private, no-cache");
    }
    const page = await call(`/auth/active/token?messageId=m-1&origin=${encodeURIComponent(VIEWER)}`, session(cookie));
    expect(page.status).toBe(200);
    expect(page.headers.get("content-security-policy")).toContain(`frame-ancestors ${VIEWER}`);
    const { message, target } = await tokenMessage(page);
    expect(target).toBe(VIEWER);
    expect(message).toMatchObject({ "@context": "http://iiif.io/api/auth/2/context.json", type: "AuthAccessToken2", messageId: "m-1", expiresIn: expect.any(Number) });
    expect(message.expiresIn).toBeLessThanOrEqual(300);
    const probe = await call("/iiif/3/slow/probe", { headers: { authorization: `Bearer ${message.accessToken}`, origin: VIEWER } });
    expect(await probe.json()).toEqual({ "@context": "http://iiif.io/api/auth/2/context.json", type: "AuthProbeResult2", status: 200 });
  });

  it("sees in the degraded image exactly the source's pixels at 200 wide: one ETag, one cache entry", async () => {
    const degraded = await call("/iiif/3/slow~degraded/full/max/0/default.png");
    const whole = await call("/iiif/3/slow/full/200,200/0/default.png", session(await logIn()));
    expect([degraded.status, whole.status]).toEqual([200, 200]);
    expect(degraded.headers.get("etag")).toBe(whole.headers.get("etag"));
    expect(new Uint8Array(await degraded.arrayBuffer())).toEqual(new Uint8Array(await whole.arrayBuffer()));
  });

  it("never hands an anonymous client what the cache holds for a logged-in one, nor the other way round (the real Cache API, both orders)", async () => {
    const cookie = await logIn();
    // Logged in first: a miss, stored; then anonymous: 401, not the stored tile.
    const first = `/iiif/3/slow/0,0,400,400/200,/0/default.png`;
    const authorized = await call(first, session(cookie));
    expect([authorized.status, authorized.headers.get("x-tessera-cache")]).toEqual([200, "miss"]);
    expect((await call(first)).status).toBe(401);
    expect((await call(first, session(cookie))).headers.get("x-tessera-cache")).toBe("hit");
    // Anonymous first: 401; then logged in: the tile; then anonymous again: 401.
    const second = `/iiif/3/slow/400,400,400,400/200,/0/default.png`;
    const refused = await call(second);
    expect([refused.status, refused.headers.get("cache-control")]).toEqual([401, "no-store"]);
    const served = await call(second, session(cookie));
    expect([served.status, served.headers.get("content-type")]).toEqual([200, "image/png"]);
    expect((await call(second)).status).toBe(401);
    // A conditional request reveals nothing either: the gate comes before the ETag.
    expect((await call(second, { headers: { "if-none-match": served.headers.get("etag")! } })).status).toBe(401);
    expect((await call(second, { headers: { "if-none-match": served.headers.get("etag")!, ...session(cookie).headers } })).status).toBe(304);
  });

  it("lets the viewer the session was opened for read restricted answers with credentials (CORS), and no other page", async () => {
    const cookie = await logIn();
    const fromViewer = await call(`/iiif/3/slow/${TILE}`, { headers: { ...session(cookie).headers, origin: VIEWER } });
    expect(fromViewer.headers.get("access-control-allow-origin")).toBe(VIEWER);
    expect(fromViewer.headers.get("access-control-allow-credentials")).toBe("true");
    expect(fromViewer.headers.get("vary")).toContain("Origin");
    const elsewhere = await call(`/iiif/3/slow/${TILE}`, { headers: { ...session(cookie).headers, origin: "https://evil.example" } });
    expect(elsewhere.status).toBe(200); // an <img> on any page may show it; no script there may read it
    expect([elsewhere.headers.get("access-control-allow-origin"), elsewhere.headers.get("access-control-allow-credentials")]).toEqual(["*", null]);
    // Open answers stay readable by any page, without credentials.
    const open = await call("/iiif/3/slow~degraded/full/max/0/default.png", { headers: { ...session(cookie).headers, origin: VIEWER } });
    expect([open.headers.get("access-control-allow-origin"), open.headers.get("access-control-allow-credentials")]).toEqual(["*", null]);
  });

  it("ends with logout: the cookie is dropped", async () => {
    const res = await call("/auth/logout");
    expect(res.status).toBe(200);
    expect(res.headers.getSetCookie()).toEqual([expect.stringMatching(/^__Host-tessera-session=; Max-Age=0; Path=\/; Secure; HttpOnly; SameSite=None$/)]);
  });

  it("sets its session cookie host-only, HTTPS-only, out of scripts' reach and sent cross-site, for AUTH_SESSION_MAX_AGE", async () => {
    const start = await call(`/auth/active?origin=${encodeURIComponent(VIEWER)}`, { redirect: "manual" });
    const state = new URL(start.headers.get("location")!).searchParams.get("state")!;
    const back = await call("/auth/active/return?assertion=" + (await jwt({ sub: "r", see: ["*"], state }, "tessera-login", VARS.AUTH_LOGIN_KEY!)), {
      headers: { cookie: `__Host-tessera-login=${cookieOf(start, "__Host-tessera-login")}` },
    });
    const line = back.headers.getSetCookie().find((c) => c.startsWith("__Host-tessera-session="))!;
    expect(line).toMatch(/; Max-Age=3600; Path=\/; Secure; HttpOnly; SameSite=None$/);
    expect(back.headers.get("cache-control")).toBe("no-store");
  });
});

describe("hostile credentials", () => {
  beforeAll(async () => {
    await heartbeat({ url: env.TEST_WORKING_DECODER_URL, capacity: 4 });
    await restrict("slow", "/iiif/3/slow/info.json", { profile: "active" });
  });
  const secret = VARS.AUTH_SECRET!;
  const claims = { sub: "mallory", profile: "active", see: ["*"], origin: VIEWER };
  const refusedWith = async (cookie: string) => (await call(`/iiif/3/slow/${TILE}`, session(cookie))).status;

  it("refuses forged, expired, unsigned and wrongly-addressed session cookies, and a token passed off as a cookie", async () => {
    expect(await refusedWith(await jwt(claims, "tessera-session", "x".repeat(40)))).toBe(401); // another key
    expect(await refusedWith(await jwt(claims, "tessera-session", secret, Math.floor(Date.now() / 1000) - 1))).toBe(401); // expired
    expect(await refusedWith(await jwt(claims, "tessera-token", secret))).toBe(401); // a token, which any page script sees
    expect(await refusedWith(await jwt({ ...claims, see: "*" }, "tessera-session", secret))).toBe(401); // claims of the wrong shape
    const [, body] = (await jwt(claims, "tessera-session", secret)).split(".");
    expect(await refusedWith(`${btoa(JSON.stringify({ alg: "none", typ: "JWT" })).replace(/=+$/, "")}.${body}.`)).toBe(401); // alg "none"
    expect(await refusedWith("a".repeat(100_000))).toBe(401); // too long to read
    expect(await refusedWith(await jwt(claims, "tessera-session", secret))).toBe(200); // the control: a good one passes
  });

  it("refuses a session for other sources, and a token for another source at the probe", async () => {
    const other = { ...claims, see: ["slower", "other-*"] };
    expect(await refusedWith(await jwt(other, "tessera-session", secret))).toBe(401);
    const token = await jwt(other, "tessera-token", secret);
    expect(await (await call("/iiif/3/slow/probe", { headers: { authorization: `Bearer ${token}` } })).json()).toMatchObject({ status: 401 });
    // A good token replayed from another page's origin, and a session cookie as a bearer.
    const good = await jwt(claims, "tessera-token", secret);
    expect(await (await call("/iiif/3/slow/probe", { headers: { authorization: `Bearer ${good}`, origin: "https://evil.example" } })).json()).toMatchObject({ status: 401 });
    const asBearer = await jwt(claims, "tessera-session", secret);
    expect(await (await call("/iiif/3/slow/probe", { headers: { authorization: `Bearer ${asBearer}` } })).json()).toMatchObject({ status: 401 });
  });

  it("refuses a replayed or foreign login answer: no session without this browser's state", async () => {
    const start = await call(`/auth/active?origin=${encodeURIComponent(VIEWER)}`, { redirect: "manual" });
    const loginCookie = `__Host-tessera-login=${cookieOf(start, "__Host-tessera-login")}`;
    const state = new URL(start.headers.get("location")!).searchParams.get("state")!;
    const answer = async (assertion: string, cookie = loginCookie) =>
      call(`/auth/active/return?assertion=${assertion}`, { headers: cookie ? { cookie } : {} });
    const noSession = (res: Response) => !res.headers.getSetCookie().some((c) => c.startsWith("__Host-tessera-session=") && !c.includes("Max-Age=0"));
    for (const [why, res] of [
      ["without the state cookie", await answer(await jwt({ sub: "r", see: ["*"], state }, "tessera-login", VARS.AUTH_LOGIN_KEY!), "")],
      ["for another state", await answer(await jwt({ sub: "r", see: ["*"], state: "another" }, "tessera-login", VARS.AUTH_LOGIN_KEY!))],
      ["signed with the edge's own secret", await answer(await jwt({ sub: "r", see: ["*"], state }, "tessera-login", secret))],
      ["a state cookie as the answer", await answer(cookieOf(start, "__Host-tessera-login"))],
      ["valid for a day", await answer(await jwt({ sub: "r", see: ["*"], state }, "tessera-login", VARS.AUTH_LOGIN_KEY!, Math.floor(Date.now() / 1000) + 86400))],
    ] as const) {
      expect(res.status, why).toBe(400);
      expect(noSession(res), why).toBe(true);
    }
  });

  it("never redirects anywhere but the operator's login, with this edge's own return", async () => {
    const res = await call(`/auth/active?origin=${encodeURIComponent(VIEWER)}&return_to=https://evil.example/steal&redirect=https://evil.example`, { redirect: "manual" });
    const location = new URL(res.headers.get("location")!);
    expect(`${location.origin}${location.pathname}`).toBe("https://login.example.org/start");
    expect(location.searchParams.get("realm")).toBe("reading");
    expect(location.searchParams.get("return_to")).toBe(`${BASE}/auth/active/return`);
    for (const origin of ["https://evil.example/path", "javascript:alert(1)", "https://viewer.example.org\r\nSet-Cookie: x=1", "null", ""]) {
      const bad = await call(`/auth/active?origin=${encodeURIComponent(origin)}`, { redirect: "manual" });
      expect(bad.status, origin).toBe(400);
      expect(bad.headers.get("location")).toBeNull();
    }
    // The return never redirects, whatever it is given.
    expect((await call("/auth/active/return?assertion=x&return_to=https://evil.example", { redirect: "manual" })).headers.get("location")).toBeNull();
  });

  it("posts a token only to the origin the session was opened for: another origin gets invalidOrigin", async () => {
    const cookie = await logIn(["*"], VIEWER);
    const page = await call(`/auth/active/token?messageId=m&origin=${encodeURIComponent("https://evil.example")}`, session(cookie));
    const { message, target } = await tokenMessage(page);
    expect(target).toBe("https://evil.example");
    expect(message).toMatchObject({ type: "AuthAccessTokenError2", profile: "invalidOrigin", messageId: "m" });
    expect(message.accessToken).toBeUndefined();
    const anonymous = await tokenMessage(await call(`/auth/active/token?messageId=m&origin=${encodeURIComponent(VIEWER)}`));
    expect(anonymous.message).toMatchObject({ type: "AuthAccessTokenError2", profile: "missingAspect" });
    const expired = await jwt({ ...claims, origin: VIEWER }, "tessera-session", secret, Math.floor(Date.now() / 1000) - 5);
    expect((await tokenMessage(await call(`/auth/active/token?messageId=m&origin=${encodeURIComponent(VIEWER)}`, session(expired)))).message).toMatchObject({ profile: "expiredAspect" });
  });

  it("writes no client text into the token page's markup or headers (messageId and origin as an attacker sends them)", async () => {
    const messageId = `</script><script>alert(1)</script>\u2028"'\r\nSet-Cookie: stolen=1`;
    const res = await call(`/auth/active/token?messageId=${encodeURIComponent(messageId)}&origin=${encodeURIComponent(VIEWER)}`);
    const html = await res.clone().text();
    expect(html.match(/<script>/g)).toHaveLength(1);
    expect(html).not.toContain("</script><script>");
    expect(res.headers.getSetCookie()).toEqual([]);
    expect((await tokenMessage(res)).message.messageId).toBe(messageId); // the client still gets its id back, intact
    // The one script the page may run is the one it has: its digest is in the policy.
    const script = /<script>(.*)<\/script>/.exec(html)![1];
    const digest = btoa(String.fromCharCode(...new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(script)))));
    expect(res.headers.get("content-security-policy")).toContain(`script-src 'sha256-${digest}'`);
    const badOrigin = await call(`/auth/active/token?messageId=m&origin=${encodeURIComponent("https://viewer.example.org\r\nX-Injected: 1")}`);
    expect(badOrigin.status).toBe(400);
    expect(badOrigin.headers.get("x-injected")).toBeNull();
    expect(await badOrigin.text()).not.toContain("<script>");
    expect((await tokenMessage(await call(`/auth/active/token?messageId=${"m".repeat(257)}&origin=${encodeURIComponent(VIEWER)}`))).message).toMatchObject({ profile: "invalidRequest" });
  });
});

describe("kiosk and external sources (CF-Connecting-IP set as Cloudflare's network sets it)", () => {
  beforeAll(async () => {
    await heartbeat({ url: env.TEST_WORKING_DECODER_URL, capacity: 4 });
    await restrict("slow", "/iiif/3/slow/info.json", { profile: "kiosk" });
  });

  it("kiosk: a reading-room address sees the image and gets a token; any other does not, whatever cookie it brings", async () => {
    const inRoom = { headers: { "cf-connecting-ip": "192.0.2.7" } };
    expect((await call(`/iiif/3/slow/${TILE}`, inRoom)).status).toBe(200);
    expect((await call(`/iiif/3/slow/${TILE}`, { headers: { "cf-connecting-ip": "198.51.100.7" } })).status).toBe(401);
    const loggedIn = await jwt({ sub: "r", profile: "active", see: ["*"] }, "tessera-session", VARS.AUTH_SECRET!);
    expect((await call(`/iiif/3/slow/${TILE}`, { headers: { "cf-connecting-ip": "198.51.100.7", cookie: `__Host-tessera-session=${loggedIn}` } })).status).toBe(401);
    expect((await call("/auth/kiosk?origin=https://kiosk.example", inRoom)).status).toBe(200);
    expect((await call("/auth/kiosk?origin=https://kiosk.example", { headers: { "cf-connecting-ip": "198.51.100.7" } })).status).toBe(403);
    const { message } = await tokenMessage(await call("/auth/kiosk/token?messageId=k&origin=https://kiosk.example", inRoom));
    expect(message).toMatchObject({ type: "AuthAccessToken2" });
    const info = (await (await call("/iiif/3/slow/info.json")).json()) as { service: { service: Record<string, unknown>[] }[] };
    expect(info.service[0].service[0]).toMatchObject({ id: `${BASE}/auth/kiosk`, profile: "kiosk", service: [{ id: `${BASE}/auth/kiosk/token` }] });
  });

  it("external: a header vouches only when the operator names it, and only with its value; the probe answers for the request itself", async () => {
    await restrict("slow", "/iiif/3/slow/info.json", { profile: "external" });
    const sent = { headers: { "x-library-member": "yes" } };
    expect((await call(`/iiif/3/slow/${TILE}`, sent)).status).toBe(401); // the operator did not say to trust it
    const trusting = { ...VARS, AUTH_EXTERNAL_HEADER: "X-Library-Member: yes" };
    expect((await call(`/iiif/3/slow/${TILE}`, { headers: { "x-library-member": "no" } }, trusting)).status).toBe(401);
    expect((await call(`/iiif/3/slow/${TILE}`, sent, trusting)).status).toBe(200);
    expect(await (await call("/iiif/3/slow/probe", sent, trusting)).json()).toMatchObject({ status: 200 });
    expect(await (await call("/iiif/3/slow/probe", sent)).json()).toMatchObject({ status: 401 });
    const info = (await (await call("/iiif/3/slow/info.json")).json()) as { service: { service: Record<string, unknown>[] }[] };
    expect(info.service[0].service[0]).toEqual(expect.objectContaining({ type: "AuthAccessService2", profile: "external", service: [expect.objectContaining({ id: `${BASE}/auth/external/token` })] }));
    expect(info.service[0].service[0].id).toBeUndefined();
  });
});

describe("a restricted map", () => {
  beforeAll(async () => {
    await heartbeat({ url: env.TEST_WORKING_DECODER_URL, capacity: 4 });
    await restrict("utm-quadrants", "/tiles/utm-quadrants/WebMercatorQuad/tilejson.json", { profile: "active" });
  });

  it("answers tiles, TileJSON and WMTS to the session cookie (private) and 401 without it", async () => {
    const cookie = await logIn(["utm-*"]);
    for (const path of ["/tiles/utm-quadrants/WebMercatorQuad/tilejson.json", "/tiles/utm-quadrants/WebMercatorQuad/WMTSCapabilities.xml", "/tiles/utm-quadrants/WebMercatorQuad/12/2219/1427.png"]) {
      const refused = await call(path);
      expect([refused.status, refused.headers.get("cache-control")], path).toEqual([401, "no-store"]);
      const seen = await call(path, session(cookie));
      expect([seen.status, seen.headers.get("cache-control")], path).toEqual([200, "private, no-cache"]);
    }
    expect((await call("/tiles/utm-quadrants~degraded/WebMercatorQuad/tilejson.json", session(cookie))).status).toBe(404);
  });
});

describe("the AUTH_* variables", () => {
  it("name what is wrong with them on every route, never serving restricted sources on a half-read setting", async () => {
    for (const [vars, named] of [
      [{ AUTH_SECRET: "short" }, /AUTH_SECRET.*32 characters/],
      [{ AUTH_LOGIN_URL: LOGIN, AUTH_LOGIN_KEY: "" }, /AUTH_LOGIN_KEY/],
      [{ AUTH_LOGIN_KEY: "k".repeat(40), AUTH_LOGIN_URL: "" }, /AUTH_LOGIN_URL/],
      [{ AUTH_LOGIN_URL: "https://user:pw@login.example.org/" }, /AUTH_LOGIN_URL.*credentials/],
      [{ AUTH_KIOSK_ADDRESSES: "192.0.2.0/24, 10/8" }, /AUTH_KIOSK_ADDRESSES.*"10\/8"/],
      [{ AUTH_EXTERNAL_HEADER: "X-Member yes" }, /AUTH_EXTERNAL_HEADER/],
      [{ AUTH_SESSION_MAX_AGE: "5" }, /AUTH_SESSION_MAX_AGE/],
      [{ AUTH_SECRET: "" }, /AUTH_SECRET must be set with AUTH_LOGIN_URL/],
    ] as const) {
      const res = await call("/iiif/3/slow/info.json", undefined, { ...VARS, ...vars });
      expect(res.status, JSON.stringify(vars)).toBe(502);
      expect(((await res.json()) as { message: string }).message).toMatch(named);
    }
  });
});
