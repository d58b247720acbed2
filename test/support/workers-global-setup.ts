// A real decoder, frozen with SIGSTOP, behind the Worker tests: whatever reaches it hangs,
// so a test that gets an answer proves the edge answered alone, and a hung decode is real.
import type { TestProject } from "vitest/node";
import { startDecoder, stopDecoder } from "../../infra/local/stack.ts";

export const WORKERS_TEST_SECRET = "workers-test-secret";

declare module "vitest" {
  export interface ProvidedContext {
    frozenDecoderUrl: string;
  }
}

export default async function setup(project: TestProject) {
  const decoder = await startDecoder({ TESSERA_DECODER_SECRET: WORKERS_TEST_SECRET, TESSERA_DECODER_PORT: "0" });
  decoder.process.kill("SIGSTOP");
  project.provide("frozenDecoderUrl", decoder.url);
  return () => stopDecoder(decoder);
}
