// The viewer a user opens after `npm start`: OpenSeadragon in Chromium, on its own origin, showing
// the bundled test pattern through the edge's IIIF 3 info.json and tiles (real stack over local
// files). It checks what a user would see: every tile answered, deeper zoom fetching finer tiles,
// and the right colours at the right places on screen.
import type { Browser, Page } from "playwright-core";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium, patchMean, settleViewer, type Rgb } from "../support/browser";
import { startStack, type Stack } from "../../infra/local/stack";
import { startViewerServer, type ViewerServer } from "../../infra/local/viewer-server";
import { TEST_PATTERN_PNG } from "../support/pixels";

// The pattern is a 10×10 grid of flat 100 px squares; a sample is a 5×5 patch at a square's
// centre. JPEG and resampling move a flat colour by a few levels; a wrong tile moves it by far more.
const SQUARE = 100;
const COLOUR_TOLERANCE = 16; // max difference of any channel, 0..255
// Small enough that the home view needs only the reduced levels, so zooming in must fetch more.
const WINDOW = { width: 420, height: 360 };
const LOAD_TIMEOUT = 20_000;

// The page's globals, used inside page.evaluate (this Node program has no DOM types).
declare const window: { viewer: any };
declare const OpenSeadragon: { Point: new (x: number, y: number) => unknown };
interface Rect {
  left: number;
  top: number;
  right: number;
  bottom: number;
}
interface TileResponse {
  url: string;
  status: number;
}

let stack: Stack;
let site: ViewerServer;
let browser: Browser;
let page: Page;
const responses: TileResponse[] = [];
let pattern: { data: Buffer; width: number };

beforeAll(async () => {
  const png = await sharp(TEST_PATTERN_PNG).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  pattern = { data: png.data, width: png.info.width };
  stack = await startStack();
  site = await startViewerServer({ port: 0, edgeUrl: stack.url });
  browser = await launchChromium(["--disable-gpu"]);
  page = await browser.newPage({ viewport: WINDOW, deviceScaleFactor: 1 });
  page.setDefaultTimeout(LOAD_TIMEOUT);
  page.on("response", (res) => {
    if (res.url().startsWith(`${stack.url}/iiif/`)) responses.push({ url: res.url(), status: res.status() });
  });
});
afterAll(async () => {
  await browser?.close();
  await site?.close();
  await stack?.stop();
});

/** Moves the viewport (if a view is given) at once and resolves once OSD has loaded and drawn every tile it needs. */
const settle = (view?: { centre: { x: number; y: number }; scale: number }) =>
  settleViewer(page, LOAD_TIMEOUT, view && { ...view, imageWidth: pattern.width });

function expectedColour(x: number, y: number): Rgb {
  const i = (y * pattern.width + x) * 3;
  return [pattern.data[i], pattern.data[i + 1], pattern.data[i + 2]];
}

/**
 * Screenshots the viewer and compares the colour at the centre of every square on screen with the
 * pattern's; OSD's own controls (buttons, navigator) are left out. Returns how many it compared.
 */
async function checkColours(): Promise<number> {
  const geometry = await page.evaluate((square) => {
    const viewer = window.viewer;
    const box = viewer.element.getBoundingClientRect();
    const covered: Rect[] = viewer.controls.map((c: any) => {
      const r = c.element.getBoundingClientRect();
      return { left: r.left - box.left, top: r.top - box.top, right: r.right - box.left, bottom: r.bottom - box.top };
    });
    const centres = [];
    for (let row = 0; row < 10; row++) {
      for (let col = 0; col < 10; col++) {
        const image = { x: col * square + square / 2, y: row * square + square / 2 };
        const at = viewer.viewport.imageToViewerElementCoordinates(new OpenSeadragon.Point(image.x, image.y));
        centres.push({ image, element: { x: Math.round(at.x), y: Math.round(at.y) } });
      }
    }
    return { covered, centres };
  }, SQUARE);
  const shot = await sharp(await page.locator("#viewer").screenshot())
    .removeAlpha()
    .raw()
    .toBuffer({ resolveWithObject: true });
  const margin = 4;
  const visible = geometry.centres.filter(
    ({ element: { x, y } }) =>
      x >= margin &&
      y >= margin &&
      x < shot.info.width - margin &&
      y < shot.info.height - margin &&
      !geometry.covered.some((r) => x >= r.left - margin && x <= r.right + margin && y >= r.top - margin && y <= r.bottom + margin),
  );
  const mismatches = [];
  for (const { image, element } of visible) {
    const seen = patchMean(shot.data, shot.info.width, shot.info.channels, element.x, element.y);
    const want = expectedColour(image.x, image.y);
    const diff = Math.max(...seen.map((v, i) => Math.abs(v - want[i])));
    if (diff > COLOUR_TOLERANCE) mismatches.push({ image, element, seen, want });
  }
  expect(mismatches).toEqual([]);
  return visible.length;
}


const tileRequests = () => responses.filter((r) => !r.url.endsWith("/info.json"));
/** Whether a tile URL asks for its region at full resolution (size w,h equal to the region's). */
const fullResolution = (url: string) => {
  const [region, size] = url.split("/").slice(-4, -2);
  return region.split(",").slice(2).join(",") === size;
};

describe("the OpenSeadragon viewer on the test pattern", () => {
  let homeTiles = 0;

  it("opens the image through info.json and shows the whole pattern at home", async () => {
    await page.goto(`${site.url}?id=test-pattern`);
    await page.waitForFunction(() => window.viewer?.world.getItemCount() === 1);
    await settle();
    expect(responses.find((r) => r.url === `${stack.url}/iiif/3/test-pattern/info.json`)?.status).toBe(200);
    homeTiles = tileRequests().length;
    expect(homeTiles).toBeGreaterThan(0);
    // PLAIN_ID_MODE "revalidate", the default: info.json's id is the plain id, and so are the tiles.
    expect(tileRequests().filter((r) => !r.url.startsWith(`${stack.url}/iiif/3/test-pattern/`))).toEqual([]);
    expect(await checkColours()).toBeGreaterThanOrEqual(80); // OSD's controls hide a few squares
    expect(responses.filter((r) => r.status !== 200)).toEqual([]);
  });

  it("fetches full-resolution tiles when zoomed in and panned, and shows the right squares", async () => {
    await settle({ centre: { x: 300, y: 300 }, scale: 1 });
    expect(await checkColours()).toBeGreaterThanOrEqual(6);
    await settle({ centre: { x: 700, y: 700 }, scale: 1 });
    expect(await checkColours()).toBeGreaterThanOrEqual(6);
    const deeper = tileRequests().slice(homeTiles);
    expect(deeper.length).toBeGreaterThan(homeTiles);
    expect(deeper.every((r) => fullResolution(r.url))).toBe(true);
    expect(responses.filter((r) => r.status !== 200)).toEqual([]);
  });
});
