// The decoder's graceful drain, on a real decoder server: new requests refused in a way the DO
// can resend, held ones finished, and those still running at the deadline cancelled. A held
// request is a mosaic tile whose one asset is on a real web server that is slow (or stalls).
import { copyFile, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { Drain, LINGER_MS } from "../../regional/runtime/drain";
import { readAssetConfig } from "../../regional/source/access-policy";
import { AssetSources } from "../../regional/source/assets";
import { LocalCatalog } from "../../regional/source/local";
import { startAssetServer, type AssetServer } from "../support/asset-server";
import { metricValue, SAMPLES, signedGet, startDecoder, type Decoder } from "./regional-helpers";

/** A tile of the mosaic over utm-quadrants.tif, read from the web server. */
const HELD_TILE = "/v1/tiles/web-quadrants/WebMercatorQuad/12/2219/1427.png";

let dir: string;
let assets: AssetServer;
let drain: Drain;
let decoder: Decoder;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "tessera-drain-"));
  await copyFile(path.join(SAMPLES, "utm-quadrants.tif"), path.join(dir, "utm-quadrants.tif"));
  await copyFile(path.join(SAMPLES, "test-pattern.tif"), path.join(dir, "pattern.tif"));
  assets = await startAssetServer(dir);
  const asset = `http://127.0.0.1:${assets.port}/utm-quadrants.tif`;
  const mosaic = { mosaicjson: "0.0.3", minzoom: 0, maxzoom: 16, quadkey_zoom: 0, bounds: [15, 47.66, 15.28, 47.86], tiles: { "": [asset] } };
  await writeFile(path.join(dir, "web-quadrants.mosaic.json"), JSON.stringify(mosaic));
});

afterAll(async () => {
  await assets.close();
  await rm(dir, { recursive: true, force: true });
});

beforeEach(async () => {
  await decoder?.close();
  assets.misbehaviour = undefined;
  assets.delayMs = 0;
  drain = new Drain();
  const catalog = new LocalCatalog(dir);
  const policy = readAssetConfig({
    TESSERA_ASSET_HOSTS: `127.0.0.1:${assets.port}`,
    TESSERA_ASSET_ALLOW_ADDRESSES: "127.0.0.0/8",
    TESSERA_ASSET_TIMEOUT_MS: "60000",
  });
  decoder = await startDecoder(catalog, 3, { drain, assets: new AssetSources(policy, (key, signal) => catalog.openKey(key, signal)) });
});

/** Resolves once the asset server has received a request: the tile is held by the decoder. */
async function untilAssetRequested(): Promise<void> {
  const before = assets.requests.length;
  while (assets.requests.length === before) await new Promise((r) => setTimeout(r, 10));
}

describe("a draining decoder", () => {
  it("answers every new request 503 + Retry-After + x-tessera-draining with a JSON error, and says so on /metrics", async () => {
    expect(await metricValue(decoder, "tessera_decoder_draining")).toBe(0);
    const drained = drain.drain(10_000, Promise.resolve());
    for (const res of [await signedGet(decoder, "/v1/info/pattern"), await fetch(`${decoder.url}/health`)]) {
      expect(res.status).toBe(503);
      expect(res.headers.get("retry-after")).toBe("1");
      expect(res.headers.get("x-tessera-draining")).toBe("1");
      expect(res.headers.get("connection")).toBe("close");
      expect(await res.json()).toMatchObject({ error: "overloaded", message: expect.stringMatching(/shutting down/) });
    }
    expect(await metricValue(decoder, "tessera_decoder_draining")).toBe(1);
    const result = await drained;
    expect(result).toMatchObject({ held: 0, cancelled: 0 });
    expect(result.ms).toBeGreaterThanOrEqual(LINGER_MS - 5);
  });

  it("finishes the requests it holds, and ends LINGER_MS after the last", async () => {
    assets.delayMs = 300; // each read of the asset: the tile takes a while
    const held = signedGet(decoder, HELD_TILE);
    await untilAssetRequested();
    const began = Date.now();
    const result = await drain.drain(20_000, Promise.resolve());
    const res = await held;
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/png");
    expect(result).toMatchObject({ held: 1, cancelled: 0 });
    expect(Date.now() - began).toBeGreaterThanOrEqual(300 + LINGER_MS - 5);
  });

  it("cancels what still runs at its deadline: the request answers 503 retry, without the draining header", async () => {
    assets.misbehaviour = "stall"; // the asset never answers
    const held = signedGet(decoder, HELD_TILE);
    await untilAssetRequested();
    const began = Date.now();
    const result = await drain.drain(400, Promise.resolve());
    const res = await held;
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("1");
    expect(res.headers.get("x-tessera-draining")).toBeNull(); // work was done: the DO must not resend it
    expect(await res.json()).toMatchObject({ error: "overloaded", message: expect.stringMatching(/shut down before this request finished/) });
    expect(result).toMatchObject({ held: 1, cancelled: 1 });
    const took = Date.now() - began;
    expect(took).toBeGreaterThanOrEqual(400 + LINGER_MS - 5);
    expect(took).toBeLessThan(400 + LINGER_MS + 1000);
    const logged = decoder.logs.find((l) => l.msg === "request" && l.path === HELD_TILE.split("?")[0]);
    expect(logged?.status).toBe("aborted");
  });

  it("still passes a cancel through, so the DO can stop a request the decoder holds", async () => {
    void drain.drain(10_000, Promise.resolve());
    const res = await fetch(`${decoder.url}/v1/cancel/some-id`, { method: "POST" });
    expect(res.status).toBe(401); // reached the route's signature check, not refused as draining
    expect(res.headers.get("x-tessera-draining")).toBeNull();
  });
});
