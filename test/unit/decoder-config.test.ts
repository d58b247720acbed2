// Every variable the decoder reads is checked when it starts: a bad value is a ConfigError naming
// that variable (main.ts prints it and exits 1), never a decoder that runs and misbehaves. The
// decoder's real readers, readConfig and readHeartbeatConfig, run on each row.
import { readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { describe, expect, it } from "vitest";
import { metricsOpenToOthers, readConfig } from "../../regional/config";
import { readHeartbeatConfig } from "../../regional/runtime/heartbeat";
import { ConfigError } from "../../shared/config";

const LOCAL = { TESSERA_DECODER_SECRET: "s" };
const S3 = { ...LOCAL, TESSERA_SOURCE: "s3", TESSERA_S3_BUCKET: "tessera" };

/** What the decoder reads at start, as main.ts reads it. */
function start(env: NodeJS.ProcessEnv) {
  return { ...readConfig(env), ...readHeartbeatConfig(env) };
}

/** The variable a start with `env` names, or undefined when it starts. */
function refused(env: NodeJS.ProcessEnv): { variable: string; message: string } | undefined {
  try {
    start(env);
    return undefined;
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return { variable: (e as ConfigError).variable, message: (e as Error).message };
  }
}

// [variable, a bad value, what the message says], each on the base environment given.
const BAD: [string, string | undefined, RegExp, NodeJS.ProcessEnv?][] = [
  ["TESSERA_DECODER_SECRET", undefined, /is required/],
  ["TESSERA_DECODER_SECRET", "", /is required/],
  ["TESSERA_DECODER_HOST", "0.0.0.0:9100", /must be an IP address or a host name/],
  ["TESSERA_DECODER_HOST", "http://decoder", /must be an IP address or a host name/],
  ["TESSERA_DECODER_PORT", "65536", /from 0 to 65535/],
  ["TESSERA_DECODER_PORT", "-1", /whole number/],
  ["TESSERA_DECODER_CAPACITY", "0", /from 1 to 1024/],
  ["TESSERA_DECODER_CAPACITY", "100000", /from 1 to 1024/],
  ["TESSERA_SOURCE", "gcs", /must be local or s3/],
  ["TESSERA_DATA_DIR", "/no/such/directory", /must be a directory/],
  ["TESSERA_DATA_DIR", "/etc/hostname", /must be a directory/],
  ["TESSERA_S3_BUCKET", undefined, /is required when TESSERA_SOURCE=s3/, { ...LOCAL, TESSERA_SOURCE: "s3" }],
  ["TESSERA_S3_BUCKET", "tessera/maps", /must be a bucket name \(a key prefix goes in TESSERA_S3_PREFIX\)/, S3],
  ["TESSERA_S3_ENDPOINT", "rgw.internal:7480", /must be an http\(s\) URL/, S3],
  ["TESSERA_S3_REGION", "eu west 1", /must be a region name/, S3],
  ["TESSERA_S3_FIRST_READ_KB", "0", /from 1 to 16384/, S3],
  ["AWS_ACCESS_KEY_ID", undefined, /is required with AWS_SECRET_ACCESS_KEY/, { ...S3, AWS_SECRET_ACCESS_KEY: "k" }],
  ["AWS_SECRET_ACCESS_KEY", undefined, /is required with AWS_ACCESS_KEY_ID/, { ...S3, AWS_ACCESS_KEY_ID: "k" }],
  ["TESSERA_MAX_IN_FLIGHT_REQUESTS", "0", /≥ 1/],
  ["TESSERA_MAX_FILE_TRANSFERS", "many", /whole number/],
  ["TESSERA_REQUEST_TIMEOUT_MS", "3000000000", /from 1 to 600000/],
  ["TESSERA_SHARED_WORK_TIMEOUT_MS", "0", /from 1 to 600000/],
  ["TESSERA_PREFETCH_RING", "2048", /from 0 to 1024/],
  ["TESSERA_WORK_BUDGET_MB", "512M", /whole number/],
  ["TESSERA_BLOCK_CACHE_MB", "1.5", /whole number/],
  ["TESSERA_MOSAIC_MAX_ASSETS", "0", /from 1 to 10000/],
  ["TESSERA_RENDER_THREADS", "0", /from 1 to 1024/],
  ["UV_THREADPOOL_SIZE", "four", /from 1 to 1024/],
  ["UV_THREADPOOL_SIZE", "2000", /from 1 to 1024/],
  ["TESSERA_ASSET_PREFIXES", "maps", /must end with "\/"/],
  ["TESSERA_ASSET_HOSTS", "https://tiles.example.org", /must be a host name/],
  ["TESSERA_ASSET_ALLOW_ADDRESSES", "10/8", /is not an address range/],
  ["TESSERA_ASSET_CONNECTIONS", "0", /from 1 to 1024/],
  ["TESSERA_ASSET_TIMEOUT_MS", "86400000", /from 1 to 600000/],
  ["TESSERA_EDGE_URL", "edge.example.org", /must be an http\(s\) URL/],
  ["TESSERA_DECODER_PUBLIC_URL", "ftp://decoder.internal", /must be an http\(s\) URL/],
  ["TESSERA_HEARTBEAT_INTERVAL", "0", /from 1 to 3600/],
  ["TESSERA_HEARTBEAT_INTERVAL", "2147484", /from 1 to 3600/],
  ["TESSERA_REGION", "Europe West", /must be a region name/],
  ["TESSERA_DRAIN_TIMEOUT_MS", "700000", /from 0 to 600000/],
  ["TESSERA_DECODER_MEMORY_LIMIT", "2Gi", /whole number/],
  // A file's trailing newline (kubectl create secret --from-file) would refuse every scraper unexplained.
  ["TESSERA_METRICS_TOKEN", "a-long-enough-metrics-token\n", /must be a bearer token/],
  ["TESSERA_METRICS_TOKEN", "a long enough metrics token", /must be a bearer token/],
  ["TESSERA_METRICS_TOKEN", "short-token", /at least 16 characters/],
  // Every other refusal of a set's document: operator-tile-matrix-sets.test.ts.
  ["TESSERA_TILE_MATRIX_SETS", "/no/such/sets.json", /names \/no\/such\/sets\.json, which cannot be read \(ENOENT\)/],
];

describe("a bad value stops the decoder, naming its variable", () => {
  it.each(BAD)("%s=%j", (variable, value, message, base = LOCAL) => {
    const env: NodeJS.ProcessEnv = { ...base };
    if (value === undefined) delete env[variable];
    else env[variable] = value;
    const refusal = refused(env);
    expect(refusal?.variable).toBe(variable);
    expect(refusal?.message).toMatch(new RegExp(`^${variable} `));
    expect(refusal?.message).toMatch(message);
  });
});

it("calls /metrics open to other machines only without a token, on an address beyond loopback", () => {
  const open = (host: string, token?: string) => metricsOpenToOthers(readConfig({ ...LOCAL, TESSERA_DECODER_HOST: host, TESSERA_METRICS_TOKEN: token }));
  for (const host of ["0.0.0.0", "::", "10.0.0.7", "decoder-1.internal"]) expect(open(host), host).toBe(true);
  for (const host of ["127.0.0.1", "127.0.0.53", "::1", "localhost"]) expect(open(host), host).toBe(false);
  expect(open("0.0.0.0", "a-long-enough-metrics-token")).toBe(false);
});

it("never prints the metrics token it refuses", () => {
  const token = "a-long-enough-metrics-token ";
  expect(refused({ ...LOCAL, TESSERA_METRICS_TOKEN: token })?.message).not.toContain(token.trim());
});

describe("good values start it", () => {
  it("with every variable set", () => {
    const config = start({
      ...S3,
      TESSERA_DECODER_HOST: "0.0.0.0",
      TESSERA_DECODER_PORT: "9100",
      TESSERA_DECODER_CAPACITY: "8",
      TESSERA_S3_ENDPOINT: "http://rgw.internal:7480",
      TESSERA_S3_PREFIX: "maps/",
      TESSERA_S3_REGION: "eu-west-1",
      TESSERA_S3_FIRST_READ_KB: "128",
      AWS_ACCESS_KEY_ID: "id",
      AWS_SECRET_ACCESS_KEY: "key",
      TESSERA_REQUEST_TIMEOUT_MS: "600000",
      UV_THREADPOOL_SIZE: "8",
      TESSERA_ASSET_HOSTS: "tiles.example.org",
      TESSERA_EDGE_URL: "https://tiles.example.org/",
      TESSERA_DECODER_PUBLIC_URL: "http://10.0.0.7:9100",
      TESSERA_HEARTBEAT_INTERVAL: "2",
      TESSERA_DECODER_MEMORY_LIMIT: "2147483648",
      TESSERA_METRICS_TOKEN: "3f9a-Metrics.Token_~+/==",
    });
    expect(config).toMatchObject({
      host: "0.0.0.0",
      port: 9100,
      capacity: 8,
      renderThreads: 8,
      requestTimeoutMs: 600_000,
      edgeUrl: "https://tiles.example.org",
      publicUrl: "http://10.0.0.7:9100",
      intervalMs: 2000,
      memoryLimit: 2 ** 31,
      metricsToken: "3f9a-Metrics.Token_~+/==",
    });
  });

  it("with none but the secret: the sample images, on loopback", () => {
    const config = start(LOCAL);
    expect(config).toMatchObject({ host: "127.0.0.1", port: 9100, requestTimeoutMs: 30_000, edgeUrl: undefined, intervalMs: 5000, metricsToken: undefined });
    expect(config.catalog.description).toMatch(/samples\/?$/);
    // The documented defaults of the limits: a 512 MiB work budget, 64 requests in flight, a
    // 256 MiB block cache, eight header blocks kept per snapshot.
    expect(config).toMatchObject({ workBudgetBytes: 512 * 2 ** 20, maxInFlight: 64, blockCacheBytes: 256 * 2 ** 20, prefetchRing: 8 });
    expect(refused({ ...LOCAL, TESSERA_DATA_DIR: tmpdir(), TESSERA_DECODER_HOST: "decoder-1.internal" })).toBeUndefined();
  });
});

it("the table covers every variable the decoder documents", () => {
  const documented = ["regional/main.ts", "regional/runtime/heartbeat.ts"].flatMap((file) => {
    const header = readFileSync(new URL(`../../${file}`, import.meta.url), "utf8").split("\nimport ")[0];
    return header.match(/\b(TESSERA|AWS|UV)_[A-Z0-9_]+\b/g) ?? [];
  });
  const tested = new Set(BAD.map(([variable]) => variable));
  // Any value is a good one: a key prefix may be any string, "" included.
  const unchecked = new Set(["TESSERA_S3_PREFIX"]);
  const missing = [...new Set(documented)].filter((v) => !tested.has(v) && !unchecked.has(v));
  expect(missing).toEqual([]);
});
