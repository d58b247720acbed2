// The decoder's runtime limits on a real decoder over the bundled COGs: the request limiter, the
// work budget with its single exclusive retry, deadlines and cancellation, and their metrics.
// GatedCatalog holds tile reads so requests can be kept in flight deterministically.

import { execFileSync } from "node:child_process";
import { request, type IncomingMessage } from "node:http";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { deflateSync } from "node:zlib";
import jpegTurbo from "@julusian/jpeg-turbo";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DecodedBlockCache } from "../../regional/cog/block-cache";
import { Cog } from "../../regional/cog/cog";
import { RequestLimiter } from "../../regional/runtime/request-limiter";
import { LocalCatalog } from "../../regional/source/local";
import { ResourceLimitError, WorkBudget } from "../../regional/runtime/work-budget";
import { ESTIMATE_HEADER, NEEDED_HEADER } from "../../shared/cost";
import { DECODER, GRANT_HEADER, limitHeaders, signedHeaders, TIMEOUT_HEADER, type SourceInfo } from "../../shared/protocol";
import { buildTiff } from "../support/tiff-builder";
import { fixtureDir, GatedCatalog, metricValue, REFERENCE_PNG, signedGet, startDecoder, type Decoder } from "./regional-helpers";

let fixtures: Awaited<ReturnType<typeof fixtureDir>>;
beforeAll(async () => {
  fixtures = await fixtureDir();
});
afterAll(async () => {
  await fixtures?.remove();
});

const MIB = 1024 * 1024;
/** One 256² RGB tile by the shared estimate: (2 × the block read + the output + the encoder's input) × 3. */
const ONE_TILE_COST = (2 + 1 + 1) * 256 * 256 * 3;

async function imageUrl(d: Decoder, canonical: string): Promise<string> {
  const info = (await (await signedGet(d, DECODER.info("deflate"))).json()) as SourceInfo;
  return DECODER.image("deflate", canonical, info.version);
}

/** Starts a signed GET without awaiting it; `abort` disconnects the client. */
async function start(d: Decoder, pathAndQuery: string, headers: Record<string, string> = {}) {
  const client = new AbortController();
  const response = fetch(d.url + pathAndQuery, { signal: client.signal, headers: { ...headers, ...(await signedHeaders(d.secret, "GET", pathAndQuery)) } });
  response.catch(() => {});
  return { response, abort: () => client.abort() };
}

async function withDecoder(options: Parameters<typeof startDecoder>[2], test: (d: Decoder, catalog: GatedCatalog) => Promise<void>) {
  const catalog = new GatedCatalog(new LocalCatalog(fixtures.dir));
  const d = await startDecoder(catalog, 3, { prefetchRing: 0, blockCache: new DecodedBlockCache(0), ...options });
  try {
    await test(d, catalog);
  } finally {
    catalog.pass();
    await d.close();
  }
}

describe("request limiter", () => {
  it("refuses the request over the limit at once with 503 + Retry-After, and frees permits", async () => {
    await withDecoder({ limiter: new RequestLimiter(1) }, async (d, catalog) => {
      const url = await imageUrl(d, "0,0,256,256/256,256/0/default.jpg");
      const held = await start(d, url);
      await catalog.readsStarted(1);
      expect(await metricValue(d, "tessera_decoder_requests_in_flight")).toBe(1);

      // (imageUrl's info request would itself be refused: build the path from the held one.)
      const refused = await signedGet(d, url.replace("0,0,256,256", "256,0,256,256"));
      expect(refused.status).toBe(503);
      expect(refused.headers.get("retry-after")).toBe("1");
      expect(await refused.json()).toEqual({ error: "overloaded", message: "decoder busy: 1 requests in flight", requestId: expect.any(String) });
      expect(await metricValue(d, "tessera_decoder_rejected_total", '{reason="overloaded"}')).toBeGreaterThanOrEqual(1);

      catalog.pass();
      expect((await held.response).status).toBe(200);
      expect(await metricValue(d, "tessera_decoder_requests_in_flight")).toBe(0);
      expect((await signedGet(d, url)).status).toBe(200);
    });
  });

  it("lets a request's own background work (tile-table prefetch) run without a second permit", async () => {
    await withDecoder({ limiter: new RequestLimiter(1), prefetchRing: 8 }, async (d, catalog) => {
      catalog.pass();
      // Opening the source starts the prefetch; with one permit, the request still succeeds.
      const res = await signedGet(d, await imageUrl(d, "0,0,256,256/256,256/0/default.jpg"));
      expect(res.status).toBe(200);
    });
  });
});

describe("/file transfers", () => {
  it("stream under a cap of their own, beside the request limiter, and are not cut by the deadline once their headers are out", async () => {
    await withDecoder({ limiter: new RequestLimiter(1), maxFileTransfers: 1 }, async (d, catalog) => {
      const info = (await (await signedGet(d, DECODER.info("deflate"))).json()) as SourceInfo;
      const url = DECODER.file("deflate", info.version);
      // A 200 ms deadline from the edge; the store read is held well past it.
      const held = signedGet(d, url, undefined, { [TIMEOUT_HEADER]: "200" });
      await catalog.readsStarted(1);
      expect(await metricValue(d, "tessera_decoder_file_transfers")).toBe(1);
      expect(await metricValue(d, "tessera_decoder_requests_in_flight")).toBe(0);
      // The one request permit is free for a decode; a second transfer is over the cap.
      const second = await signedGet(d, url);
      expect(second.status).toBe(503);
      expect(((await second.json()) as { message: string }).message).toContain("1 file transfers in flight");
      await new Promise((r) => setTimeout(r, 400));
      catalog.pass();
      const res = await held;
      expect(res.status).toBe(200);
      const body = Buffer.from(await res.arrayBuffer());
      expect(body.equals(await readFile(path.join(fixtures.dir, "deflate.tif")))).toBe(true);
      expect(await metricValue(d, "tessera_decoder_file_transfers")).toBe(0);
      expect((await signedGet(d, await imageUrl(d, "0,0,64,64/max/0/default.jpg"))).status).toBe(200);
    });
  });
});

describe("work budget", () => {
  it("a request that finds the allowance taken waits for exclusive admission and retries once", async () => {
    const budget = new WorkBudget(Math.floor(1.5 * ONE_TILE_COST));
    await withDecoder({ budget }, async (d, catalog) => {
      const first = await start(d, await imageUrl(d, "0,0,256,256/256,256/0/default.jpg"));
      await catalog.readsStarted(1);
      expect(budget.usedBytes).toBe(ONE_TILE_COST);

      const second = await start(d, await imageUrl(d, "256,0,256,256/256,256/0/default.jpg"));
      await expect.poll(() => metricValue(d, "tessera_decoder_work_budget_waiting")).toBe(1);
      expect(await metricValue(d, "tessera_decoder_work_budget_retries_total")).toBe(1);
      // While a retry waits, even a request that would fit is refused (it cannot jump the line).
      const direct = await Cog.open(await new LocalCatalog(fixtures.dir).open("deflate", undefined), { budget, prefetchRing: 0 });
      await expect(direct.readWindow(0, { x: 0, y: 0, w: 16, h: 16 })).rejects.toBeInstanceOf(ResourceLimitError);
      await direct.close();

      catalog.pass();
      const answered = await first.response;
      expect(answered.status).toBe(200);
      const retried = await second.response;
      expect(retried.status).toBe(200);
      await answered.arrayBuffer();
      await retried.arrayBuffer();
      await expect.poll(() => budget.usedBytes).toBe(0);
      // One tile's work at a time; beside it, at most the answers being written (each keeps a
      // reservation of the encoder buffer it lies in until its last byte is out).
      const encoderBuffer = jpegTurbo.bufferSize({ width: 256, height: 256, subsampling: jpegTurbo.SAMP_420 });
      const peak = await metricValue(d, "tessera_decoder_work_budget_peak_bytes");
      expect(peak).toBeGreaterThan(ONE_TILE_COST);
      expect(peak).toBeLessThanOrEqual(ONE_TILE_COST + 2 * encoderBuffer);
      expect(await metricValue(d, "tessera_decoder_work_budget_limit_bytes")).toBe(budget.limitBytes);
    });
  });

  it("a tile never waits behind a full that waits for exclusive admission", async () => {
    const budget = new WorkBudget(64 * MIB);
    await withDecoder({ budget }, async (d, catalog) => {
      catalog.pass(); // no read is held: only the budget makes anyone wait
      const hold = budget.tryReserve(64 * MIB - 2 * ONE_TILE_COST, "someone else");
      // ^3000 px: (2 × 1M read + 9M scaled + 9M encoded) px × 3 = 60 MB, a full; it must wait.
      const full = await start(d, await imageUrl(d, "full/%5E3000,/0/default.jpg"));
      await expect.poll(() => metricValue(d, "tessera_decoder_work_budget_waiting")).toBe(1);

      const started = performance.now();
      const tile = await signedGet(d, await imageUrl(d, "0,0,256,256/256,256/0/default.jpg"), undefined, { [TIMEOUT_HEADER]: "3000" });
      expect(tile.status).toBe(200);
      expect(performance.now() - started).toBeLessThan(1500);
      expect(await metricValue(d, "tessera_decoder_work_budget_waiting")).toBe(1); // the full still waits

      hold.release();
      expect((await full.response).status).toBe(200);
    });
  });

  it("the retry waits under the request's original deadline (408 when it expires)", async () => {
    const budget = new WorkBudget(ONE_TILE_COST);
    await withDecoder({ budget }, async (d, catalog) => {
      const first = await start(d, await imageUrl(d, "0,0,256,256/256,256/0/default.jpg"));
      await catalog.readsStarted(1);
      const res = await signedGet(d, await imageUrl(d, "256,0,256,256/256,256/0/default.jpg"), undefined, { [TIMEOUT_HEADER]: "150" });
      expect(res.status).toBe(408);
      expect(((await res.json()) as { error: string }).error).toBe("deadline");
      expect(budget.waiting).toBe(0);
      catalog.pass();
      expect((await first.response).status).toBe(200);
    });
  });

  it("a request that alone exceeds the budget fails with 413 before any read", async () => {
    await withDecoder({ budget: new WorkBudget(4 * MIB) }, async (d, catalog) => {
      // max is the largest unrotated size the budget holds; rotated, its canvas is larger.
      const res = await signedGet(d, await imageUrl(d, "full/max/45/default.jpg"));
      expect(res.status).toBe(413);
      expect(((await res.json()) as { message: string }).message).toMatch(/more than the whole 4\.0 MiB work budget/);
      expect(catalog.tileReads).toHaveLength(0);
    });
  });

  it("a request over the DO's grant is refused before any read, with the bytes it needs", async () => {
    const budget = new WorkBudget(MIB);
    await withDecoder({ budget }, async (d, catalog) => {
      const url = await imageUrl(d, "0,0,256,256/256,256/0/default.jpg");
      const over = await signedGet(d, url, undefined, { [GRANT_HEADER]: String(ONE_TILE_COST - 1) });
      expect(over.status).toBe(503);
      expect(over.headers.get(NEEDED_HEADER)).toBe(String(ONE_TILE_COST));
      expect(catalog.tileReads).toHaveLength(0);
      // Within its grant it is reserved at once, though the decoder's own budget is all taken.
      const hold = budget.tryReserve(MIB, "someone else");
      catalog.pass();
      const within = await signedGet(d, url, undefined, { [GRANT_HEADER]: String(ONE_TILE_COST) });
      expect(within.status).toBe(200);
      expect(within.headers.get(ESTIMATE_HEADER)).toBe(String(ONE_TILE_COST));
      hold.release();
    });
  });

  it("a replayed grant reserves no memory and takes no permit, while its request runs or after it ended", async () => {
    await withDecoder({}, async (d, catalog) => {
      const url = await imageUrl(d, "full/max/0/default.jpg");
      const headers = await signedHeaders(d.secret, "GET", url, { grantBytes: String(64 * MIB), partition: "full", requestId: "granted-once" });
      const send = () => fetch(d.url + url, { headers });
      const taken = async () => [await metricValue(d, "tessera_decoder_work_budget_used_bytes"), await metricValue(d, "tessera_decoder_requests_in_flight")];
      const held = send();
      await catalog.readsStarted(1);
      const holding = await taken();
      const replay = await send();
      expect(replay.status).toBe(401);
      expect(((await replay.json()) as { message: string }).message).toBe("replayed edge request: request id granted-once was taken already");
      expect(await taken()).toEqual(holding);
      catalog.pass();
      const answer = await held;
      expect(answer.status).toBe(200);
      await answer.arrayBuffer();
      expect((await send()).status).toBe(401);
      expect(await metricValue(d, "tessera_decoder_decodes_total", '{partition="full"}')).toBe(1);
      expect(await taken()).toEqual([0, 0]);
    });
  });

  it("direct low-level reads stay fail-fast", async () => {
    const budget = new WorkBudget(MIB);
    const cog = await Cog.open(await new LocalCatalog(fixtures.dir).open("deflate", undefined), { budget, prefetchRing: 0 });
    try {
      const hold = budget.tryReserve(MIB, "someone else");
      const started = performance.now();
      await expect(cog.readWindow(0, { x: 0, y: 0, w: 64, h: 64 })).rejects.toBeInstanceOf(ResourceLimitError);
      expect(performance.now() - started).toBeLessThan(1000); // failed, did not wait
      hold.release();
      expect(await cog.readWindow(0, { x: 0, y: 0, w: 64, h: 64 })).toMatchObject({ width: 64, height: 64 });
      expect(budget.usedBytes).toBe(0);
    } finally {
      await cog.close();
    }
  });

  it("a shared block fetch keeps its reservation after the request that started it is cancelled", async () => {
    const budget = new WorkBudget(64 * MIB);
    await withDecoder({ budget }, async (d, catalog) => {
      const url = await imageUrl(d, "0,0,256,256/256,256/0/default.jpg");
      const a = await start(d, url);
      await catalog.readsStarted(1);
      const b = await start(d, url); // joins a's fetch of the same block
      await expect.poll(() => budget.usedBytes).toBe(2 * ONE_TILE_COST);
      a.abort();
      // a's own reservation is gone, but the fetch it started still holds a share of it.
      await expect.poll(() => metricValue(d, "tessera_decoder_rejected_total", '{reason="cancelled"}')).toBe(1);
      expect(budget.usedBytes).toBe(2 * ONE_TILE_COST);
      catalog.pass();
      expect((await b.response).status).toBe(200);
      await expect.poll(() => budget.usedBytes).toBe(0);
      expect(catalog.tileReads).toHaveLength(1); // one fetch served both
    });
  });
});

describe("reads through geotiff.js (strips, planar tiles)", () => {
  // The layouts the block reader does not take: GDAL writes them from the test pattern.
  const georeferenced = ["-a_srs", "EPSG:4326", "-a_ullr", "-180", "90", "180", "-90"];
  const layouts = [
    { id: "strips", options: ["-co", "TILED=NO", "-co", "BLOCKYSIZE=64"], route: "image" },
    { id: "planar", options: ["-co", "TILED=YES", "-co", "INTERLEAVE=BAND"], route: "image" },
    // A map tile reads its bands through geotiff.js too (bands.ts).
    { id: "planar-map", options: ["-co", "TILED=YES", "-co", "INTERLEAVE=BAND", ...georeferenced], route: "tile" },
  ];
  beforeAll(() => {
    for (const { id, options } of layouts) {
      execFileSync("gdal_translate", ["-q", "-co", "COMPRESS=DEFLATE", ...options, REFERENCE_PNG, path.join(fixtures.dir, `${id}.tif`)], { stdio: "pipe" });
    }
  });

  it.each(layouts)("a cancelled request over $id ($route) keeps its reservation until the read it started settles", async ({ id, route }) => {
    const budget = new WorkBudget(64 * MIB);
    // Held reads notice their abort only once let through, as a store read under way.
    const catalog = new GatedCatalog(new LocalCatalog(fixtures.dir), { noticesAbort: false });
    const d = await startDecoder(catalog, 3, { prefetchRing: 0, blockCache: new DecodedBlockCache(0), budget });
    try {
      const info = (await (await signedGet(d, DECODER.info(id))).json()) as SourceInfo;
      const path = route === "image" ? DECODER.image(id, "0,0,256,256/256,256/0/default.png", info.version) : DECODER.tile(id, "WorldCRS84Quad/0/0/0.png", info.version);
      const req = await start(d, path);
      await catalog.readsStarted(1);
      const reserved = await metricValue(d, "tessera_decoder_work_budget_used_bytes");
      expect(reserved).toBeGreaterThan(0);
      req.abort();
      // The request has ended at once, but its read is still under way: its memory stays counted.
      await expect.poll(() => metricValue(d, "tessera_decoder_rejected_total", '{reason="cancelled"}')).toBe(1);
      await new Promise((r) => setTimeout(r, 100));
      expect(await metricValue(d, "tessera_decoder_work_budget_used_bytes")).toBe(reserved);
      catalog.pass();
      await expect.poll(() => metricValue(d, "tessera_decoder_work_budget_used_bytes")).toBe(0);
    } finally {
      catalog.pass();
      await d.close();
    }
  });

  it("a read that fails at one block keeps its reservation until its other blocks' reads settle", async () => {
    // Planar RGB, 16²: plane 0's tile (the file's first bytes after the header) is corrupt and
    // read at once; planes 1 and 2 are honest, their reads held. geotiff.js gives up at plane 0.
    const planes = [Uint8Array.from({ length: 50 }, (_, i) => i * 7), deflateSync(new Uint8Array(256)), deflateSync(new Uint8Array(256))];
    const tags = [{ tag: 284, type: 3 as const, values: [2] }];
    await writeFile(path.join(fixtures.dir, "failing-plane.tif"), buildTiff({ width: 16, height: 16, tileWidth: 16, tileHeight: 16, compression: 8, tiles: planes, extraTags: tags }));
    const budget = new WorkBudget(64 * MIB);
    const catalog = new GatedCatalog(new LocalCatalog(fixtures.dir), { noticesAbort: false, ungated: (offset) => offset === 8 });
    const d = await startDecoder(catalog, 3, { prefetchRing: 0, blockCache: new DecodedBlockCache(0), budget });
    try {
      const info = (await (await signedGet(d, DECODER.info("failing-plane"))).json()) as SourceInfo;
      const held = signedGet(d, DECODER.image("failing-plane", "full/max/0/default.png", info.version));
      await catalog.readsStarted(2);
      const res = await held;
      expect(res.status).toBe(502);
      expect(((await res.json()) as { message: string }).message).toBe("malformed TIFF: corrupt Deflate block");
      // Answered, but planes 1 and 2 are still being read: their memory stays counted.
      await new Promise((r) => setTimeout(r, 100));
      expect(await metricValue(d, "tessera_decoder_work_budget_used_bytes")).toBeGreaterThan(0);
      catalog.pass();
      await expect.poll(() => metricValue(d, "tessera_decoder_work_budget_used_bytes")).toBe(0);
    } finally {
      catalog.pass();
      await d.close();
    }
  });
});

describe("header prefetch", () => {
  it("runs only when no foreground work owns the budget, and not at all with a ring of 0", async () => {
    const open = async (budget: WorkBudget, prefetchRing: number) => {
      const cog = await Cog.open(await new LocalCatalog(fixtures.dir).open("deflate", undefined), { budget, prefetchRing });
      await new Promise((r) => setTimeout(r, 50)); // background loads settle
      await cog.close();
    };
    const idle = new WorkBudget(64 * MIB);
    await open(idle, 8);
    expect(idle.peakBytes).toBe(3 * 65536); // one header block per level, reserved fail-fast
    expect(idle.usedBytes).toBe(0);

    const busy = new WorkBudget(64 * MIB);
    const foreground = busy.tryReserve(1, "foreground work");
    await open(busy, 8);
    expect(busy.peakBytes).toBe(1); // skipped: foreground work owns the allowance
    foreground.release();

    const off = new WorkBudget(64 * MIB);
    await open(off, 0);
    expect(off.peakBytes).toBe(0);
  });
});

describe("deadlines and cancellation", () => {
  it("a request past its deadline answers 408 and its reads are aborted", async () => {
    await withDecoder({ requestTimeoutMs: 200 }, async (d, catalog) => {
      const res = await signedGet(d, await imageUrl(d, "0,0,256,256/256,256/0/default.jpg"));
      expect(res.status).toBe(408);
      expect(await res.json()).toEqual({ error: "deadline", message: "request deadline of 200 ms exceeded", requestId: expect.any(String) });
      expect(String(catalog.aborted[0])).toContain("deadline of 200 ms");
      expect(await metricValue(d, "tessera_decoder_rejected_total", '{reason="deadline"}')).toBe(1);
    });
  });

  it("takes a per-request deadline from the edge, and rejects a malformed one", async () => {
    await withDecoder({}, async (d) => {
      const url = await imageUrl(d, "0,0,256,256/256,256/0/default.jpg");
      const res = await signedGet(d, url, undefined, { [TIMEOUT_HEADER]: "100" });
      expect(res.status).toBe(408);
      expect(((await res.json()) as { message: string }).message).toBe("request deadline of 100 ms exceeded");
      const bad = await signedGet(d, url, undefined, { [TIMEOUT_HEADER]: "soon" });
      expect(bad.status).toBe(400);
    });
  });

  it("a cancel from the admission DO stops the request's I/O; its answer, sent once the work has stopped, ends its permit", async () => {
    await withDecoder({}, async (d, catalog) => {
      const url = await imageUrl(d, "full/max/0/default.jpg");
      const headers = limitHeaders({ grantBytes: String(64 * MIB), partition: "full", requestId: "cancelled-1" });
      const held = signedGet(d, url, undefined, headers);
      await catalog.readsStarted(1);
      expect(await metricValue(d, "tessera_decoder_decodes_running", '{partition="full"}')).toBe(1);
      const cancel = DECODER.cancel("cancelled-1");
      // Only the edge may cancel: unsigned, or signed for another method, it is refused.
      const post = async (method: string) => fetch(d.url + cancel, { method: "POST", headers: await signedHeaders(d.secret, method, cancel) });
      expect((await fetch(d.url + cancel, { method: "POST" })).status).toBe(401);
      expect((await post("GET")).status).toBe(401);
      expect((await post("POST")).status).toBe(204);
      const answer = await held;
      await answer.arrayBuffer();
      expect(String(catalog.aborted[0])).toContain("cancelled");
      expect(await metricValue(d, "tessera_decoder_rejected_total", '{reason="cancelled"}')).toBe(1);
      expect(await metricValue(d, "tessera_decoder_decodes_running", '{partition="full"}')).toBe(0);
      expect(await metricValue(d, "tessera_decoder_requests_in_flight")).toBe(0);
      expect(await metricValue(d, "tessera_decoder_work_budget_used_bytes")).toBe(0);
      // A cancel for a request that has ended, or never was, changes nothing.
      expect((await post("POST")).status).toBe(204);
    });
  });

  it("an answer keeps a work reservation of its own size until its last byte is written", async () => {
    await withDecoder({}, async (d, catalog) => {
      catalog.pass();
      // Noise as an LZW TIFF: 12 MB that do not compress, more than the sockets buffer.
      await sharp({ create: { width: 2000, height: 2000, channels: 3, background: "#808080", noise: { type: "gaussian", mean: 128, sigma: 60 } } })
        .tiff({ tile: true, tileWidth: 256, tileHeight: 256, compression: "deflate" })
        .toFile(path.join(fixtures.dir, "noise.tif"));
      const info = (await (await signedGet(d, DECODER.info("noise"))).json()) as SourceInfo;
      const url = DECODER.image("noise", "full/max/0/default.tif", info.version);
      const headers = await signedHeaders(d.secret, "GET", url);
      const { status, length, body } = await new Promise<{ status: number; length: number; body: IncomingMessage }>((resolve, reject) => {
        const req = request(d.url + url, { headers }, (res) => {
          res.pause(); // a slow client: reads nothing yet
          resolve({ status: res.statusCode ?? 0, length: Number(res.headers["content-length"]), body: res });
        });
        req.on("error", reject);
        req.end();
      });
      expect(status).toBe(200);
      expect(length).toBeGreaterThan(8 * MIB);
      await new Promise((r) => setTimeout(r, 100));
      expect(await metricValue(d, "tessera_decoder_work_budget_used_bytes")).toBe(length);
      expect(await metricValue(d, "tessera_decoder_requests_in_flight")).toBe(1);
      body.resume();
      await new Promise((r) => body.on("end", r));
      await expect.poll(() => metricValue(d, "tessera_decoder_work_budget_used_bytes")).toBe(0);
      expect(await metricValue(d, "tessera_decoder_requests_in_flight")).toBe(0);
    });
  });

  it("a client that disconnects stops all further I/O of its request", async () => {
    await withDecoder({}, async (d, catalog) => {
      // Sixteen blocks, fetched in coalesced runs: the first run is held, the client leaves.
      const req = await start(d, await imageUrl(d, "full/max/0/default.jpg"));
      await catalog.readsStarted(1);
      const readsAtAbort = catalog.tileReads.length;
      req.abort();
      await expect.poll(() => catalog.aborted.length).toBeGreaterThan(0);
      expect(String(catalog.aborted[0])).toContain("client disconnected");
      catalog.pass();
      await new Promise((r) => setTimeout(r, 200));
      expect(catalog.tileReads.length).toBe(readsAtAbort);
      expect((await fetch(d.url + DECODER.health)).status).toBe(200);
    });
  });
});
