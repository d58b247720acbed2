// Three projects: plain Node unit tests, Worker + DO tests inside workerd, and end-to-end
// tests that start the real stack (RGW, decoders, Miniflare) and drive it over HTTP.
import { defineConfig } from "vitest/config";
import { cloudflareTest } from "@cloudflare/vitest-pool-workers";
import { WORKERS_TEST_SECRET } from "./test/support/workers-global-setup";

export default defineConfig({
  test: {
    projects: [
      { test: { name: "unit", include: ["test/unit/**/*.test.ts"], environment: "node" } },
      {
        plugins: [
          cloudflareTest(({ inject }) => ({
            wrangler: { configPath: "./wrangler.toml" },
            miniflare: {
              bindings: {
                DECODER_SECRET: WORKERS_TEST_SECRET,
                // The tests register the frozen decoder with the real heartbeat route.
                TEST_DECODER_URL: inject("frozenDecoderUrl"),
                REQUEST_TIMEOUT: "2",
                QUEUE_TIMEOUT: "1",
                DECODER_TTL: "3",
                BODY_READ_TIMEOUT: "1",
              },
            },
          })),
        ],
        test: {
          name: "workers",
          include: ["test/workers/**/*.test.ts"],
          globalSetup: ["test/support/workers-global-setup.ts"],
        },
      },
      {
        test: {
          name: "e2e",
          include: ["test/e2e/**/*.test.ts"],
          environment: "node",
          fileParallelism: false,
          globalSetup: ["test/e2e/global-setup.ts"],
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
