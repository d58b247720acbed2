// Types for `cloudflare:test` / `cloudflare:workers` in the workerd tests.
type TesseraEnv = import("../../edge/env").Env;
type TesseraWorker = typeof import("../../edge/index");

declare namespace Cloudflare {
  interface Env extends TesseraEnv {
    /** The frozen real decoder behind these tests (test/support/workers-global-setup.ts). */
    TEST_DECODER_URL: string;
    /** A second frozen real decoder, for fulls placed on two decoders (test/workers/full-placement.test.ts). */
    TEST_SECOND_FROZEN_DECODER_URL: string;
    TEST_ROTATED_DECODER_URL: string;
    TEST_DROPPING_DECODER_URL: string;
    TEST_WORKING_DECODER_URL: string;
    /** A working decoder only test/workers/coalescing.test.ts sends work to, so its counts are that file's. */
    TEST_COUNTED_DECODER_URL: string;
    /** A working decoder only test/workers/decoder-connections.test.ts sends work to. */
    TEST_CONNECTIONS_DECODER_URL: string;
    /** Answers 200 and dies midway through the body. */
    TEST_CUTTING_DECODER_URL: string;
    /** Large answers in two parts (test/support/workers-global-setup.ts, streamingDecoder). */
    TEST_STREAMING_DECODER_URL: string;
    /** Relays to the working decoder, each request re-signed with a deadline no decoder takes (its 400s are about the signed headers). */
    TEST_SKEWED_DECODER_URL: string;
    /** Relays to the working decoder, each answer held TEST_LATE_MS; GET /state lists each request's path and signed deadline. */
    TEST_LATE_DECODER_URL: string;
    TEST_LATE_MS: string;
    /** The regions tests' decoders (test/support/workers-regions-setup.ts), comma-separated. */
    TEST_NEAR_DECODER_URLS: string;
    TEST_FAR_DECODER_URLS: string;
    /** POST: starts a real decoder that is draining (503 + x-tessera-draining to every new request); answers its URL. */
    TEST_DRAINING_DECODER_CONTROL_URL: string;
    /** The stand-in for Cloudflare's container runtime (test/support/container-stand-in.ts). */
    TEST_CONTAINER_STAND_IN: string;
  }
  interface GlobalProps {
    mainModule: TesseraWorker;
  }
}
