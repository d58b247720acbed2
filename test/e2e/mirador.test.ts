// A manifest as a reader meets it: Mirador 4 in Chromium, on a site of its own origin, opening
// the edge's IIIF Presentation 3 manifest of the test pattern (real stack over local files, the
// source described by its catalog entry). It checks what the reader sees: the window titled with
// the publisher's label, the image in Mirador's OpenSeadragon canvas with the pattern's colours
// where OSD places each square, every answer 200, and the description in Mirador's panels.
import { copyFile, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStack, type Stack } from "../../infra/local/stack";
import { ROOT } from "../../infra/root";
import { launchChromium, patchMean, settleViewer, type Rgb } from "../support/browser";
import { startViewerSite, type ViewerSite } from "../support/viewer-site";
import { TEST_PATTERN_PNG } from "../support/pixels";

const ID = "graz";
const LABEL = "Map of Graz, 1850";
const RIGHTS = "http://creativecommons.org/licenses/by/4.0/";
const METADATA = { label: "Date", value: "1850" };
// The pattern is a 10×10 grid of flat 100 px squares; a sample is a 5×5 patch at a square's centre.
const SQUARE = 100;
const COLOUR_TOLERANCE = 16; // max difference of any channel, 0..255, as the viewer test allows
// Small enough that Mirador's canvas (beside its open side panel) shows the whole image from the
// reduced levels, so zooming in must fetch full-resolution tiles.
const WINDOW = { width: 760, height: 520 };
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
/** Every origin the page asked anything of: Mirador must run from the site and the edge alone. */
const origins = new Set<string>();

beforeAll(async () => {
  const png = await sharp(TEST_PATTERN_PNG).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  pattern = { data: png.data, width: png.info.width };
  dataDir = await mkdtemp(path.join(tmpdir(), "tessera-mirador-"));
  await copyFile(`${ROOT}samples/test-pattern.tif`, path.join(dataDir, `${ID}.tif`));
  const en = (text: string) => ({ en: [text] });
  const description = { label: en(LABEL), rights: RIGHTS, metadata: [{ label: en(METADATA.label), value: en(METADATA.value) }] };
  await writeFile(path.join(dataDir, `${ID}.tessera.json`), JSON.stringify({ description }));
  stack = await startStack({ decoderEnv: { TESSERA_SOURCE: "local", TESSERA_DATA_DIR: dataDir } });
  site = await startViewerSite("mirador");
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
 * the pattern's, leaving out centres that Mirador's own controls cover (what the page shows on
 * top there is not OSD's canvas). Returns how many it compared.
 */
async function checkColours(): Promise<number> {
  const geometry = await page.evaluate((square) => {
    const viewer = window.viewer;
    const item = viewer.world.getItemAt(0);
    const box = viewer.element.getBoundingClientRect();
    // OSD's Point, without an OpenSeadragon global (Mirador bundles OSD inside itself): a fresh
    // one from the viewport, moved (OSD's prototypes name no constructor to call).
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

/** Whether a tile URL asks for its region at full resolution (size w,h equal to the region's). */
const fullResolution = (url: string) => {
  const [region, size] = url.split("/").slice(-4, -2);
  return region.split(",").slice(2).join(",") === size;
};

describe("Mirador on the edge's manifest", () => {
  it("titles the window with the manifest's label and shows the image, every answer 200", async () => {
    await page.goto(`${site.url}?manifest=${encodeURIComponent(manifestUrl())}`);
    await page.locator(".mirador-window-top-bar").getByRole("heading", { name: LABEL, exact: true }).waitFor();
    await page.waitForFunction(() => window.viewer?.world.getItemCount() === 1);
    await settleViewer(page, LOAD_TIMEOUT);
    expect(await checkColours()).toBeGreaterThanOrEqual(50);
    const fetched = responses.map((r) => r.url);
    expect(fetched).toContain(manifestUrl());
    expect(fetched).toContain(`${stack.url}/iiif/3/${ID}/info.json`);
    expect(fetched.filter((u) => u.endsWith("/default.jpg")).length).toBeGreaterThan(0);
    expect(responses.filter((r) => r.status !== 200)).toEqual([]);
    expect(pageErrors).toEqual([]);
    expect([...origins].sort()).toEqual([stack.url, site.url.replace(/\/$/, "")].sort());
  });

  it("zoomed in to full resolution, shows the right squares from full-resolution tiles", async () => {
    const before = responses.length;
    // Mirador's OSD world is the canvas in its own pixels (not OSD's usual width of 1), so a
    // zoom is screen pixels per canvas pixel over the container's width, and a centre is in pixels.
    await page.evaluate(() => {
      const viewport = window.viewer.viewport;
      viewport.zoomTo(1 / viewport.getContainerSize().x, null, true);
      viewport.panTo(Object.assign(viewport.getCenter(), { x: 450, y: 450 }), true);
    });
    await settleViewer(page, LOAD_TIMEOUT);
    expect(await checkColours()).toBeGreaterThanOrEqual(6);
    const tiles = responses.slice(before).filter((r) => r.url.endsWith("/default.jpg"));
    expect(tiles.length).toBeGreaterThan(0);
    expect(tiles.filter((r) => !fullResolution(r.url))).toEqual([]);
    expect(responses.filter((r) => r.status !== 200)).toEqual([]);
    expect(pageErrors).toEqual([]);
  });

  it("shows the metadata pair in its information panel, and the rights in its rights panel", async () => {
    // The panels as a reader reads them: each term and its value, in order.
    const terms = (panel: string) =>
      page.getByRole("complementary", { name: panel }).locator("dt, dd").allInnerTexts();
    await page.getByRole("complementary", { name: "About this item" }).locator("dt").first().waitFor();
    expect((await terms("About this item")).slice(0, 2)).toEqual([METADATA.label, METADATA.value]);
    await page.getByRole("tab", { name: "Rights" }).click();
    await page.getByRole("complementary", { name: "Rights" }).locator("dd").first().waitFor();
    expect(await terms("Rights")).toEqual(["License", RIGHTS]);
    expect(await page.getByRole("complementary", { name: "Rights" }).getByRole("link", { name: RIGHTS }).getAttribute("href")).toBe(RIGHTS);
    expect(pageErrors).toEqual([]);
  });
});
