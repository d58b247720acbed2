// A manifest as a reader meets it in a second viewer: Tify in Chromium, on a site of its own
// origin, opening the edge's IIIF Presentation 3 manifest of the test pattern (real stack over
// local files, the source described by its catalog entry). It checks what the reader sees: the
// publisher's label in Tify's header, the image in Tify's OpenSeadragon canvas with the pattern's
// colours where OSD places each square, every answer 200, no page error, and nothing asked of
// any origin but the site and the edge.
import { copyFile, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStack, type Stack } from "../../infra/local/stack";
import { ROOT } from "../../infra/root";
import { launchChromium, patchMean, settleViewer, type Rgb } from "../support/browser";
import { TEST_PATTERN_PNG } from "../support/pixels";
import { startViewerSite, type ViewerSite } from "../support/viewer-site";

const ID = "graz";
const LABEL = "Map of Graz, 1850";
// The pattern is a 10×10 grid of flat 100 px squares; a sample is a 5×5 patch at a square's centre.
const SQUARE = 100;
const COLOUR_TOLERANCE = 16; // max difference of any channel, 0..255, as the viewer test allows
// Tify fits the whole pattern in this window (beside its controls), so every square is compared.
const WINDOW = { width: 900, height: 640 };
const LOAD_TIMEOUT = 20_000;

// The page's globals, used inside page.evaluate (this Node program has no DOM types).
declare const window: { viewer: any };
declare const document: { elementFromPoint(x: number, y: number): unknown };

let dataDir: string;
let stack: Stack;
let site: ViewerSite;
let browser: Browser;
let page: Page;
let pattern: { data: Buffer; width: number };
const responses: { url: string; status: number }[] = [];
const pageErrors: string[] = [];
/** Every origin the page asked anything of: Tify must run from the site and the edge alone. */
const origins = new Set<string>();

beforeAll(async () => {
  const png = await sharp(TEST_PATTERN_PNG).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  pattern = { data: png.data, width: png.info.width };
  dataDir = await mkdtemp(path.join(tmpdir(), "tessera-tify-"));
  await copyFile(`${ROOT}samples/test-pattern.tif`, path.join(dataDir, `${ID}.tif`));
  await writeFile(path.join(dataDir, `${ID}.tessera.json`), JSON.stringify({ description: { label: { en: [LABEL] } } }));
  stack = await startStack({ decoderEnv: { TESSERA_SOURCE: "local", TESSERA_DATA_DIR: dataDir } });
  site = await startViewerSite("tify");
  browser = await launchChromium(["--disable-gpu"]);
  page = await browser.newPage({ viewport: WINDOW, deviceScaleFactor: 1 });
  page.setDefaultTimeout(LOAD_TIMEOUT);
  page.on("response", (res) => {
    if (res.url().startsWith(`${stack.url}/`)) responses.push({ url: res.url(), status: res.status() });
  });
  page.on("pageerror", (err) => pageErrors.push(String(err)));
  page.on("request", (req) => {
    if (/^https?:/.test(req.url())) origins.add(new URL(req.url()).origin);
  });
});

afterAll(async () => {
  await browser?.close();
  await site?.close();
  await stack?.stop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

const manifestUrl = () => `${stack.url}/iiif/3/${ID}/manifest.json`;

function expectedColour(x: number, y: number): Rgb {
  const i = (y * pattern.width + x) * 3;
  return [pattern.data[i], pattern.data[i + 1], pattern.data[i + 2]];
}

/**
 * Screenshots OSD's canvas and compares the colour at the centre of every square on screen with
 * the pattern's, leaving out centres that Tify's own controls cover. Returns how many it compared.
 */
async function checkColours(): Promise<number> {
  const geometry = await page.evaluate((square) => {
    const viewer = window.viewer;
    const item = viewer.world.getItemAt(0);
    const box = viewer.element.getBoundingClientRect();
    // OSD's Point without an OpenSeadragon global (Tify bundles OSD inside itself): a fresh one
    // from the viewport, moved.
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

describe("Tify on the edge's manifest", () => {
  it("shows the manifest's label and the image, every answer 200, from the site and the edge alone", async () => {
    await page.goto(`${site.url}?manifest=${encodeURIComponent(manifestUrl())}`);
    await page.locator(".tify-header-title").getByText(LABEL, { exact: true }).waitFor();
    await page.waitForFunction(() => window.viewer?.world.getItemCount() === 1);
    await settleViewer(page, LOAD_TIMEOUT);
    expect(await checkColours()).toBe(100);
    const fetched = responses.map((r) => r.url);
    expect(fetched).toContain(manifestUrl());
    expect(fetched).toContain(`${stack.url}/iiif/3/${ID}/info.json`);
    expect(fetched.filter((u) => u.endsWith("/default.jpg")).length).toBeGreaterThan(0);
    expect(responses.filter((r) => r.status !== 200)).toEqual([]);
    expect(pageErrors).toEqual([]);
    expect([...origins].sort()).toEqual([stack.url, site.url.replace(/\/$/, "")].sort());
  });
});
