// The MapLibre page (infra/local/viewer/map.html) in headless Chromium over the real stack, for
// the browser tests that look at a map: the stack, the viewer's site and the page with its tile
// answers and errors recorded; waiting until MapLibre has drawn every tile; the colour the
// screen shows at a longitude and latitude; where GDAL puts a point of a projected source; and
// tiles loaded in plain <img> tags as Leaflet loads them.
import { execFileSync } from "node:child_process";
import type { Browser, Page } from "playwright-core";
import sharp from "sharp";
import { expect } from "vitest";
import { launchChromium, patchMean, type Rgb } from "./browser";
import { startStack, type Stack, type StackOptions } from "../../infra/local/stack";
import { startViewerServer, type ViewerServer } from "../../infra/local/viewer-server";

const WINDOW = { width: 800, height: 600 };
const LOAD_TIMEOUT = 30_000;
/** The page's background where the layer has no data (map.html's #view). */
export const BACKGROUND: Rgb = [0xe8, 0xe4, 0xd8];

// The page's globals, used inside page.evaluate (this Node program has no DOM types).
declare const window: { map: any };
declare function requestAnimationFrame(callback: () => void): number;
declare class Image {
  crossOrigin: string;
  src: string;
  naturalWidth: number;
  onload: () => void;
  onerror: () => void;
}

/** A tile the page loaded: its URL, status, type and the edge's cache header (none on its empty PNG). */
export interface TileAnswer {
  url: string;
  status: number;
  type?: string;
  cache?: string;
}

export interface MapBrowser {
  browser: Browser;
  page: Page;
  /** Every tile image answer from the edge (not its JSON documents), in order. */
  tiles: TileAnswer[];
  /** The page's errors and its console's errors and warnings. */
  pageErrors: string[];
}

/** Chromium with one page of the map's size, recording the tiles `edgeUrl` answers and the page's errors. */
async function openMapBrowser(edgeUrl: string): Promise<MapBrowser> {
  // WebGL in software (SwiftShader): MapLibre draws with WebGL, and the machine has no GPU.
  const browser = await launchChromium(["--use-angle=swiftshader", "--enable-unsafe-swiftshader"]);
  const page = await browser.newPage({ viewport: WINDOW, deviceScaleFactor: 1 });
  page.setDefaultTimeout(LOAD_TIMEOUT);
  const tiles: TileAnswer[] = [];
  const pageErrors: string[] = [];
  page.on("console", (message) => {
    if (message.type() === "error" || message.type() === "warning") pageErrors.push(`console ${message.type()}: ${message.text()}`);
  });
  page.on("pageerror", (err) => pageErrors.push(`page error: ${err.message}`));
  page.on("response", (res) => {
    if (!res.url().startsWith(`${edgeUrl}/tiles/`) || res.url().includes(".json")) return;
    const headers = res.headers();
    tiles.push({ url: res.url(), status: res.status(), type: headers["content-type"], cache: headers["x-tessera-cache"] });
  });
  return { browser, page, tiles, pageErrors };
}

/** The stack, the viewer's site that serves map.html, and Chromium on it. */
export interface MapSite extends MapBrowser {
  stack: Stack;
  site: ViewerServer;
  /** Closes the browser, the site and the stack. */
  close(): Promise<void>;
}

/** The real stack (`options` as startStack takes them), the viewer's site on its own origin, and Chromium. */
export async function startMapSite(options: StackOptions = {}): Promise<MapSite> {
  const stack = await startStack(options);
  let site: ViewerServer | undefined;
  try {
    site = await startViewerServer({ port: 0, edgeUrl: stack.url });
    const opened = await openMapBrowser(stack.url);
    const server = site;
    return {
      ...opened,
      stack,
      site,
      async close() {
        await opened.browser.close();
        await server.close();
        await stack.stop();
      },
    };
  } catch (err) {
    await site?.close();
    await stack.stop();
    throw err;
  }
}

/** Resolves once MapLibre has loaded every tile the view needs, and drawn them. */
export async function settled(page: Page): Promise<void> {
  await page.waitForFunction(() => window.map?.loaded() && window.map.areTilesLoaded() && !window.map.isMoving());
  await page.evaluate(() => new Promise<void>((resolve) => requestAnimationFrame(() => requestAnimationFrame(() => resolve()))));
}

/** Moves the map to `center` ([lon, lat]) at `zoom` at once, and waits until it is drawn. */
export async function jumpTo(page: Page, center: [number, number], zoom: number): Promise<void> {
  await page.evaluate(([c, z]) => window.map.jumpTo({ center: c, zoom: z }), [center, zoom] as const);
  await settled(page);
}

/** Lon/lat of points in `crs` as GDAL transforms them. */
export function lonLat(crs: string, points: [number, number][]): [number, number][] {
  const input = points.map((p) => p.join(" ")).join("\n") + "\n";
  const output = execFileSync("gdaltransform", ["-s_srs", crs, "-t_srs", "OGC:CRS84"], { input, encoding: "utf8" });
  return output.trim().split("\n").map((line) => line.split(/\s+/).slice(0, 2).map(Number) as [number, number]);
}

/** A place to look at: its name, where it is, and the colour the screen must show there. */
export interface Place {
  name: string;
  lonLat: [number, number];
  colour: Rgb;
}

/**
 * Screenshots the map and expects each place's colour (the mean of the 5×5 screen pixels about
 * it) within `tolerance` levels of any channel of the colour it must show.
 */
export async function expectColours(page: Page, places: Place[], tolerance: number): Promise<void> {
  const screen: { x: number; y: number }[] = await page.evaluate(
    (points) => points.map((p) => window.map.project(p)).map(({ x, y }: { x: number; y: number }) => ({ x: Math.round(x), y: Math.round(y) })),
    places.map((p) => p.lonLat),
  );
  const shot = await sharp(await page.locator("#view canvas").screenshot()).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  const seen = places.map((place, i) => {
    const { x, y } = screen[i];
    expect(x >= 4 && y >= 4 && x < shot.info.width - 4 && y < shot.info.height - 4, `${place.name} on screen at ${x},${y}`).toBe(true);
    return { name: place.name, at: [x, y], colour: patchMean(shot.data, shot.info.width, shot.info.channels, x, y), want: place.colour };
  });
  const wrong = seen.filter((s) => Math.max(...s.colour.map((v, c) => Math.abs(v - s.want[c]))) > tolerance);
  expect(wrong).toEqual([]);
}

/** Loads each URL in an <img> tag, as Leaflet and OpenLayers do; each answer's event and width. */
export function loadImages(page: Page, urls: string[]): Promise<{ url: string; event: string; width: number }[]> {
  return page.evaluate(
    (list) =>
      Promise.all(
        list.map(
          (url: string) =>
            new Promise<{ url: string; event: string; width: number }>((resolve) => {
              const img = new Image();
              img.crossOrigin = "anonymous"; // as Leaflet and OpenLayers ask for tiles they may read back
              img.onload = () => resolve({ url, event: "load", width: img.naturalWidth });
              img.onerror = () => resolve({ url, event: "error", width: 0 });
              img.src = url;
            }),
        ),
      ),
    urls,
  );
}
