// IIIF Authorization Flow 2.0 in a real browser: Chromium runs the client page
// (test/support/auth-client.html) on its own site against the real stack, with a restricted
// source (a catalog entry beside its file, degraded to 250 px for anyone) and an open one, and a
// test login on a third site. What a user sees is checked on the viewer's pixels: before login
// the degraded image (an edge between two of the pattern's squares blurred by the upscale),
// after it the full image (the same edge sharp), after logout the degraded one again. Between
// them: the cookie as the browser stored it, and 401 for a tile without it.
//
// What Chromium does with the edge's cookie here, on plain HTTP, the viewer on another site:
// - `__Host-`, Secure, SameSite=None on http://127.0.0.1: stored and sent as on HTTPS, since
//   Chromium counts loopback addresses as trustworthy for cookies. No flag is needed, and the
//   edge's attributes stay as deployed.
// - Third-party cookies: this Chromium blocks them by default (DevTools names the blocked
//   cookie's reason UserPreferences), in Playwright's contexts and in a new profile alike. Then
//   the login succeeds (its window is the edge's own site), but the token service, framed by the
//   viewer, sees no session, and the viewer's tile requests carry none: the last test shows that.
//   The flow itself runs on a profile that allows them, the one preference a user changes in
//   Chromium's settings (launchChromiumWithThirdPartyCookies), which is narrower than any flag.
import { randomBytes } from "node:crypto";
import { copyFile, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT } from "../../infra/root";
import { startStack, type Stack } from "../../infra/local/stack";
import { startAuthClient, startLogin, type LoginSite, type Site } from "../support/auth-sites";
import { launchChromium, launchChromiumWithThirdPartyCookies, patchMean, settleViewer, type Rgb } from "../support/browser";
import { TEST_PATTERN_PNG } from "../support/pixels";

const RESTRICTED = "restricted";
const DEGRADED_WIDTH = 250;
const SESSION_COOKIE = "__Host-tessera-session";
const SESSION_MAX_AGE = 3600; // the edge's default AUTH_SESSION_MAX_AGE
// The pattern is 1000 px wide, 10×10 flat squares of 100 px. The view: one screen pixel an image
// pixel, centred on the edge at x = 800 between square (7, 6), almost black, and square (8, 6),
// pink: the full image draws it in one pixel, the degraded one (4 image pixels a pixel of its own,
// drawn 4× larger and smoothed) in four (measured on every row, in every run so far).
const PATTERN_WIDTH = 1000;
const SQUARE = 100;
const VIEW = { centre: { x: 800, y: 650 }, scale: 1 };
const EDGE = { x: 800, rows: [620, 680] as const };
/** Most pixels between 10 % and 90 % of the way from one square's colour to the other's, along a row. */
const SHARP_EDGE_PX = 2;
/** Fewest such pixels for the degraded image: a quarter of the resolution spreads the edge over about four. */
const BLURRED_EDGE_PX = 3;
const COLOUR_TOLERANCE = 16; // max difference of any channel at a square's centre, as in viewer.test.ts
// A 72 px header above a 480×360 viewer.
const WINDOW = { width: 480, height: 432 };
const LOAD_TIMEOUT = 15_000;

// The page's globals, used inside page.evaluate (this Node program has no DOM types).
declare const window: { viewer: any; auth: { phase: string; shown: string | null; ignoredMessages: number; error: string | null } };
declare const OpenSeadragon: { Point: new (x: number, y: number) => unknown };

let dataDir: string;
let stack: Stack;
let client: Site;
let login: LoginSite;
let chromium: { context: BrowserContext; close(): Promise<void> };
/** Chromium as it comes, third-party cookies blocked: for a browser without the cookie. */
let plain: Browser;
let context: BrowserContext;
let page: Page;
let pattern: { data: Buffer; width: number };
const responses: { url: string; status: number }[] = [];
const pageErrors: string[] = [];

beforeAll(async () => {
  const png = await sharp(TEST_PATTERN_PNG).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  pattern = { data: png.data, width: png.info.width };
  // The decoder's data directory: the test pattern open, and a copy of it restricted by its
  // catalog entry beside it (the decoder reports the rule; the edge enforces it).
  dataDir = await mkdtemp(path.join(tmpdir(), "tessera-auth-flow-"));
  await copyFile(`${ROOT}samples/test-pattern.tif`, path.join(dataDir, "test-pattern.tif"));
  await copyFile(`${ROOT}samples/test-pattern.tif`, path.join(dataDir, `${RESTRICTED}.tif`));
  await writeFile(path.join(dataDir, `${RESTRICTED}.tessera.json`), JSON.stringify({ access: { profile: "active", degradedWidth: DEGRADED_WIDTH } }));
  const loginKey = randomBytes(32).toString("hex");
  login = await startLogin({ key: loginKey, sub: "reader-1", see: ["*"] });
  stack = await startStack({
    decoderEnv: { TESSERA_SOURCE: "local", TESSERA_DATA_DIR: dataDir },
    vars: { AUTH_SECRET: randomBytes(32).toString("hex"), AUTH_LOGIN_URL: `${login.origin}/login`, AUTH_LOGIN_KEY: loginKey, AUTH_INSTITUTION: "Test Library" },
  });
  login.edgeUrl = stack.url;
  client = await startAuthClient(stack.url);
  chromium = await launchChromiumWithThirdPartyCookies(["--disable-gpu"], { viewport: WINDOW, deviceScaleFactor: 1 });
  plain = await launchChromium(["--disable-gpu"]);
  context = chromium.context;
  context.setDefaultTimeout(LOAD_TIMEOUT);
  page = context.pages()[0] ?? (await context.newPage());
  page.on("response", (res) => {
    if (res.url().startsWith(`${stack.url}/`)) responses.push({ url: res.url(), status: res.status() });
  });
  page.on("pageerror", (err) => pageErrors.push(String(err)));
});

afterAll(async () => {
  await chromium?.close();
  await plain?.close();
  await client?.close();
  await login?.close();
  await stack?.stop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

/** Waits until the client shows `phase` ("degraded", "full") and returns the service it shows. */
async function shown(phase: string): Promise<string> {
  await page.waitForFunction((phase) => window.auth !== undefined && (window.auth.phase === phase || window.auth.error !== null), phase);
  const state = await page.evaluate(() => window.auth);
  expect(state.error).toBeNull();
  expect(state.phase).toBe(phase);
  return state.shown!;
}

/** Moves the viewport to VIEW at once and resolves once OSD has loaded and drawn every tile it needs. */
const settle = () => settleViewer(page, LOAD_TIMEOUT, { ...VIEW, imageWidth: PATTERN_WIDTH });

interface Screen {
  data: Buffer;
  width: number;
  height: number;
  channels: number;
  /** Element pixel of a pattern pixel. */
  at: Map<string, { x: number; y: number }>;
}

/** A screenshot of the viewer, with where the given pattern pixels are on it. */
async function screen(points: { x: number; y: number }[]): Promise<Screen> {
  const placed = await page.evaluate(
    ({ points, width }) =>
      points.map((p) => {
        const at = window.viewer.viewport.pixelFromPoint(new OpenSeadragon.Point(p.x / width, p.y / width), true);
        return { key: `${p.x},${p.y}`, x: Math.round(at.x), y: Math.round(at.y) };
      }),
    { points, width: PATTERN_WIDTH },
  );
  const shot = await sharp(await page.locator("#viewer").screenshot())
    .removeAlpha()
    .raw()
    .toBuffer({ resolveWithObject: true });
  return { data: shot.data, ...shot.info, at: new Map(placed.map(({ key, x, y }) => [key, { x, y }])) };
}

const pixel = (s: Screen, x: number, y: number): Rgb => {
  const i = (y * s.width + x) * s.channels;
  return [s.data[i], s.data[i + 1], s.data[i + 2]];
};
const mean = (colours: Rgb[]): Rgb => [0, 1, 2].map((c) => colours.reduce((sum, p) => sum + p[c], 0) / colours.length) as Rgb;

/**
 * How many pixels the edge at EDGE.x takes on screen, the median over the rows between
 * EDGE.rows: along each row, the pixels between 10 % and 90 % of the way from the left square's
 * colour to the right one's (each measured 10 to 16 pixels from the edge).
 */
async function edgeWidth(): Promise<{ px: number; contrast: number }> {
  const rows = [];
  for (let y = EDGE.rows[0]; y <= EDGE.rows[1]; y += 4) rows.push({ x: EDGE.x, y });
  const s = await screen(rows);
  const widths: number[] = [];
  let contrast = Infinity;
  for (const row of rows) {
    const { x: ex, y } = s.at.get(`${row.x},${row.y}`)!;
    const span = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => pixel(s, ex + from + i, y));
    const a = mean(span(-16, -10));
    const b = mean(span(10, 16));
    const d = b.map((v, c) => v - a[c]);
    const norm = d.reduce((sum, v) => sum + v * v, 0);
    contrast = Math.min(contrast, Math.sqrt(norm));
    const between = span(-10, 10).filter((p) => {
      const t = p.reduce((sum, v, c) => sum + (v - a[c]) * d[c], 0) / norm;
      return t > 0.1 && t < 0.9;
    });
    widths.push(between.length);
  }
  widths.sort((x, y) => x - y);
  return { px: widths[Math.floor(widths.length / 2)], contrast };
}

/** The colour at the centre of every square on screen against the pattern's; returns how many were compared. */
async function checkColours(): Promise<number> {
  const centres = [];
  for (let row = 0; row < 10; row++) for (let col = 0; col < 10; col++) centres.push({ x: col * SQUARE + SQUARE / 2, y: row * SQUARE + SQUARE / 2 });
  const s = await screen(centres);
  const margin = 4;
  const mismatches = [];
  let compared = 0;
  for (const c of centres) {
    const { x, y } = s.at.get(`${c.x},${c.y}`)!;
    if (x < margin || y < margin || x >= s.width - margin || y >= s.height - margin) continue;
    compared++;
    const seen = patchMean(s.data, s.width, s.channels, x, y);
    const i = (c.y * pattern.width + c.x) * 3;
    const want = [pattern.data[i], pattern.data[i + 1], pattern.data[i + 2]];
    if (Math.max(...seen.map((v, k) => Math.abs(v - want[k]))) > COLOUR_TOLERANCE) mismatches.push({ square: [c.x, c.y], seen, want });
  }
  expect(mismatches).toEqual([]);
  return compared;
}

const tileResponses = () => responses.filter((r) => /\/iiif\/3\/[^/]+\/[^/]+\/[^/]+\/[^/]+\/[^/]+$/.test(new URL(r.url).pathname));
const fullTile = () => `${stack.url}/iiif/3/${RESTRICTED}/700,600,200,100/200,100/0/default.jpg`;

describe("a restricted image in a viewer on another site (Authorization Flow 2.0, Chromium)", () => {
  let before = 0;

  it("anonymously: the probe's 401, its heading and note, a Log in button, and the degraded substitute, its edges blurred", async () => {
    await page.goto(`${client.url}?edge=${encodeURIComponent(stack.url)}&id=${RESTRICTED}`);
    expect(await shown("degraded")).toBe(`${stack.url}/iiif/3/${RESTRICTED}~degraded`);
    expect(await page.textContent("#heading")).toBe("This image is restricted");
    expect(await page.textContent("#note")).toBe(`Log in to Test Library to see it in full. Anyone may see it ${DEGRADED_WIDTH} pixels wide.`);
    expect(await page.textContent("#access-heading")).toBe("Please log in");
    expect(await page.textContent("#login")).toBe("Log in");
    expect(await page.evaluate(() => window.viewer.world.getItemAt(0).source.width)).toBe(DEGRADED_WIDTH);
    await settle();
    const edge = await edgeWidth();
    expect(edge.contrast).toBeGreaterThan(200); // the two squares are far apart in colour
    expect(edge.px).toBeGreaterThanOrEqual(BLURRED_EDGE_PX);
    expect(await checkColours()).toBeGreaterThanOrEqual(9);
    // Only the degraded image's tiles were asked for, and each was served.
    const tiles = tileResponses();
    expect(tiles.length).toBeGreaterThan(0);
    expect(tiles.filter((r) => !r.url.startsWith(`${stack.url}/iiif/3/${RESTRICTED}~degraded/`) || r.status !== 200)).toEqual([]);
    expect((await context.cookies(stack.url)).map((c) => c.name)).not.toContain(SESSION_COOKIE);
    before = responses.length;
  });

  it("logs in through the access service's window and the login's button; the browser keeps the session cookie as the edge set it", async () => {
    const opened = page.waitForEvent("popup");
    await page.click("#login");
    const popup = await opened;
    await popup.waitForURL((url) => url.origin === login.origin);
    expect(login.requests.at(-1)).toMatchObject({ returnTo: `${stack.url}/auth/active/return`, origin: client.origin });
    const closed = popup.waitForEvent("close");
    await popup.click("#approve"); // the user's click sends the assertion to the edge's return
    await closed; // the return page closes its own window once the cookie is set
    const [session] = (await context.cookies(stack.url)).filter((c) => c.name === SESSION_COOKIE);
    expect(session).toMatchObject({ domain: "127.0.0.1", path: "/", secure: true, httpOnly: true, sameSite: "None" });
    expect(Math.abs(session.expires - (Date.now() / 1000 + SESSION_MAX_AGE))).toBeLessThan(60);
    // No cookie left for the login's state, and none for the client's or the login's sites.
    expect((await context.cookies()).map((c) => `${c.domain} ${c.name}`)).toEqual([`127.0.0.1 ${SESSION_COOKIE}`]);
  });

  it("with the token from the token service's frame the probe says 200, and the full image shows, the same edge sharp", async () => {
    expect(await shown("full")).toBe(`${stack.url}/iiif/3/${RESTRICTED}`);
    expect(await page.evaluate(() => window.viewer.world.getItemAt(0).source.width)).toBe(PATTERN_WIDTH);
    const flow = responses.slice(before).map((r) => `${r.status} ${new URL(r.url).pathname}`);
    expect(flow).toEqual(expect.arrayContaining([`200 /auth/active/token`, `200 /iiif/3/${RESTRICTED}/probe`]));
    await settle();
    const edge = await edgeWidth();
    expect(edge.contrast).toBeGreaterThan(200);
    expect(edge.px).toBeLessThanOrEqual(SHARP_EDGE_PX);
    expect(await checkColours()).toBeGreaterThanOrEqual(9);
    // The full image's own tiles, at full resolution, each served to the cookie OSD's credentialed requests carried.
    const tiles = tileResponses().filter((r) => responses.indexOf(r) >= before);
    expect(tiles.filter((r) => r.url.startsWith(`${stack.url}/iiif/3/${RESTRICTED}/`)).length).toBeGreaterThan(0);
    expect(tiles.filter((r) => r.status !== 200)).toEqual([]);
    // A script's reads on this page, whose origin the session was opened for: without credentials
    // no cookie goes (401); with them, the tile (the edge names this origin, with credentials).
    const reads = await page.evaluate(async (url) => {
      const outcome = (p: Promise<{ status: number }>) => p.then((r) => r.status, (e: Error) => e.name);
      return { anonymous: await outcome(fetch(url)), credentialed: await outcome(fetch(url, { credentials: "include" })) };
    }, fullTile());
    expect(reads).toEqual({ anonymous: 401, credentialed: 200 });
  });

  it("a browser without the cookie gets 401 for a tile of the full image (and the open image's tiles)", async () => {
    const fresh = await plain.newContext();
    try {
      const other = await fresh.newPage();
      expect((await other.goto(fullTile()))!.status()).toBe(401);
      expect((await other.goto(`${stack.url}/iiif/3/test-pattern/700,600,200,100/200,100/0/default.jpg`))!.status()).toBe(200);
    } finally {
      await fresh.close();
    }
    const same = await context.newPage();
    expect((await same.goto(fullTile()))!.status()).toBe(200);
    await same.close();
  });

  it("logs out through the logout service's window: the cookie is dropped, the token forgotten, and the degraded image shows again", async () => {
    const mark = responses.length;
    const opened = page.waitForEvent("popup");
    await page.click("#logout");
    const popup = await opened;
    await popup.waitForLoadState();
    expect(await popup.textContent("body")).toContain("You are logged out of Test Library");
    expect((await context.cookies(stack.url)).map((c) => c.name)).not.toContain(SESSION_COOKIE);
    await popup.close();
    expect(await shown("degraded")).toBe(`${stack.url}/iiif/3/${RESTRICTED}~degraded`);
    expect(await page.evaluate(() => window.viewer.world.getItemAt(0).source.width)).toBe(DEGRADED_WIDTH);
    await settle();
    expect((await edgeWidth()).px).toBeGreaterThanOrEqual(BLURRED_EDGE_PX);
    expect(await checkColours()).toBeGreaterThanOrEqual(9);
    expect(tileResponses().filter((r) => responses.indexOf(r) >= mark && !r.url.includes(`/${RESTRICTED}~degraded/`))).toEqual([]);
    const same = await context.newPage();
    expect((await same.goto(fullTile()))!.status()).toBe(401);
    await same.close();
    expect(pageErrors).toEqual([]);
  });

  it("where the browser blocks third-party cookies (this Chromium's default), the login succeeds but the viewer's frame sees no session: missingAspect, and the degraded image stays", async () => {
    const blocked = await plain.newContext({ viewport: WINDOW, deviceScaleFactor: 1 });
    try {
      blocked.setDefaultTimeout(LOAD_TIMEOUT);
      const viewer = await blocked.newPage();
      await viewer.goto(`${client.url}?edge=${encodeURIComponent(stack.url)}&id=${RESTRICTED}`);
      await viewer.waitForFunction(() => window.auth?.phase === "degraded");
      const opened = viewer.waitForEvent("popup");
      await viewer.click("#login");
      const popup = await opened;
      await popup.waitForURL((url) => url.origin === login.origin);
      const closed = popup.waitForEvent("close");
      await popup.click("#approve");
      await closed;
      expect((await blocked.cookies(stack.url)).map((c) => c.name)).toContain(SESSION_COOKIE);
      await viewer.waitForFunction(() => window.auth.error !== null && window.auth.phase === "degraded");
      expect(await viewer.evaluate(() => window.auth.error)).toBe("Not logged in: You have no access to Test Library's restricted images yet.");
    } finally {
      await blocked.close();
    }
  });
});
