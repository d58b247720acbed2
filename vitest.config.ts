// Three projects: plain Node unit tests, Worker + DO tests inside workerd, and end-to-end
// tests that start the real stack (RGW, decoders, Miniflare) and drive it over HTTP.
import { defineConfig } from "vitest/config";
import { cloudflareTest } from "@cloudflare/vitest-pool-workers";

export default defineConfig({
  test: {
    projects: [
      { test: { name: "unit", include: ["test/unit/**/*.test.ts"], environment: "node" } },
      {
        plugins: [
          cloudflareTest({
            wrangler: { configPath: "./wrangler.toml" },
            // No decoder listens on port 9 (discard): these tests prove which paths never need one.
            miniflare: { bindings: { DECODER_SECRET: "workers-test-secret", DECODER_URL: "http://127.0.0.1:9" } },
          }),
        ],
        test: { name: "workers", include: ["test/workers/**/*.test.ts"] },
      },
      {
        test: {
          name: "e2e",
          include: ["test/e2e/**/*.test.ts"],
          environment: "node",
          fileParallelism: false,
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
