// A manifest as a reader meets it in a second viewer: Tify in Chromium, on a site of its own
// origin, opening the edge's IIIF Presentation 3 manifest of the test pattern (real stack over
// local files, the source described by its catalog entry). It checks what the reader sees: the
// publisher's label in Tify's header, the image in Tify's OpenSeadragon canvas with the pattern's
// colours where OSD places each square, every answer 200, no page error, and nothing asked of
// any origin but the site and the edge.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { settleViewer } from "../support/browser";
import { startViewerSession, type ViewerSession } from "../support/viewer-session";

const ID = "graz";
const LABEL = "Map of Graz, 1850";
// Tify fits the whole pattern in this window (beside its controls), so every square is compared.
const WINDOW = { width: 900, height: 640 };
const LOAD_TIMEOUT = 20_000;

// The page's globals, used inside page.evaluate (this Node program has no DOM types).
declare const window: { viewer: any };

let session: ViewerSession;
beforeAll(async () => {
  session = await startViewerSession("tify", ID, { label: { en: [LABEL] } }, WINDOW, LOAD_TIMEOUT);
});
afterAll(async () => {
  await session?.close();
});

describe("Tify on the edge's manifest", () => {
  it("shows the manifest's label and the image, every answer 200, from the site and the edge alone", async () => {
    const { page, site, stack, manifestUrl, responses, pageErrors, origins } = session;
    await page.goto(`${site.url}?manifest=${encodeURIComponent(manifestUrl)}`);
    await page.locator(".tify-header-title").getByText(LABEL, { exact: true }).waitFor();
    await page.waitForFunction(() => window.viewer?.world.getItemCount() === 1);
    await settleViewer(page, LOAD_TIMEOUT);
    expect(await session.checkColours()).toBe(100);
    const fetched = responses.map((r) => r.url);
    expect(fetched).toContain(manifestUrl);
    expect(fetched).toContain(`${stack.url}/iiif/3/${ID}/info.json`);
    expect(fetched.filter((u) => u.endsWith("/default.jpg")).length).toBeGreaterThan(0);
    expect(responses.filter((r) => r.status !== 200)).toEqual([]);
    expect(pageErrors).toEqual([]);
    expect([...origins].sort()).toEqual([stack.url, site.url.replace(/\/$/, "")].sort());
  });
});
