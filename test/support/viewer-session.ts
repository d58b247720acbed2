// What the browser tests of third-party viewers (Mirador, Tify) share: a real local stack over a
// copy of the test pattern described by its catalog entry, the viewer's site on its own origin,
// Chromium watching every answer, page error and origin asked, and the check of what the reader
// sees: the pattern's square colours where the viewer's OpenSeadragon places each square.
import { copyFile, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import sharp from "sharp";
import { expect } from "vitest";
import { startStack, type Stack } from "../../infra/local/stack";
import { ROOT } from "../../infra/root";
import type { Description } from "../../shared/description";
import { launchChromium, patchMean, type Rgb } from "./browser";
import { TEST_PATTERN_PNG } from "./pixels";
import { startViewerSite, type ViewerSite } from "./viewer-site";

// The pattern is a 10×10 grid of flat 100 px squares; a sample is a 5×5 patch at a square's centre.
const SQUARE = 100;
const COLOUR_TOLERANCE = 16; // max difference of any channel, 0..255, as the viewer test allows

// The page's globals, used inside page.evaluate (this Node program has no DOM types).
declare const window: { viewer: any };
declare const document: { elementFromPoint(x: number, y: number): unknown };

export interface ViewerSession {
  stack: Stack;
  site: ViewerSite;
  page: Page;
  manifestUrl: string;
  responses: { url: string; status: number }[];
  pageErrors: string[];
  /** Every origin the page asked anything of: a viewer must run from its site and the edge alone. */
  origins: Set<string>;
  /** Compares the colour at every square's centre on screen with the pattern's; returns how many it compared. */
  checkColours(): Promise<number>;
  close(): Promise<void>;
}

/** Serves the pattern as `id` with `description`, and opens `viewer`'s page (not yet the manifest) in a `window`-sized Chromium page. */
export async function startViewerSession(
  viewer: Parameters<typeof startViewerSite>[0],
  id: string,
  description: Description,
  window: { width: number; height: number },
  timeoutMs: number,
): Promise<ViewerSession> {
  const png = await sharp(TEST_PATTERN_PNG).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  const pattern = { data: png.data, width: png.info.width };
  const dataDir = await mkdtemp(path.join(tmpdir(), `tessera-${viewer}-`));
  let stack: Stack | undefined;
  let site: ViewerSite | undefined;
  let browser: Browser | undefined;
  const close = async () => {
    await browser?.close();
    await site?.close();
    await stack?.stop();
    await rm(dataDir, { recursive: true, force: true });
  };
  try {
    await copyFile(`${ROOT}samples/test-pattern.tif`, path.join(dataDir, `${id}.tif`));
    await writeFile(path.join(dataDir, `${id}.tessera.json`), JSON.stringify({ description }));
    stack = await startStack({ decoderEnv: { TESSERA_SOURCE: "local", TESSERA_DATA_DIR: dataDir } });
    site = await startViewerSite(viewer);
    browser = await launchChromium(["--disable-gpu"]);
    const page = await browser.newPage({ viewport: window, deviceScaleFactor: 1 });
    page.setDefaultTimeout(timeoutMs);
    const session: ViewerSession = {
      stack,
      site,
      page,
      manifestUrl: `${stack.url}/iiif/3/${id}/manifest.json`,
      responses: [],
      pageErrors: [],
      origins: new Set(),
      checkColours: () => checkColours(page, pattern),
      close,
    };
    const edge = `${stack.url}/`;
    page.on("response", (res) => {
      if (res.url().startsWith(edge)) session.responses.push({ url: res.url(), status: res.status() });
    });
    page.on("pageerror", (err) => session.pageErrors.push(String(err)));
    page.on("request", (req) => {
      if (/^https?:/.test(req.url())) session.origins.add(new URL(req.url()).origin);
    });
    return session;
  } catch (err) {
    await close();
    throw err;
  }
}

/**
 * Screenshots OSD's canvas and compares the colour at the centre of every square on screen with
 * the pattern's, leaving out centres that the viewer's own controls cover (what the page shows on
 * top there is not OSD's canvas). Returns how many it compared.
 */
async function checkColours(page: Page, pattern: { data: Buffer; width: number }): Promise<number> {
  const geometry = await page.evaluate((square) => {
    const viewer = window.viewer;
    const item = viewer.world.getItemAt(0);
    const box = viewer.element.getBoundingClientRect();
    // OSD's Point, without an OpenSeadragon global (the viewers bundle OSD inside themselves): a
    // fresh one from the viewport, moved (OSD's prototypes name no constructor to call).
    const point = (x: number, y: number) => Object.assign(viewer.viewport.getCenter(), { x, y });
    const centres = [];
    for (let row = 0; row < 10; row++) {
      for (let col = 0; col < 10; col++) {
        const image = { x: col * square + square / 2, y: row * square + square / 2 };
        const at = item.imageToViewerElementCoordinates(point(image.x, image.y));
        const element = { x: Math.round(at.x), y: Math.round(at.y) };
        const inside = element.x >= 0 && element.y >= 0 && element.x < box.width && element.y < box.height;
        const top = inside ? document.elementFromPoint(box.left + element.x, box.top + element.y) : null;
        centres.push({ image, element, shown: top !== null && viewer.canvas.contains(top) });
      }
    }
    return { box: { x: box.left, y: box.top, width: box.width, height: box.height }, centres };
  }, SQUARE);
  const shot = await sharp(await page.screenshot({ clip: geometry.box }))
    .removeAlpha()
    .raw()
    .toBuffer({ resolveWithObject: true });
  const margin = 4;
  const visible = geometry.centres.filter(
    ({ element: { x, y }, shown }) => shown && x >= margin && y >= margin && x < shot.info.width - margin && y < shot.info.height - margin,
  );
  const colourAt = (x: number, y: number): Rgb => {
    const i = (y * pattern.width + x) * 3;
    return [pattern.data[i], pattern.data[i + 1], pattern.data[i + 2]];
  };
  const mismatches = [];
  for (const { image, element } of visible) {
    const seen = patchMean(shot.data, shot.info.width, shot.info.channels, element.x, element.y);
    const want = colourAt(image.x, image.y);
    const diff = Math.max(...seen.map((v, i) => Math.abs(v - want[i])));
    if (diff > COLOUR_TOLERANCE) mismatches.push({ image, element, seen, want });
  }
  expect(mismatches).toEqual([]);
  return visible.length;
}
