// A real decoder, frozen with SIGSTOP, behind the Worker tests: whatever reaches it hangs,
// so a test that gets an answer proves the edge answered alone, and a hung decode is real.
// Beside it, two decoders gone wrong: a real one whose secret was rotated (it answers every
// request 401), and one that accepts a request and dies before answering (its socket reset).
import { createServer, type Socket } from "node:net";
import type { TestProject } from "vitest/node";
import { startDecoder, stopDecoder } from "../../infra/local/stack.ts";

export const WORKERS_TEST_SECRET = "workers-test-secret";

declare module "vitest" {
  export interface ProvidedContext {
    frozenDecoderUrl: string;
    rotatedDecoderUrl: string;
    droppingDecoderUrl: string;
  }
}

export default async function setup(project: TestProject) {
  const decoder = await startDecoder({ TESSERA_DECODER_SECRET: WORKERS_TEST_SECRET, TESSERA_DECODER_PORT: "0" });
  decoder.process.kill("SIGSTOP");
  project.provide("frozenDecoderUrl", decoder.url);
  const rotated = await startDecoder({ TESSERA_DECODER_SECRET: "rotated-secret", TESSERA_DECODER_PORT: "0" });
  project.provide("rotatedDecoderUrl", rotated.url);
  const dropping = createServer((socket: Socket) => socket.once("data", () => socket.resetAndDestroy()));
  await new Promise<void>((resolve) => dropping.listen(0, "127.0.0.1", resolve));
  const address = dropping.address();
  project.provide("droppingDecoderUrl", `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`);
  return async () => {
    dropping.close();
    await Promise.all([stopDecoder(decoder), stopDecoder(rotated)]);
  };
}
