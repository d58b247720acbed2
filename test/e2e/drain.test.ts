// A rolling deploy through the real stack: under a steady load of tile misses, one decoder gets
// SIGTERM and a new one starts and registers by heartbeat. The drained decoder finishes what it
// holds, exits 0 within its deadline, and no client sees an error. Then a drain whose deadline
// passes: the request the decoder still holds (a mosaic tile whose web asset never answers) is
// cancelled and answered 503 + Retry-After, and the process still exits 0 on time.
import { copyFile, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LINGER_MS } from "../../regional/runtime/drain";
import { stopDecoder, type DecoderProcess } from "../../infra/local/decoders";
import { startStack, type Stack } from "../../infra/local/stack";
import { startAssetServer, type AssetServer } from "../support/asset-server";
import { sumMetric, until } from "../support/metrics";

const SAMPLES = new URL("../../samples/", import.meta.url).pathname;
const DRAIN_TIMEOUT_MS = 20_000;

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "tessera-drain-e2e-"));
  await copyFile(`${SAMPLES}test-pattern.tif`, `${dir}/pattern.tif`);
  await copyFile(`${SAMPLES}utm-quadrants.tif`, `${dir}/utm-quadrants.tif`);
});
afterAll(() => rm(dir, { recursive: true, force: true }));

/** Runs `count` requests, `concurrency` at a time; each answer's status and time. */
async function load(count: number, concurrency: number, request: (i: number) => Promise<Response>) {
  const answers: { status: number; ms: number }[] = [];
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const i = next++;
      const started = Date.now();
      const res = await request(i);
      await res.arrayBuffer();
      answers[i] = { status: res.status, ms: Date.now() - started };
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return answers;
}

/** SIGTERM, and how long until the process exited, with which code. */
async function drained(d: DecoderProcess): Promise<{ code: number | null; ms: number }> {
  const started = Date.now();
  const code = await stopDecoder(d);
  return { code, ms: Date.now() - started };
}

describe("a rolling deploy", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({
      decoders: 2,
      decoderEnv: { TESSERA_DATA_DIR: dir, TESSERA_HEARTBEAT_INTERVAL: "1", TESSERA_DRAIN_TIMEOUT_MS: String(DRAIN_TIMEOUT_MS) },
      vars: { DECODER_TTL: "3" },
    });
  });
  afterAll(() => stack?.stop());

  it("loses no request: the drained decoder finishes its work and exits 0, the new one takes over", async () => {
    const [old] = stack.decoders;
    const resends = await sumMetric(stack.url, "tessera_admission_draining_resends_total ");
    // 300 distinct 256² regions of the 1000² pattern: every one a miss, decoded.
    const tile = (i: number) => `/iiif/3/pattern/${(i % 25) * 29},${Math.floor(i / 25) * 61},256,256/256,/0/default.jpg`;
    let done = 0;
    const started = Date.now();
    const answers = load(300, 8, (i) => fetch(stack.url + tile(i)).finally(() => done++));
    await until(async () => done >= 60, 30_000);
    const [exit, fresh] = await Promise.all([drained(old), stack.addDecoder()]);
    const statuses = (await answers).map((a) => a.status);
    const ms = Date.now() - started;

    const errors = statuses.filter((s) => s !== 200).length;
    const freshServed = await sumMetric(fresh.url, 'tessera_decoder_requests_total{route="image",status="200"');
    console.log(
      `rolling deploy: ${statuses.length} requests in ${ms} ms, ${errors} errors; old decoder exited ${exit.code} ` +
        `${exit.ms} ms after SIGTERM; ${(await sumMetric(stack.url, "tessera_admission_draining_resends_total ")) - resends} resent; ` +
        `new decoder served ${freshServed}; slowest ${Math.max(...(await answers).map((a) => a.ms))} ms`,
    );
    expect(errors).toBe(0);
    expect(exit.code).toBe(0);
    expect(exit.ms).toBeLessThan(DRAIN_TIMEOUT_MS + LINGER_MS);
    // The DO routes to the two that run: the old one is gone, the new one is in.
    await until(async () => (await sumMetric(stack.url, "tessera_admission_decoders_live ")) === 2);
    await expect(fetch(`${old.url}/health`)).rejects.toThrow();
    const after = await load(20, 4, (i) => fetch(stack.url + tile(300 + i)));
    expect(after.map((a) => a.status)).toEqual(Array(20).fill(200));
    expect(await sumMetric(fresh.url, 'tessera_decoder_requests_total{route="image",status="200"')).toBeGreaterThan(freshServed);
  });
});

describe("a drain that reaches its deadline", () => {
  let stack: Stack;
  let assets: AssetServer;
  beforeAll(async () => {
    assets = await startAssetServer(dir);
    assets.misbehaviour = "stall"; // the asset never answers
    const asset = `http://127.0.0.1:${assets.port}/utm-quadrants.tif`;
    const mosaic = { mosaicjson: "0.0.3", minzoom: 0, maxzoom: 16, quadkey_zoom: 0, bounds: [15, 47.66, 15.28, 47.86], tiles: { "": [asset] } };
    await writeFile(path.join(dir, "stalled.mosaic.json"), JSON.stringify(mosaic));
    stack = await startStack({
      decoders: 1,
      decoderEnv: {
        TESSERA_DATA_DIR: dir,
        TESSERA_ASSET_HOSTS: `127.0.0.1:${assets.port}`,
        TESSERA_ASSET_ALLOW_ADDRESSES: "127.0.0.0/8",
        TESSERA_DRAIN_TIMEOUT_MS: "1500",
      },
    });
  });
  afterAll(async () => {
    await stack?.stop();
    await assets?.close();
  });

  it("cancels what it still holds at the deadline (503 + Retry-After to the client) and exits 0", async () => {
    const held = fetch(`${stack.url}/tiles/stalled/WebMercatorQuad/12/2219/1427.png`);
    await until(async () => assets.requests.length > 0);
    const exit = await drained(stack.decoders[0]);
    const res = await held;
    console.log(`drain past its deadline: exited ${exit.code} ${exit.ms} ms after SIGTERM; the held request answered ${res.status}`);
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("1");
    expect(exit.code).toBe(0);
    expect(exit.ms).toBeGreaterThanOrEqual(1500);
    expect(exit.ms).toBeLessThan(1500 + LINGER_MS + 1500);
  });
});
