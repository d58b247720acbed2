// Large answers through the whole stack: many clients ask at once for one image whose decoded
// answer is 30 MB (a 3200² PNG of noise, which does not compress). It streams through the
// admission DO and the Worker (STREAM_ANSWER_BYTES), so workerd, where both run, holds a few
// chunks of it at a time, not a copy per client: before, eight clients of a 31 MB answer raised
// its resident memory by 1.1 GB. Every client gets the same bytes, the source's pixels exactly.
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
/**
 * What workerd may grow by while the clients read: five answers' worth, where a copy for each
 * client would be eight. Measured: +81 MB (about 50 MB for any large answer passing, whose chunks
 * the garbage collector takes back late, and 4 MB a client); before, +1,217 MB.
 */
const GROWTH_BOUND = 150 * MB;

let stack: Stack;
let dir: string;
const image = "/iiif/3/noise/full/max/0/default.png";

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "tessera-large-"));
  await sharp({ create: { width: SIDE, height: SIDE, channels: 3, background: "#808080", noise: { type: "gaussian", mean: 128, sigma: 60 } } })
    .tiff({ tile: true, tileWidth: 256, tileHeight: 256, compression: "deflate" })
    .toFile(path.join(dir, "noise.tif"));
  // Room for every client's decode (a large answer is not shared: each waiter is decoded on its
  // own), one after another on this two-core machine.
  stack = await startStack({ decoderEnv: { TESSERA_DATA_DIR: dir }, vars: { NTHREADS: "4", QUEUE_TIMEOUT: "100", REQUEST_TIMEOUT: "110" } });
});
afterAll(async () => {
  await stack?.stop();
  await rm(dir, { recursive: true, force: true });
});

/** The highest of a process's resident memory, sampled every 20 ms until `stop`. */
function peakResident(pid: number): { stop(): number } {
  let peak = residentBytes(pid);
  const timer = setInterval(() => (peak = Math.max(peak, residentBytes(pid))), 20);
  return { stop: () => (clearInterval(timer), Math.max(peak, residentBytes(pid))) };
}

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

describe("a 30 MB answer for many clients at once", () => {
  it(`reaches ${CLIENTS} clients whole and identical while workerd grows by under ${GROWTH_BOUND / MB} MB`, async () => {
    // The source's metadata is cached at the edge first, and one large answer has passed (its
    // first sets up buffers and code that stay): the burst's only misses are its pixels.
    expect((await fetch(`${stack.url}/iiif/3/noise/info.json`)).status).toBe(200);
    expect((await (await fetch(`${stack.url}/iiif/3/noise/full/3000,/0/default.png`)).arrayBuffer()).byteLength).toBeGreaterThan(20 * MB);
    const pid = workerdPid(stack.url);
    const before = residentBytes(pid);
    const sampler = peakResident(pid);
    const answers = await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        const res = await fetch(stack.url + image);
        const bytes = new Uint8Array(await res.arrayBuffer());
        return { status: res.status, length: bytes.length, hash: sha256(bytes), bytes };
      }),
    );
    const peak = sampler.stop();
    console.log(`workerd VmRSS ${(before / MB).toFixed(0)} MB before, ${(peak / MB).toFixed(0)} MB at most while ${CLIENTS} clients read ${(answers[0].length / MB).toFixed(1)} MB each: +${((peak - before) / MB).toFixed(0)} MB`);

    expect(answers.map((a) => a.status)).toEqual(Array(CLIENTS).fill(200));
    expect(answers[0].length).toBeGreaterThan(25 * MB);
    expect(new Set(answers.map((a) => a.hash)).size).toBe(1);
    const decoded = await sharp(answers[0].bytes).raw().toBuffer({ resolveWithObject: true });
    const source = await sharp(path.join(dir, "noise.tif")).raw().toBuffer();
    expect(decoded.info).toMatchObject({ width: SIDE, height: SIDE, channels: 3 });
    expect(decoded.data.equals(source)).toBe(true);
    expect(peak - before).toBeLessThan(GROWTH_BOUND);

    // Stored as it streamed: the next client's is a hit, the same bytes.
    const again = await fetch(stack.url + image);
    expect(again.headers.get("x-tessera-cache")).toBe("hit");
    expect(sha256(new Uint8Array(await again.arrayBuffer()))).toBe(answers[0].hash);
  }, 120_000);
});
