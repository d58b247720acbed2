// A manifest as a reader meets it: Mirador 4 in Chromium, on a site of its own origin, opening
// the edge's IIIF Presentation 3 manifest of the test pattern (real stack over local files, the
// source described by its catalog entry). It checks what the reader sees: the window titled with
// the publisher's label, the image in Mirador's OpenSeadragon canvas with the pattern's colours
// where OSD places each square, every answer 200, and the description in Mirador's panels.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { settleViewer } from "../support/browser";
import { startViewerSession, type ViewerSession } from "../support/viewer-session";

const ID = "graz";
const LABEL = "Map of Graz, 1850";
const RIGHTS = "http://creativecommons.org/licenses/by/4.0/";
const METADATA = { label: "Date", value: "1850" };
// Small enough that Mirador's canvas (beside its open side panel) shows the whole image from the
// reduced levels, so zooming in must fetch full-resolution tiles.
const WINDOW = { width: 760, height: 520 };
const LOAD_TIMEOUT = 20_000;

// The page's globals, used inside page.evaluate (this Node program has no DOM types).
declare const window: { viewer: any };

const en = (text: string) => ({ en: [text] });
let session: ViewerSession;
beforeAll(async () => {
  const description = { label: en(LABEL), rights: RIGHTS, metadata: [{ label: en(METADATA.label), value: en(METADATA.value) }] };
  session = await startViewerSession("mirador", ID, description, WINDOW, LOAD_TIMEOUT);
});
afterAll(async () => {
  await session?.close();
});

/** Whether a tile URL asks for its region at full resolution (size w,h equal to the region's). */
const fullResolution = (url: string) => {
  const [region, size] = url.split("/").slice(-4, -2);
  return region.split(",").slice(2).join(",") === size;
};

describe("Mirador on the edge's manifest", () => {
  it("titles the window with the manifest's label and shows the image, every answer 200", async () => {
    const { page, site, stack, manifestUrl, responses, pageErrors, origins } = session;
    await page.goto(`${site.url}?manifest=${encodeURIComponent(manifestUrl)}`);
    await page.locator(".mirador-window-top-bar").getByRole("heading", { name: LABEL, exact: true }).waitFor();
    await page.waitForFunction(() => window.viewer?.world.getItemCount() === 1);
    await settleViewer(page, LOAD_TIMEOUT);
    expect(await session.checkColours()).toBeGreaterThanOrEqual(50);
    const fetched = responses.map((r) => r.url);
    expect(fetched).toContain(manifestUrl);
    expect(fetched).toContain(`${stack.url}/iiif/3/${ID}/info.json`);
    expect(fetched.filter((u) => u.endsWith("/default.jpg")).length).toBeGreaterThan(0);
    expect(responses.filter((r) => r.status !== 200)).toEqual([]);
    expect(pageErrors).toEqual([]);
    expect([...origins].sort()).toEqual([stack.url, site.url.replace(/\/$/, "")].sort());
  });

  it("zoomed in to full resolution, shows the right squares from full-resolution tiles", async () => {
    const { page, responses, pageErrors } = session;
    const before = responses.length;
    // Mirador's OSD world is the canvas in its own pixels (not OSD's usual width of 1), so a
    // zoom is screen pixels per canvas pixel over the container's width, and a centre is in pixels.
    await page.evaluate(() => {
      const viewport = window.viewer.viewport;
      viewport.zoomTo(1 / viewport.getContainerSize().x, null, true);
      viewport.panTo(Object.assign(viewport.getCenter(), { x: 450, y: 450 }), true);
    });
    await settleViewer(page, LOAD_TIMEOUT);
    expect(await session.checkColours()).toBeGreaterThanOrEqual(6);
    const tiles = responses.slice(before).filter((r) => r.url.endsWith("/default.jpg"));
    expect(tiles.length).toBeGreaterThan(0);
    expect(tiles.filter((r) => !fullResolution(r.url))).toEqual([]);
    expect(responses.filter((r) => r.status !== 200)).toEqual([]);
    expect(pageErrors).toEqual([]);
  });

  it("shows the metadata pair in its information panel, and the rights in its rights panel", async () => {
    const { page, pageErrors } = session;
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
