// Headless Chromium for the browser tests (Debian's chromium through playwright-core, or the
// binary TESSERA_CHROMIUM names), and how they read colours off its screenshots.
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type Page } from "playwright-core";

export type Rgb = [number, number, number];

const EXECUTABLE = process.env.TESSERA_CHROMIUM ?? "/usr/bin/chromium";
/** Without a desktop browser's background traffic. */
const SWITCHES = [
  "--headless",
  "--no-sandbox",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** Chromium without a desktop browser's background traffic; `args` adds the test's own flags. */
export function launchChromium(args: string[]): Promise<Browser> {
  return chromium.launch({ executablePath: EXECUTABLE, args: [...SWITCHES, ...args] });
}

/**
 * Chromium on a fresh profile of its own that allows third-party cookies, as a user allows them
 * in its settings (the profile's cookie-controls preference, 0: off; nothing else differs). This
 * Chromium blocks them by default, in a new profile and in every context launchChromium makes:
 * a viewer on one site would get no cookie of an image server on another. `close` removes the
 * profile too.
 */
export async function launchChromiumWithThirdPartyCookies(
  args: string[],
  options: BrowserContextOptions,
): Promise<{ context: BrowserContext; close(): Promise<void> }> {
  const profile = await mkdtemp(path.join(tmpdir(), "tessera-chromium-"));
  try {
    await mkdir(path.join(profile, "Default"));
    await writeFile(path.join(profile, "Default", "Preferences"), JSON.stringify({ profile: { cookie_controls_mode: 0 } }));
    const context = await chromium.launchPersistentContext(profile, { executablePath: EXECUTABLE, args: [...SWITCHES, ...args], ...options });
    return {
      context,
      close: async () => {
        await context.close();
        await rm(profile, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await rm(profile, { recursive: true, force: true });
    throw err;
  }
}

/** The mean colour of the 5×5 patch centred on (cx, cy) of raw pixels with `channels` a pixel. */
export function patchMean(data: Buffer, width: number, channels: number, cx: number, cy: number): Rgb {
  const sum = [0, 0, 0];
  for (let y = cy - 2; y <= cy + 2; y++) {
    for (let x = cx - 2; x <= cx + 2; x++) {
      for (let c = 0; c < 3; c++) sum[c] += data[(y * width + x) * channels + c];
    }
  }
  return sum.map((s) => Math.round(s / 25)) as Rgb;
}

/** Where an OpenSeadragon view looks: the image pixel at its centre and screen pixels per image pixel. */
export interface ViewerView {
  centre: { x: number; y: number };
  scale: number;
  /** The width of the image the view is in (the viewport is that image's width, 1, whichever image is shown). */
  imageWidth: number;
}

// The page's globals, used inside page.evaluate (this Node program has no DOM types).
declare const window: { viewer: any };
declare const OpenSeadragon: { Point: new (x: number, y: number) => unknown };
declare function requestAnimationFrame(callback: () => void): number;

/**
 * Moves the page's OpenSeadragon viewer (`window.viewer`) to `view` at once, without animation
 * (or keeps its view), and resolves once it has loaded every tile that view needs and drawn it.
 */
export async function settleViewer(page: Page, timeoutMs: number, view?: ViewerView): Promise<void> {
  await page.evaluate(
    ({ view, timeout }) =>
      new Promise<void>((resolve, reject) => {
        const viewer = window.viewer;
        const timer = setTimeout(() => reject(new Error(`tiles not loaded within ${timeout} ms`)), timeout);
        const drawn = () => {
          clearTimeout(timer);
          requestAnimationFrame(() => requestAnimationFrame(() => resolve()));
        };
        // Wait for the frame that applies the new view before asking whether it is loaded.
        viewer.addOnceHandler("update-viewport", () => {
          const item = viewer.world.getItemAt(0);
          if (item.getFullyLoaded()) drawn();
          else item.addOnceHandler("fully-loaded-change", drawn);
        });
        if (view) {
          const vp = viewer.viewport;
          vp.zoomTo((view.scale * view.imageWidth) / vp.getContainerSize().x, null, true);
          vp.panTo(new OpenSeadragon.Point(view.centre.x / view.imageWidth, view.centre.y / view.imageWidth), true);
        }
        viewer.forceRedraw();
      }),
    { view, timeout: timeoutMs },
  );
}
