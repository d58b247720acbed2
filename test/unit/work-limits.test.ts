// The decoder's limits on the work a request buys (shared/work.ts: a unit is about a millisecond
// of one core) and on the memory a grant may take, against a real in-process decoder over real
// COGs: what is refused, with which status and message, and that it is refused before any pixel
// is read (no block decoded, no tile read).
import { execFileSync } from "node:child_process";
import { copyFile, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NEEDED_HEADER, NEEDED_WORK_HEADER } from "../../shared/cost";
import { DECODER, GRANT_HEADER, GRANT_WORK_HEADER, GRANTED_PARTITION_HEADER, type SourceInfo } from "../../shared/protocol";
import { LocalCatalog } from "../../regional/source/local";
import { WorkBudget } from "../../regional/runtime/work-budget";
import { metricValue, SAMPLES, signedGet, startDecoder, type Decoder } from "./regional-helpers";

const MIB = 1024 * 1024;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "tessera-work-"));
  await copyFile(path.join(SAMPLES, "test-pattern.tif"), path.join(dir, "pattern.tif"));
  // A 4000² JPEG TIFF with no overviews: a thumbnail of it decodes every one of its blocks.
  execFileSync("gdal_translate", [
    "-q", "-outsize", "4000", "4000", "-of", "GTiff", "-co", "TILED=YES", "-co", "COMPRESS=JPEG", "-co", "BLOCKXSIZE=512", "-co", "BLOCKYSIZE=512",
    path.join(SAMPLES, "test-pattern.tif"), path.join(dir, "flat.tif"),
  ]);
});
afterAll(() => rm(dir, { recursive: true, force: true }));

async function withDecoder(options: Parameters<typeof startDecoder>[2], test: (d: Decoder) => Promise<void>): Promise<void> {
  const d = await startDecoder(new LocalCatalog(dir), 2, options);
  try {
    await test(d);
  } finally {
    await d.close();
  }
}

async function version(d: Decoder, id: string): Promise<string> {
  return ((await (await signedGet(d, DECODER.info(id))).json()) as SourceInfo).version;
}

/** GET an image with the DO's grant signed in (bytes, work, partition). */
async function granted(d: Decoder, id: string, canonical: string, grant: { bytes: number; work: number; partition: "tile" | "full" }) {
  return signedGet(d, DECODER.image(id, canonical, await version(d, id)), undefined, {
    [GRANT_HEADER]: String(grant.bytes),
    [GRANT_WORK_HEADER]: String(grant.work),
    [GRANTED_PARTITION_HEADER]: grant.partition,
  });
}

describe("work a request buys", () => {
  it("without an edge, refuses with 413 a request one core could not finish within the deadline, before reading a pixel", async () => {
    // 4000² of JPEG decoded for a 256-pixel thumbnail: about 150 units, over a 100 ms deadline.
    await withDecoder({ requestTimeoutMs: 100 }, async (d) => {
      const res = await signedGet(d, DECODER.image("flat", "full/256,256/0/default.jpg", await version(d, "flat")));
      expect(res.status).toBe(413);
      const { error, message } = (await res.json()) as { error: string; message: string };
      expect(error).toBe("too_large");
      expect(message).toMatch(/would take about [\d.]+ s of one decoder core, more than the 0\.1 s a request may take; .*overviews \(tessera validate says how/);
      expect(await metricValue(d, "tessera_decoder_blocks_decoded_total")).toBe(0);
    });
  });

  it("sends back to the DO a tile-partition grant whose work the precise estimate exceeds", async () => {
    await withDecoder({}, async (d) => {
      const res = await granted(d, "flat", "full/256,256/0/default.jpg", { bytes: 32 * MIB - 1, work: 10, partition: "tile" });
      expect(res.status).toBe(503);
      expect(Number(res.headers.get(NEEDED_WORK_HEADER))).toBeGreaterThan(10);
      expect(Number(res.headers.get(NEEDED_HEADER))).toBeGreaterThan(0);
      expect(await metricValue(d, "tessera_decoder_blocks_decoded_total")).toBe(0);
    });
  });

  it("refuses with 413 a full whose work exceeds all its grant allows (the whole of REQUEST_TIMEOUT)", async () => {
    await withDecoder({}, async (d) => {
      const res = await granted(d, "flat", "full/256,256/0/default.jpg", { bytes: 512 * MIB, work: 100, partition: "full" });
      expect(res.status).toBe(413);
      expect(((await res.json()) as { message: string }).message).toMatch(/more than the 0\.1 s a request may take/);
      expect(await metricValue(d, "tessera_decoder_blocks_decoded_total")).toBe(0);
    });
  });
});

describe("a grant's memory against the decoder's own envelope", () => {
  it("refuses with 413 a full granted more memory than this decoder's whole work budget, and never reserves it", async () => {
    await withDecoder({ budget: new WorkBudget(16 * MIB) }, async (d) => {
      // 1000² upscaled to 4000²: about 200 MB, granted by a DO that counts other decoders' memory too.
      const res = await granted(d, "pattern", "full/%5E4000,4000/0/default.jpg", { bytes: 1024 * MIB, work: 60_000, partition: "full" });
      expect(res.status).toBe(413);
      expect(((await res.json()) as { message: string }).message).toMatch(/more than the whole 16\.0 MiB work budget/);
      // Only the header reads' own (a few blocks of 64 KiB): never the 200 MB.
      expect(await metricValue(d, "tessera_decoder_work_budget_peak_bytes")).toBeLessThan(MIB);
    });
  });

  it("answers 503 + Retry-After to a full granted while its memory is in use here", async () => {
    const budget = new WorkBudget(64 * MIB);
    const held = budget.tryReserve(60 * MIB, "another decoder's full");
    try {
      await withDecoder({ budget }, async (d) => {
        const res = await granted(d, "pattern", "full/%5E2000,2000/0/default.jpg", { bytes: 64 * MIB, work: 60_000, partition: "full" });
        expect(res.status).toBe(503);
        expect(res.headers.get("retry-after")).toBe("1");
        expect(budget.peakBytes).toBe(60 * MIB);
      });
    } finally {
      held.release();
    }
  });
});

describe("sizes a decoder declares", () => {
  it("declares a finite maxArea for an image that renders whole, and refuses an upscale past it before any work", async () => {
    await withDecoder({ budget: new WorkBudget(64 * MIB) }, async (d) => {
      const info = (await (await signedGet(d, DECODER.info("pattern"))).json()) as SourceInfo;
      expect(info.maxArea).toBeGreaterThan(1000 * 1000);
      const side = Math.ceil(Math.sqrt(info.maxArea!)) + 100;
      const res = await signedGet(d, DECODER.image("pattern", `full/%5E${side},${side}/0/default.png`, info.version));
      expect(res.status).toBe(413);
      expect(await metricValue(d, "tessera_decoder_blocks_decoded_total")).toBe(0);
      // At the declared area, the whole image is delivered.
      const at = Math.floor(Math.sqrt(info.maxArea!));
      expect((await signedGet(d, DECODER.image("pattern", `full/%5E${at},${at}/0/default.jpg`, info.version))).status).toBe(200);
    });
  });
});
