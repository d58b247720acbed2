// Admission through the real stack: two decoder processes that register by heartbeat, the
// edge Worker and admission DO in workerd (Miniflare), local-file sources.
import { execFileSync } from "node:child_process";
import { copyFile, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { killDecoder } from "../../infra/local/decoders";
import { startStack, type Stack } from "../../infra/local/stack";
import { sumMetric, until } from "../support/metrics";

let stack: Stack;
let dir: string;
const PER_DECODER_MEMORY = 5_000_000;

const edge = (name: string) => sumMetric(stack.url, `${name} `);
const imagesServed = (i: number) => sumMetric(stack.decoders[i].url, 'tessera_decoder_requests_total{route="image",status="200"');
const get = (p: string) => fetch(stack.url + p);

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "tessera-admission-e2e-"));
  const samples = new URL("../../samples/", import.meta.url).pathname;
  await copyFile(`${samples}test-pattern.tif`, `${dir}/rgb.tif`);
  // The same picture with an alpha band: the edge assumes 3 channels, the decoder reads 4.
  execFileSync("gdal_translate", [
    "-q", "-of", "COG", "-b", "1", "-b", "2", "-b", "3", "-b", "3", "-colorinterp", "red,green,blue,alpha",
    "-co", "COMPRESS=DEFLATE", "-co", "BLOCKSIZE=256", `${samples}test-pattern.tif`, `${dir}/rgba.tif`,
  ]);
  stack = await startStack({
    decoders: 2,
    decoderEnv: {
      TESSERA_DATA_DIR: dir,
      TESSERA_DECODER_CAPACITY: "2",
      TESSERA_DECODER_MEMORY_LIMIT: String(PER_DECODER_MEMORY),
      TESSERA_HEARTBEAT_INTERVAL: "1",
    },
    // full/700, of the 1000 px image: (2 × 1M read + 0.49M scaled + 0.49M encoded) px × 3
    // channels = 8.94 MB by the edge's estimate, × 4 = 11.92 MB by the decoder's for the alpha
    // copy: on either side of this threshold.
    vars: { NTHREADS: "0", MEMORY_LIMIT: "0", LARGE_DECODE_THRESHOLD_BYTES: "10000000", LARGE_DECODE_THRESHOLD_WORK: "1000000", DECODER_TTL: "2", QUEUE_TIMEOUT: "2", REQUEST_TIMEOUT: "10" },
  });
});
afterAll(async () => {
  await stack?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe("admission across registered decoders", () => {
  it("sizes permits and memory from the decoders' heartbeats", async () => {
    expect(await edge("tessera_admission_decoders_live")).toBe(2);
    expect(await edge("tessera_admission_permits_total")).toBe(4);
    expect(await edge("tessera_admission_tile_min_threads")).toBe(2);
    expect(await edge("tessera_admission_memory_limit_bytes")).toBe(2 * PER_DECODER_MEMORY);
    expect(await edge("tessera_decode_memory_budget_bytes")).toBe(7_500_000);
  });

  it("spreads decodes over both decoders", async () => {
    const before = [await imagesServed(0), await imagesServed(1)];
    const answers = await Promise.all(
      [0, 1, 2, 3, 4, 5].map((i) => get(`/iiif/3/rgb/${i * 100},0,100,100/max/0/default.jpg`)),
    );
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
    expect(await imagesServed(0)).toBeGreaterThan(before[0]);
    expect(await imagesServed(1)).toBeGreaterThan(before[1]);
  });

  it("classifies as the decoder does, the source's channels known at the edge: no disagreement, and an RGBA full too large refused at once", async () => {
    const before = await edge("tessera_admission_classifier_disagreement_total");
    expect((await get("/iiif/3/rgb/full/700,/0/default.jpg")).status).toBe(200);
    // 11.92 MB with its 4 channels (8.94 MB had the edge assumed 3): a full, which can never fit
    // the 7.5 MB full_mem.
    const tooLarge = await edge("tessera_decode_memory_too_large_total");
    expect((await get("/iiif/3/rgba/full/700,/0/default.jpg")).status).toBe(413);
    expect(await edge("tessera_admission_classifier_disagreement_total")).toBe(before);
    expect(await edge("tessera_decode_memory_too_large_total")).toBe(tooLarge + 1);
  });

  it("answers 413 for a decode that can never fit the full budget, without Retry-After", async () => {
    // full/max: (2 × 1M read + 1M scaled + 1M encoded) px × 3 = 12 MB > 7.5 MB.
    const tooLarge = await edge("tessera_decode_memory_too_large_total");
    const res = await get("/iiif/3/rgb/full/max/0/default.jpg");
    expect(res.status).toBe(413);
    expect(res.headers.get("retry-after")).toBeNull();
    expect(res.headers.get("cache-control")).toBe("no-store"); // the budget may grow
    expect(await edge("tessera_decode_memory_too_large_total")).toBe(tooLarge + 1);
  });

  it("drops a decoder that stops heartbeating from the sums, and takes it back when it returns", async () => {
    stack.decoders[1].process.kill("SIGSTOP");
    try {
      await until(async () => (await edge("tessera_admission_permits_total")) === 2);
      expect(await edge("tessera_admission_memory_limit_bytes")).toBe(PER_DECODER_MEMORY);
      // Every request now goes to the live one.
      expect((await get("/iiif/3/rgb/0,200,100,100/max/0/default.jpg")).status).toBe(200);
    } finally {
      stack.decoders[1].process.kill("SIGCONT");
    }
    await until(async () => (await edge("tessera_admission_permits_total")) === 4);
  });

  it("retries on the other decoder when one is gone, and forgets the dead one", async () => {
    await killDecoder(stack.decoders[1]);
    const retries = await edge("tessera_admission_decoder_retries_total");
    const answers = [];
    for (const i of [0, 1, 2, 3]) answers.push((await get(`/iiif/3/rgb/${i * 100},300,100,100/max/0/default.jpg`)).status);
    expect(answers).toEqual([200, 200, 200, 200]);
    expect(await edge("tessera_admission_decoder_retries_total")).toBe(retries + 1);
    expect(await edge("tessera_admission_decoders_live")).toBe(1);
    expect(await edge("tessera_admission_permits_in_use")).toBe(0);
  });
});
