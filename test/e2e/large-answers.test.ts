// Large answers through the whole stack: eight clients ask at once for one image whose decoded
// answer is 30 MB (a 3200² PNG of noise, which does not compress). Above STREAM_ANSWER_BYTES it
// streams through the admission DO and the Worker, so workerd, where both run, holds a few chunks
// of it at a time, not a copy per client: before, eight clients raised its resident memory by
// 1.2 GB. Every client gets the same bytes, the source's pixels exactly, and the answer is
// stored as it streams.
import { createHash } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStack, type Stack } from "../../infra/local/stack";
import { residentBytes, workerdPid } from "../support/workerd-process";

const SIDE = 3200;
const CLIENTS = 8;
const MB = 1e6;
const image = "/iiif/3/noise/full/max/0/default.png";

let dir: string;
let stack: Stack;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "tessera-large-"));
  await sharp({ create: { width: SIDE, height: SIDE, channels: 3, background: "#808080", noise: { type: "gaussian", mean: 128, sigma: 60 } } })
    .tiff({ tile: true, tileWidth: 256, tileHeight: 256, compression: "deflate" })
    .toFile(path.join(dir, "noise.tif"));
  // Room for each client's decode (a large answer is not shared: each waiter is decoded on its
  // own), one after another on this two-core machine.
  stack = await startStack({ decoderEnv: { TESSERA_DATA_DIR: dir }, vars: { NTHREADS: "4", QUEUE_TIMEOUT: "100", REQUEST_TIMEOUT: "110" } });
});
afterAll(async () => {
  await stack?.stop();
  await rm(dir, { recursive: true, force: true });
});

/**
 * The source's metadata cached at the edge, and one large answer passed (the first sets up
 * buffers and code that stay): a burst's only misses are then its pixels, and what it costs.
 */
async function warm(): Promise<void> {
  expect((await fetch(`${stack.url}/iiif/3/noise/info.json`)).status).toBe(200);
  expect((await (await fetch(`${stack.url}/iiif/3/noise/full/3000,/0/default.png`)).arrayBuffer()).byteLength).toBeGreaterThan(20 * MB);
}

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

/**
 * CLIENTS requests for the image at once, each read as it comes: their answers, and how far
 * workerd's resident memory rose above where it was (its highest, sampled every 20 ms).
 */
async function burst() {
  const pid = workerdPid(stack.url);
  const before = residentBytes(pid);
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, residentBytes(pid))), 20);
  const answers = await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      const res = await fetch(stack.url + image);
      const bytes = new Uint8Array(await res.arrayBuffer());
      return { status: res.status, declared: Number(res.headers.get("content-length")), length: bytes.length, hash: sha256(bytes), bytes };
    }),
  );
  clearInterval(sampler);
  const growth = Math.max(peak, residentBytes(pid)) - before;
  console.log(`workerd VmRSS ${(before / MB).toFixed(0)} MB, then +${(growth / MB).toFixed(0)} MB while ${CLIENTS} clients read ${(answers[0].length / MB).toFixed(1)} MB each`);
  return { answers, growth };
}

describe("a 30 MB answer, above STREAM_ANSWER_BYTES, for eight clients at once", () => {
  /**
   * Five answers' worth, where a copy for each client would be eight. Measured: +83 MB (about
   * 50 MB for any large answer passing, whose chunks the garbage collector takes back late, and
   * 4 MB a client); before, +1,217 MB.
   */
  const GROWTH_BOUND = 150 * MB;

  it(`reaches each whole and identical while workerd grows by under ${GROWTH_BOUND / MB} MB, and is stored as it streams`, async () => {
    await warm();
    const { answers, growth } = await burst();
    expect(answers.map((a) => a.status)).toEqual(Array(CLIENTS).fill(200));
    expect(answers[0].length).toBeGreaterThan(25 * MB);
    // Declared before the body, so a client can tell a body cut short from a whole one.
    expect(answers.every((a) => a.declared === a.length)).toBe(true);
    expect(new Set(answers.map((a) => a.hash)).size).toBe(1);
    const decoded = await sharp(answers[0].bytes).raw().toBuffer({ resolveWithObject: true });
    expect(decoded.info).toMatchObject({ width: SIDE, height: SIDE, channels: 3 });
    expect(decoded.data.equals(await sharp(path.join(dir, "noise.tif")).raw().toBuffer())).toBe(true);
    expect(growth).toBeLessThan(GROWTH_BOUND);

    const again = await fetch(stack.url + image);
    expect(again.headers.get("x-tessera-cache")).toBe("hit");
    expect(sha256(new Uint8Array(await again.arrayBuffer()))).toBe(answers[0].hash);
  }, 120_000);
});
