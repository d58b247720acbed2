// Headless Chromium for the browser tests (Debian's chromium through playwright-core, or the
// binary TESSERA_CHROMIUM names), and how they read colours off its screenshots.
import { chromium, type Browser } from "playwright-core";

export type Rgb = [number, number, number];

/** Chromium without a desktop browser's background traffic; `args` adds the test's own flags. */
export function launchChromium(args: string[]): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.TESSERA_CHROMIUM ?? "/usr/bin/chromium",
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      ...args,
    ],
  });
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
