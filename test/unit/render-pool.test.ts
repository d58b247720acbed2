// Large renders run on the render pool's threads, off the decoder's event loop: a full's pixel
// work (block decodes, copies, resizes, encode) costs the main thread almost nothing, the
// answer's bytes are those of the same render on the main thread, and a cancelled full gives
// its work memory and its thread back.
//
// Why CPU time and not latency: on a loaded two-core machine a timed assertion (event-loop lag,
// a tile answered within N ms) passes or fails with the neighbours' load, while the share of the
// process's CPU time the main thread spends on a render depends only on where its work runs.
import { copyFile, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
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
  // The pool's first thread starts with the first large render: started here, not timed below.
  expect((await signedGet(d, DECODER.image("big", "full/2999,/0/default.jpg", version))).status).toBe(200);
}, 120_000);
afterAll(async () => {
  await d?.close();
  await rm(dir, { recursive: true, force: true });
});

const cpuMicros = ({ user, system }: NodeJS.CpuUsage) => user + system;

describe("a full render", () => {
  it("runs on a pool thread: the main thread spends a small share of its CPU time", async () => {
    const before = { thread: process.threadCpuUsage(), process: process.cpuUsage() };
    const res = await signedGet(d, DECODER.image("big", FULL, version));
    expect(res.status, await res.clone().text()).toBe(200);
    await res.arrayBuffer();
    const thread = cpuMicros(process.threadCpuUsage(before.thread));
    const whole = cpuMicros(process.cpuUsage(before.process));
    // Rendered on the main thread it took almost half the process's time (block copies, big
    // buffers, their collection); here the main thread serves the pool's reads and the HTTP
    // exchange, under a tenth.
    expect(thread / whole).toBeLessThan(0.2);
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

  it("an unscaled region TurboJPEG encodes on a pool thread crosses back whole", async () => {
    // Large enough for the full partition, small enough that no libvips step is needed: the
    // pool thread's answer lies in that thread's pooled encoder buffer.
    const region = "0,0,3600,3600/max/0/default.jpg";
    const res = await signedGet(d, DECODER.image("big", region, version));
    expect(res.status, await res.clone().text()).toBe(200);
    const meta = await sharp(Buffer.from(await res.arrayBuffer())).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(["jpeg", 3600, 3600]);
  }, 60_000);

  it("cancelled by its client, frees its work memory and its thread for the next", async () => {
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
    expect((await signedGet(d, DECODER.image("big", FULL, version))).status).toBe(200);
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

  it("paints on a pool thread, at its lower priority: the main thread spends a small share of the CPU time", async () => {
    const renders = await metricValue(d, "tessera_decoder_render_pool_renders_total");
    const before = { thread: process.threadCpuUsage(), process: process.cpuUsage() };
    await tile();
    const thread = cpuMicros(process.threadCpuUsage(before.thread));
    const whole = cpuMicros(process.cpuUsage(before.process));
    // Painted on the event loop, the main thread's share is 0.61-0.65 here (the rest is libvips'
    // encoding threads); pooled it is 0.07-0.16 alone and reached 0.21 beside CI's other stream.
    expect(thread / whole).toBeLessThan(0.3);
    expect(await metricValue(d, "tessera_decoder_render_pool_renders_total")).toBe(renders + 1);
  }, 60_000);

  it("has the pixels of the same tile painted as a tile, on the event loop", async () => {
    const renders = await metricValue(d, "tessera_decoder_render_pool_renders_total");
    const here = await tile("tile");
    expect(await metricValue(d, "tessera_decoder_render_pool_renders_total")).toBe(renders);
    expect((await tile()).equals(here)).toBe(true);
  }, 60_000);
});

describe("a refusal crossing between threads", () => {
  it("keeps its kind, its Retry-After and the detail the decoder logs", () => {
    const refusal = badGateway("malformed TIFF: no image", "s3://bucket/big.tif: malformed TIFF: no image");
    expect(fromWire(toWire(refusal))).toMatchObject({ kind: "bad_gateway", message: refusal.message, detail: refusal.detail });
    expect(fromWire(toWire(new HttpError("overloaded", "busy", 1)))).toMatchObject({ kind: "overloaded", retryAfterSeconds: 1 });
  });
});
