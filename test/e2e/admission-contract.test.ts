// One admission contract across the tiers: behind the edge, the admission DO's limits (what is
// left of its REQUEST_TIMEOUT, the memory it granted) replace the decoder's own defaults rather
// than stacking on them. A request signed without the DO's limits still meets the decoder's own.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStack, type Stack } from "../../infra/local/stack";
import { DECODER, signRequest, SIGNATURE_HEADER, type SourceInfo } from "../../shared/protocol";

const SECRET = "contract-test-secret";

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
        ...decoderEnv,
      },
      vars: { DECODER_SECRET: SECRET, NTHREADS: "0", MEMORY_LIMIT: "0", QUEUE_TIMEOUT: "2", REQUEST_TIMEOUT: "10" },
    });
  });
  afterAll(async () => {
    await stack?.stop();
  });
  return () => stack;
}

/** The decoder's route, signed as a caller without an edge signs it: no granted limits. */
async function direct(stack: Stack, path: string): Promise<Response> {
  return fetch(stack.decoders[0].url + path, { headers: { [SIGNATURE_HEADER]: await signRequest(SECRET, "GET", path) } });
}

describe("the DO's deadline replaces the decoder's default", () => {
  const stack = withStack({ TESSERA_REQUEST_TIMEOUT_MS: "1" });

  it("answers within REQUEST_TIMEOUT although the decoder's own deadline is 1 ms", async () => {
    expect((await fetch(`${stack().url}/iiif/3/test-pattern/info.json`)).status).toBe(200);
    expect((await fetch(`${stack().url}/iiif/3/test-pattern/0,0,256,256/256,/0/default.jpg`)).status).toBe(200);
  });

  it("keeps the decoder's own deadline for a request without the DO's", async () => {
    expect((await direct(stack(), DECODER.info("test-pattern"))).status).toBe(408);
  });
});

describe("the DO's memory grant replaces the decoder's work budget", () => {
  const stack = withStack({ TESSERA_WORK_BUDGET_MB: "1" });

  it("decodes a full the DO admitted under full_mem that a 1 MiB work budget alone would refuse", async () => {
    // full/max of the 1000 px pattern: about 12 MB by the estimate; full_mem is 300 MB.
    const res = await fetch(`${stack().url}/iiif/3/test-pattern/full/max/0/default.jpg`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/jpeg");
    expect((await res.arrayBuffer()).byteLength).toBeGreaterThan(1000);
  });

  it("keeps the decoder's own budget for a request without the DO's grant", async () => {
    const info = (await (await direct(stack(), DECODER.info("test-pattern"))).json()) as SourceInfo;
    const res = await direct(stack(), DECODER.image("test-pattern", "full/max/0/default.jpg", info.version));
    expect(res.status).toBe(413);
  });
});
