// One admission contract across the tiers: behind the edge, the admission DO's limits (what is
// left of its REQUEST_TIMEOUT, the memory it granted) replace the decoder's own defaults rather
// than stacking on them. A request signed without the DO's limits still meets the decoder's own.
import { execFileSync } from "node:child_process";
import { copyFile, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStack, type Stack } from "../../infra/local/stack";
import { DECODER, signedHeaders, VERSION_HEADER, type SourceInfo } from "../../shared/protocol";

const SECRET = "contract-test-secret";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "tessera-contract-e2e-"));
  const samples = new URL("../../samples/", import.meta.url).pathname;
  await copyFile(`${samples}test-pattern.tif`, `${dir}/test-pattern.tif`);
  // The same picture with an alpha band: the edge assumes 3 channels, the decoder reads 4.
  execFileSync("gdal_translate", [
    "-q", "-of", "COG", "-b", "1", "-b", "2", "-b", "3", "-b", "3", "-colorinterp", "red,green,blue,alpha",
    "-co", "COMPRESS=DEFLATE", "-co", "BLOCKSIZE=256", `${samples}test-pattern.tif`, `${dir}/rgba.tif`,
  ]);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A stack of one decoder with these limits, behind a DO with a 10 s REQUEST_TIMEOUT. */
function withStack(decoderEnv: Record<string, string>): () => Stack {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({
      decoders: 1,
      decoderEnv: {
        TESSERA_DECODER_SECRET: SECRET,
        TESSERA_DECODER_CAPACITY: "2",
        TESSERA_DECODER_MEMORY_LIMIT: "400000000",
        TESSERA_HEARTBEAT_INTERVAL: "1",
        TESSERA_DATA_DIR: dir,
        ...decoderEnv,
      },
      vars: { DECODER_SECRET: SECRET, NTHREADS: "0", MEMORY_LIMIT: "0", QUEUE_TIMEOUT: "2", REQUEST_TIMEOUT: "10",
        LARGE_DECODE_THRESHOLD_BYTES: "10000000", LARGE_DECODE_THRESHOLD_WORK: "1000000" },
    });
  });
  afterAll(async () => {
    await stack?.stop();
  });
  return () => stack;
}

/** The decoder's route, signed as a caller without an edge signs it: no granted limits. */
async function direct(stack: Stack, path: string): Promise<Response> {
  return fetch(stack.decoders[0].url + path, { headers: await signedHeaders(SECRET, "GET", path) });
}

describe("the DO's deadline replaces the decoder's default", () => {
  const stack = withStack({ TESSERA_REQUEST_TIMEOUT_MS: "1" });

  it("answers within REQUEST_TIMEOUT although the decoder's own deadline is 1 ms", async () => {
    expect((await fetch(`${stack().url}/iiif/3/test-pattern/info.json`)).status).toBe(200);
    expect((await fetch(`${stack().url}/iiif/3/test-pattern/0,0,256,256/256,/0/default.jpg`)).status).toBe(200);
  });

  it("keeps the decoder's own deadline for a request without the DO's", async () => {
    // A whole-image PNG render, which no machine finishes in 1 ms (an info answer from the
    // already opened source can).
    const viaEdge = await fetch(`${stack().url}/iiif/3/test-pattern/full/max/0/default.png`);
    const version = viaEdge.headers.get(VERSION_HEADER)!;
    expect(version).toBeTruthy();
    // Work no core finishes within it is refused before any pixel is read.
    const res = await direct(stack(), DECODER.image("test-pattern", "full/1000,1000/0/default.png", version));
    expect(res.status).toBe(413);
    expect(((await res.json()) as { message: string }).message).toMatch(/more than the [\d.]+ s a request may take/);
  });
});

describe("the DO's memory grant replaces the decoder's work budget", () => {
  const stack = withStack({ TESSERA_WORK_BUDGET_MB: "1" });

  // max is the largest unrotated size the 1 MiB budget renders (the 250² overview, ~0.75 MB by
  // the estimate); turned 45°, its canvas and the encoder's input double: ~1.3 MB.
  const ROTATED_MAX = "full/max/45/default.jpg";

  it("decodes a request the DO admitted that a 1 MiB work budget alone would refuse", async () => {
    const res = await fetch(`${stack().url}/iiif/3/test-pattern/${ROTATED_MAX}`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/jpeg");
    expect((await res.arrayBuffer()).byteLength).toBeGreaterThan(1000);
  });

  it("keeps the decoder's own budget for a request without the DO's grant", async () => {
    const info = (await (await direct(stack(), DECODER.info("test-pattern"))).json()) as SourceInfo;
    const res = await direct(stack(), DECODER.image("test-pattern", ROTATED_MAX, info.version));
    expect(res.status).toBe(413);
  });
});

describe("one cost model: the edge classifies as the decoder does", () => {
  const stack = withStack({});
  const edgeMetric = async (name: string) => {
    const text = await (await fetch(`${stack().url}/metrics`)).text();
    return Number(text.split("\n").find((l) => l.startsWith(`${name} `))?.split(" ")[1]);
  };

  it("admits an RGBA render as the full it is at once: the edge knows the source's channels, so no tile grant is refused", async () => {
    // full/700: 8.94 MB with 3 channels (a tile), 11.92 MB with the real 4 (a full); the edge,
    // which assumed 3 before sources declared theirs, took a tile grant the decoder sent back.
    expect((await fetch(`${stack().url}/iiif/3/rgba/info.json`)).status).toBe(200); // cached by the edge from here
    const before = await edgeMetric("tessera_admission_classifier_disagreement_total");
    const released = await edgeMetric("tessera_admission_released_total");
    const res = await fetch(`${stack().url}/iiif/3/rgba/full/700,/0/default.png`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/png");
    await res.arrayBuffer();
    expect(await edgeMetric("tessera_admission_classifier_disagreement_total")).toBe(before);
    // One lease, the full's, released.
    expect(await edgeMetric("tessera_admission_released_total")).toBe(released + 1);
    expect(await edgeMetric("tessera_decode_memory_reserved_bytes")).toBe(0);
  });
});
