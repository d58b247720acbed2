// Large renders run in the render pool's processes, off the decoder's event loop and below its
// priority, every thread of them: a full's pixel work (block decodes, copies, resizes, encode)
// costs the main thread almost nothing, the answer's bytes are those of the same render on the
// main thread, a cancelled full stops and gives its work memory and its process back, and a
// process killed under its render fails only that render.
//
// Why CPU time and not latency: on a loaded two-core machine a timed assertion (event-loop lag,
// a tile answered within N ms) passes or fails with the neighbours' load, while the share of the
// CPU time the main thread spends on a render depends only on where its work runs.
import { copyFile, mkdtemp, rm } from "node:fs/promises";
import { getPriority, tmpdir } from "node:os";
import path from "node:path";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Cog } from "../../regional/cog/cog";
import { renderHere } from "../../regional/render/render";
import { fromWire, toWire } from "../../regional/render/render-worker";
import { LocalCatalog } from "../../regional/source/local";
import { WorkBudget } from "../../regional/runtime/work-budget";
import { resolveImageRequest } from "../../shared/iiif/resolve";
import { parseImageRequest } from "../../shared/iiif/image-request";
import { badGateway, HttpError } from "../../shared/errors";
import { DECODER, GRANT_HEADER, GRANT_WORK_HEADER, GRANTED_PARTITION_HEADER, signedHeaders, type SourceInfo } from "../../shared/protocol";
import { patternCog } from "../support/pattern-cog";
import { cpuMicros, ended, renderProcesses, threadNices } from "../support/render-processes";
import { killDecoder, startDecoder as startDecoderProcess, stopDecoder } from "../../infra/local/decoders";
import { expressionBomb } from "../support/expression-bomb";
import { metricValue, SAMPLES, signedGet, startDecoder, type Decoder } from "./regional-helpers";

const SIDE = 4000;
const FULL = "full/3000,/0/default.jpg";
let dir: string;
let d: Decoder;
let version: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "tessera-render-pool-"));
  patternCog(path.join(dir, "big.tif"), SIDE);
  await copyFile(path.join(SAMPLES, "utm-quadrants.tif"), path.join(dir, "utm-quadrants.tif"));
  d = await startDecoder(new LocalCatalog(dir), 3, { budget: new WorkBudget() });
  version = ((await (await signedGet(d, DECODER.info("big"))).json()) as SourceInfo).version;
  // The pool's first process starts with the first large render: started here, not timed below.
  expect((await signedGet(d, DECODER.image("big", "full/2999,/0/default.jpg", version))).status).toBe(200);
}, 120_000);
afterAll(async () => {
  await d?.close();
  await rm(dir, { recursive: true, force: true });
});

const usageMicros = ({ user, system }: NodeJS.CpuUsage) => user + system;

/** The share of `work`'s CPU time (this process's and the render processes') spent on the main thread. */
async function mainThreadShare(work: () => Promise<unknown>): Promise<number> {
  const pids = renderProcesses();
  const before = { thread: process.threadCpuUsage(), process: process.cpuUsage(), pids: pids.map(cpuMicros) };
  await work();
  const thread = usageMicros(process.threadCpuUsage(before.thread));
  const rendering = pids.reduce((sum, pid, i) => sum + cpuMicros(pid) - before.pids[i], 0);
  return thread / (usageMicros(process.cpuUsage(before.process)) + rendering);
}

describe("a full render", () => {
  it("runs in a pool process: the main thread spends a small share of the CPU time", async () => {
    const share = await mainThreadShare(async () => {
      const res = await signedGet(d, DECODER.image("big", FULL, version));
      expect(res.status, await res.clone().text()).toBe(200);
      await res.arrayBuffer();
    });
    // Rendered on the main thread it took almost half the process's time (block copies, big
    // buffers, their collection); here the main thread serves the pool's reads and the HTTP
    // exchange, under a tenth.
    expect(share).toBeLessThan(0.2);
    expect(await metricValue(d, "tessera_decoder_render_pool_renders_total")).toBe(2);
  }, 60_000);

  it("answers the bytes the same render makes on the main thread", async () => {
    const res = await signedGet(d, DECODER.image("big", FULL, version));
    const pooled = Buffer.from(await res.arrayBuffer());
    const cog = await Cog.open(await new LocalCatalog(dir).open("big", version), { budget: new WorkBudget() });
    const [region, size, rotation, qualityFormat] = FULL.split("/");
    const req = resolveImageRequest(parseImageRequest({ region, size, rotation, qualityFormat }, 3), cog);
    const here = await renderHere(cog, req);
    await cog.close();
    expect(pooled.equals(here.body)).toBe(true);
  }, 60_000);

  it("runs in processes every thread of which is 10 below the decoder's priority: libvips's and V8's too", () => {
    const pids = renderProcesses();
    expect(pids.length).toBeGreaterThan(0);
    for (const pid of pids) {
      const nices = threadNices(pid);
      // The main thread, libuv's, V8's platform threads, libvips's workers after a render.
      expect(nices.length).toBeGreaterThan(5);
      expect(new Set(nices)).toEqual(new Set([Math.min(19, getPriority() + 10)]));
    }
  });

  it("an unscaled region TurboJPEG encodes in a pool process crosses back whole", async () => {
    // Large enough for the full partition, small enough that no libvips step is needed: the
    // process's answer lies in its pooled encoder buffer.
    const region = "0,0,3600,3600/max/0/default.jpg";
    const res = await signedGet(d, DECODER.image("big", region, version));
    expect(res.status, await res.clone().text()).toBe(200);
    const meta = await sharp(Buffer.from(await res.arrayBuffer())).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(["jpeg", 3600, 3600]);
  }, 60_000);

  it("cancelled by its client, stops, and frees its work memory and its process for the next", async () => {
    const client = new AbortController();
    const target = DECODER.image("big", "full/3500,/0/default.jpg", version);
    const headers = await signedHeaders(d.secret, "GET", target);
    const pending = fetch(d.url + target, { headers, signal: client.signal }).catch(() => undefined);
    // Cancelled once it runs on the pool (not while it is still being admitted).
    await expect.poll(() => metricValue(d, "tessera_decoder_render_pool_busy"), { interval: 20, timeout: 20_000 }).toBe(1);
    client.abort();
    await pending;
    await expect.poll(() => metricValue(d, "tessera_decoder_render_pool_busy"), { timeout: 20_000 }).toBe(0);
    await expect.poll(() => metricValue(d, "tessera_decoder_work_budget_used_bytes"), { timeout: 20_000 }).toBe(0);
    // The render stopped: its process spends (almost) no CPU any more.
    const pids = renderProcesses();
    expect(pids.length).toBeGreaterThan(0);
    const before = pids.map(cpuMicros);
    await new Promise((r) => setTimeout(r, 500));
    expect(pids.reduce((sum, pid, i) => sum + cpuMicros(pid) - before[i], 0)).toBeLessThan(50_000);
    expect((await signedGet(d, DECODER.image("big", FULL, version))).status).toBe(200);
  }, 60_000);

  it("whose process is killed fails with a 502, and the next one renders in a new process", async () => {
    const pending = signedGet(d, DECODER.image("big", "full/3500,/0/default.jpg", version));
    await expect.poll(() => metricValue(d, "tessera_decoder_render_pool_busy"), { interval: 20, timeout: 20_000 }).toBe(1);
    const killed = renderProcesses();
    for (const pid of killed) process.kill(pid, "SIGKILL");
    const res = await pending;
    expect(res.status).toBe(502);
    expect(((await res.json()) as { message: string }).message).toMatch(/process ended/);
    expect((await signedGet(d, DECODER.image("big", FULL, version))).status).toBe(200);
    expect(renderProcesses().some((pid) => !killed.includes(pid))).toBe(true);
  }, 60_000);
});

describe("a map tile of the full partition", () => {
  // An expression at the node cap on a @2x tile: its work (about 185 units) makes it a full.
  const bomb = `utm-quadrants/WebMercatorQuad/12/2220/1427@2x.png?expression=${encodeURIComponent(expressionBomb())}&rescale=-4,4`;
  const tile = async (partition?: "tile") => {
    const grant: Record<string, string> = partition ? { [GRANT_HEADER]: String(2 ** 30), [GRANT_WORK_HEADER]: "100000", [GRANTED_PARTITION_HEADER]: partition } : {};
    const res = await signedGet(d, `/v1/tiles/${bomb}&version=${encodeURIComponent(utmVersion)}`, undefined, grant);
    expect(res.status, await res.clone().text()).toBe(200);
    return sharp(Buffer.from(await res.arrayBuffer())).ensureAlpha().raw().toBuffer();
  };
  let utmVersion: string;
  beforeAll(async () => {
    utmVersion = ((await (await signedGet(d, DECODER.info("utm-quadrants"))).json()) as SourceInfo).version;
  });

  it("paints in a pool process, at its lower priority: the main thread spends a small share of the CPU time", async () => {
    const renders = await metricValue(d, "tessera_decoder_render_pool_renders_total");
    const share = await mainThreadShare(() => tile());
    // Painted in slices of the event loop, the expression's passes were most of the main thread's time.
    expect(share).toBeLessThan(0.2);
    expect(await metricValue(d, "tessera_decoder_render_pool_renders_total")).toBe(renders + 1);
  }, 60_000);

  it("has the pixels of the same tile painted as a tile, on the event loop", async () => {
    const renders = await metricValue(d, "tessera_decoder_render_pool_renders_total");
    const here = await tile("tile");
    expect(await metricValue(d, "tessera_decoder_render_pool_renders_total")).toBe(renders);
    expect((await tile()).equals(here)).toBe(true);
  }, 60_000);
});

describe("the render processes of a decoder process", () => {
  for (const [how, end] of [["SIGKILL", killDecoder], ["SIGTERM", stopDecoder]] as const) {
    it(`end with it when it ends by ${how}`, async () => {
      const decoder = await startDecoderProcess({ TESSERA_DECODER_SECRET: d.secret, TESSERA_DECODER_PORT: "0", TESSERA_DATA_DIR: dir });
      // The first process starts with the decoder.
      await expect.poll(() => renderProcesses(decoder.process.pid!).length, { timeout: 10_000 }).toBeGreaterThan(0);
      const pids = renderProcesses(decoder.process.pid!);
      await end(decoder);
      await expect.poll(() => pids.every(ended), { timeout: 5_000 }).toBe(true);
    }, 30_000);
  }
});

describe("a refusal crossing between processes", () => {
  it("keeps its kind, its Retry-After and the detail the decoder logs", () => {
    const refusal = badGateway("malformed TIFF: no image", "s3://bucket/big.tif: malformed TIFF: no image");
    expect(fromWire(toWire(refusal))).toMatchObject({ kind: "bad_gateway", message: refusal.message, detail: refusal.detail });
    expect(fromWire(toWire(new HttpError("overloaded", "busy", 1)))).toMatchObject({ kind: "overloaded", retryAfterSeconds: 1 });
  });
});
