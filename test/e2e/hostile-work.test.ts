// Cheap URLs for expensive work, as a hostile client sends them to the whole stack with its
// default configuration (no MAX_* set): each is refused within a second, before any pixel is
// read, and leaves every permit free. Before the work was counted, the upscale took 46 s and
// 2.4 GB (a 512 MiB budget) to answer 200, the thumbnail of the flat source held a permit and a
// core until REQUEST_TIMEOUT, and the 8150² jp2 was a 502 after 3.5–7.7 s that left 2.3 GB resident.
import { copyFile, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStack, type Stack } from "../../infra/local/stack";
import { ROOT } from "../../infra/root";
import { flatTiff } from "../support/tiff-builder";
import { sumMetric } from "../support/metrics";

let stack: Stack;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "tessera-hostile-"));
  await copyFile(path.join(ROOT, "samples/test-pattern.tif"), path.join(dir, "test-pattern.tif"));
  await writeFile(path.join(dir, "flat.tif"), flatTiff(65536)); // no overviews, every tile present
  stack = await startStack({ decoderEnv: { TESSERA_DATA_DIR: dir } });
});
afterAll(async () => {
  await stack?.stop();
  await rm(dir, { recursive: true, force: true });
});

/** The answer to `target`, its time, and the decoder's blocks decoded meanwhile. */
async function ask(target: string) {
  const decoded = () => sumMetric(stack.decoders[0].url, "tessera_decoder_blocks_decoded_total ");
  const decodedBefore = await decoded();
  const started = performance.now();
  const res = await fetch(stack.url + target);
  const body = (await res.json()) as { error: string; message: string };
  const ms = performance.now() - started;
  return { status: res.status, body, ms, decoded: (await decoded()) - decodedBefore };
}

describe("cheap URLs for expensive work, against the default configuration", () => {
  it("an upscale of the 1000² pattern to 20000² is refused at the edge: past the declared maxArea", async () => {
    const info = (await (await fetch(`${stack.url}/iiif/3/test-pattern/info.json`)).json()) as { maxArea?: number };
    expect(info.maxArea).toBeGreaterThan(1000 * 1000);
    expect(info.maxArea).toBeLessThan(20000 * 20000);
    const { status, body, ms, decoded } = await ask("/iiif/3/test-pattern/full/%5E20000,20000/0/default.png");
    expect(status).toBe(400);
    expect(body.message).toMatch(/maxArea/);
    expect(ms).toBeLessThan(1000);
    expect(decoded).toBe(0);
  });

  it("a thumbnail of a 65536² source without overviews is refused with 413 before a block is decoded", async () => {
    const { status, body, ms, decoded } = await ask("/iiif/3/flat/full/256,/0/default.jpg");
    expect(status, body.message).toBe(413);
    expect(body.error).toBe("too_large");
    expect(body.message).toMatch(/of one decoder core, more than the 60 s a request may take; .*overviews \(tessera validate says how/);
    expect(ms).toBeLessThan(1000);
    expect(decoded).toBe(0);
    expect(await sumMetric(stack.url, "tessera_admission_permits_in_use ")).toBe(0);
  });

  it("an 8150² JPEG 2000 of the pattern (within maxArea) is refused with 413 before a block is decoded, saying what fits", async () => {
    const { status, body, ms, decoded } = await ask("/iiif/3/test-pattern/full/%5Epct:815/!90/default.jp2");
    expect(status, body.message).toBe(413);
    expect(body.message).toMatch(/needs [\d.]+ MiB, more than the whole 512\.0 MiB work budget; a smaller size or region fits/);
    expect(ms).toBeLessThan(1000);
    expect(decoded).toBe(0);
    expect(await sumMetric(stack.url, "tessera_admission_permits_in_use ")).toBe(0);
  });
});
