// `npm run bench:jp2`: how long a jp2 answer's encode takes, beside the jpg of the same pixels.
// Textured RGB (gradients plus noise, so neither codec gets a flat picture) of a 512² tile and a
// 1000² image, each encoded ROUNDS times through the encoder's worker thread after a warm-up
// (which also starts it and instantiates OpenJPEG's WebAssembly module); prints the median per
// encode: lossy jp2 (the default), lossless jp2 (gray and bitonal answers, measured here on the
// same RGB pixels), and jpg q85 through sharp.

import sharp from "sharp";
import { encodeJ2k } from "../regional/encode/openjpeg";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 15);

function textured(side: number): Uint8Array {
  const pixels = new Uint8Array(side * side * 3);
  let state = 7;
  for (let y = 0, i = 0; y < side; y++) {
    for (let x = 0; x < side; x++) {
      state = (state * 1_103_515_245 + 12_345) >>> 0;
      const noise = (state >>> 27) - 16;
      pixels[i++] = Math.max(0, Math.min(255, (x * 255) / side + noise));
      pixels[i++] = Math.max(0, Math.min(255, (y * 255) / side + noise));
      pixels[i++] = Math.max(0, Math.min(255, ((x + y) * 127) / side + noise));
    }
  }
  return pixels;
}

async function median(run: () => Promise<unknown>): Promise<number> {
  await run();
  const times: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const start = performance.now();
    await run();
    times.push(performance.now() - start);
  }
  return times.sort((a, b) => a - b)[Math.floor(times.length / 2)];
}

for (const side of [512, 1000]) {
  const pixels = textured(side);
  const input = { pixels, width: side, height: side, components: 3 } as const;
  const jpg = () => sharp(pixels, { raw: { width: side, height: side, channels: 3 } }).jpeg({ quality: 85 }).toBuffer();
  const lossy = await median(() => encodeJ2k({ ...input, lossless: false }));
  const lossless = await median(() => encodeJ2k({ ...input, lossless: true }));
  const jpeg = await median(jpg);
  console.log(`${side}x${side} RGB: jp2 lossy ${lossy.toFixed(0)} ms, jp2 lossless ${lossless.toFixed(0)} ms, jpg ${jpeg.toFixed(1)} ms`);
}
