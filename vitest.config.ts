// The projects: plain Node unit tests, Worker + DO tests inside workerd (one region, four
// regions of two shards, and decoders run as containers), end-to-end tests that start the real stack (RGW, decoders, Miniflare)
// and drive it over HTTP, and the deployable artifacts built and run as deployed.
// A test file of unit, workers and deploy runs in a fresh worker (isolate, chosen, not
// defaulted): the decoder's modules keep process-wide caches and libvips settings that one file
// must not hand the next. The e2e files share one: their decoders and workerd run in processes of
// their own, each file stops what it started, and the modules they load in the test process
// (Miniflare, the AWS SDK, Chromium's driver) are loaded once for all of them, not once a file.
// `npm test` runs the projects as two streams at once (test/run.ts).
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { LATE_MS, WORKERS_TEST_SECRET } from "./test/support/workers-global-setup.ts";
import { REGIONS_TEST_SECRET } from "./test/support/workers-regions-setup.ts";

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: "unit",
          include: ["test/unit/**/*.test.ts"],
          environment: "node",
          isolate: true,
          // Fulls render on the pool at a lower priority, by design: while npm test's other stream
          // takes both cores, a full of a second alone may wait many seconds for idle CPU.
          testTimeout: 20_000,
        },
      },
      {
        plugins: [
          cloudflareTest(({ inject }) => ({
            wrangler: { configPath: "./wrangler.toml" },
            miniflare: {
              bindings: {
                DECODER_SECRET: WORKERS_TEST_SECRET,
                // The tests register the frozen decoder with the real heartbeat route.
                TEST_DECODER_URL: inject("frozenDecoderUrl"),
                TEST_SECOND_FROZEN_DECODER_URL: inject("secondFrozenDecoderUrl"),
                TEST_ROTATED_DECODER_URL: inject("rotatedDecoderUrl"),
                TEST_DROPPING_DECODER_URL: inject("droppingDecoderUrl"),
                TEST_WORKING_DECODER_URL: inject("workingDecoderUrl"),
                TEST_COUNTED_DECODER_URL: inject("countedDecoderUrl"),
                TEST_CONNECTIONS_DECODER_URL: inject("connectionsDecoderUrl"),
                TEST_CUTTING_DECODER_URL: inject("cuttingDecoderUrl"),
                TEST_STREAMING_DECODER_URL: inject("streamingDecoderUrl"),
                TEST_DRAINING_DECODER_CONTROL_URL: inject("drainingDecoderControlUrl"),
                TEST_SKEWED_DECODER_URL: inject("skewedDecoderUrl"),
                TEST_LATE_DECODER_URL: inject("lateDecoderUrl"),
                TEST_LATE_MS: String(LATE_MS),
                // Every invalidation purges by tag, at a stand-in of Cloudflare's purge API.
                CLOUDFLARE_ZONE_ID: "test-zone",
                CLOUDFLARE_PURGE_TOKEN: "test-purge-token",
                CLOUDFLARE_API_BASE: inject("purgeApiUrl"),
                REQUEST_TIMEOUT: "2",
                QUEUE_TIMEOUT: "1",
                DECODER_TTL: "3",
                BODY_READ_TIMEOUT: "1",
                MAX_FILE_TRANSFERS: "1",
                // 20 kB/s over each 2 s window: file-transfers' slow reader reads some 80, its trickle 8.
                FILE_MIN_RATE: "20000",
                ADMIN_TOKEN: "admin-test-token",
                // A hung (frozen) decoder's permit comes back 1 s after its deadline, not 10.
                LEASE_GRACE: "1",
                // Documents name the current snapshot, as these tests of snapshot URLs, TileJSON and
                // WMTS expect; the default (revalidate) is tested by snapshots.test.ts and e2e.
                PLAIN_ID_MODE: "snapshot",
              },
            },
          })),
        ],
        // The operator's tile matrix sets the edge's build bundles: these tests' one, in place of
        // the empty edge/tile-matrix-sets.json that ships.
        resolve: { alias: [{ find: /^\.\/tile-matrix-sets\.json$/, replacement: fileURLToPath(new URL("./test/workers/operator-tile-matrix-sets.json", import.meta.url)) }] },
        test: {
          name: "workers",
          isolate: true,
          // Deadlines of one to three seconds (above) keep these tests short, and a descheduled
          // workerd misses them when npm test's other stream takes both cores for a while: one
          // retry. A test that fails for its code fails both times.
          retry: 1,
          include: ["test/workers/**/*.test.ts"],
          exclude: ["test/workers/regions/**", "test/workers/containers/**"],
          globalSetup: ["test/support/workers-global-setup.ts"],
        },
      },
      // The same Worker and DO with four regions of two admission shards each, in front of
      // four real decoders: two regions' worth, the far one faked on this machine.
      {
        plugins: [
          cloudflareTest(({ inject }) => ({
            wrangler: { configPath: "./wrangler.toml" },
            miniflare: {
              bindings: {
                DECODER_SECRET: REGIONS_TEST_SECRET,
                TEST_NEAR_DECODER_URLS: inject("nearDecoderUrls"),
                TEST_FAR_DECODER_URLS: inject("farDecoderUrls"),
                // "spare" never has a decoder: sources it serves first fail over to the next.
                REGIONS: "spare:apac,near:weur,far:enam,broken:oc",
                ADMISSION_SHARDS: "2",
                SOURCE_REGIONS: "near-=near;far-=far;both-=spare|near|far;lost-=spare;broken-=broken",
                DEFAULT_REGION: "near",
                TEST_THROWING_SHARD: "broken/1",
                DECODER_TTL: "60",
                ADMIN_TOKEN: "admin-test-token",
              },
            },
          })),
        ],
        test: {
          name: "workers-regions",
          isolate: true,
          include: ["test/workers/regions/**/*.test.ts"],
          globalSetup: ["test/support/workers-regions-setup.ts"],
          testTimeout: 60_000,
        },
      },
      // The same Worker and DO with two decoders run as Cloudflare Containers (standard-2): their
      // Durable Object class bound as in [env.containers], the container runtime stood in by local
      // processes running the real decoder (test/support/container-stand-in.ts), no decoder
      // registered otherwise.
      {
        plugins: [
          cloudflareTest(({ inject }) => ({
            wrangler: { configPath: "./wrangler.toml" },
            miniflare: {
              durableObjects: { DECODER_CONTAINER: "DecoderContainer" },
              bindings: {
                DECODER_SECRET: WORKERS_TEST_SECRET,
                DECODER_CONTAINER_COUNT: "2",
                DECODER_CONTAINER_INSTANCE: "standard-2",
                TEST_CONTAINER_STAND_IN: inject("containerStandInUrl"),
                // Passed on to each container's decoder, as the operator's own would be.
                TESSERA_METRICS_TOKEN: "containers-metrics-token",
                DECODER_TTL: "3",
                ADMIN_TOKEN: "admin-test-token",
              },
            },
          })),
        ],
        test: {
          name: "workers-containers",
          isolate: true,
          include: ["test/workers/containers/**/*.test.ts"],
          globalSetup: ["test/support/container-stand-in.ts"],
          testTimeout: 30_000,
        },
      },
      // What an operator deploys, built and run as deployed: the decoder's bundle, its image, a
      // production install, wrangler's bundle and dev server: minute-long builds that npm test
      // runs beside the unit and Workers projects, after e2e.
      {
        test: {
          name: "deploy",
          isolate: true,
          include: ["test/deploy/**/*.test.ts"],
          environment: "node",
          fileParallelism: false,
          globalSetup: ["test/deploy/global-setup.ts"],
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          name: "e2e",
          isolate: false,
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
