// A real decoder, frozen with SIGSTOP, behind the Worker tests: whatever reaches it hangs,
// so a test that gets an answer proves the edge answered alone, and a hung decode is real; and
// a second one frozen alike, for the tests that place fulls on two decoders and hold them there.
// Beside it, three decoders gone wrong: a real one whose secret was rotated (it answers every
// request 401), one that accepts a request and dies before answering (its socket reset), and
// one that dies midway through its answer's body; one whose answers are large and come in two
// parts, the second when a test says so (or never: it dies after the first);
// and one that works, over a picture whose upscaled, rotated render keeps libvips busy a while,
// a large file of noise, and the bundled map sample; and a second working decoder over the same
// files for the tests that count its decodes, which no other test file sends work to, and a
// third for the test that counts the connections the DO opens to it; and, on request, real
// decoders that are draining: each SIGTERMed while it holds a mosaic tile whose web asset never
// answers, so it answers every new request as a draining decoder until its drain deadline.
// Two stand-ins relay to the working decoder: a skewed one, as if the edge signed a limit the
// decoder cannot read (it re-signs each request with a deadline past the longest a decoder
// takes), and a late one, whose every answer comes LATE_MS after the decoder's.
import { execFileSync } from "node:child_process";
import { copyFile, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer as createHttpServer } from "node:http";
import { createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import sharp from "sharp";
import type { TestProject } from "vitest/node";
import { ROOT } from "../../infra/root.ts";
import { killDecoder, startDecoder, stopDecoder, type DecoderProcess } from "../../infra/local/decoders.ts";
import { startAssetServer, type AssetServer } from "./asset-server.ts";
import { useDecoderBuild } from "./decoder-build.ts";
import { mapFixture } from "./map-fixtures.ts";
import { FIRST_PART_BYTES, streamedAnswer, STREAMED_BYTES } from "./streamed-answer.ts";
import { WORLD_EDGE_FIXTURES } from "./world-edge-fixtures.ts";

export const WORKERS_TEST_SECRET = "workers-test-secret";

declare module "vitest" {
  export interface ProvidedContext {
    frozenDecoderUrl: string;
    secondFrozenDecoderUrl: string;
    rotatedDecoderUrl: string;
    droppingDecoderUrl: string;
    workingDecoderUrl: string;
    countedDecoderUrl: string;
    connectionsDecoderUrl: string;
    cuttingDecoderUrl: string;
    streamingDecoderUrl: string;
    /** POST: starts a draining decoder and answers its URL. */
    drainingDecoderControlUrl: string;
    skewedDecoderUrl: string;
    lateDecoderUrl: string;
    /** A stand-in of Cloudflare's purge API (which cannot exist here): records each call; GET /calls lists them. */
    purgeApiUrl: string;
  }
}

/** How long the late decoder holds each answer: most of the tests' REQUEST_TIMEOUT (2 s). */
export const LATE_MS = 1500;

export default async function setup(project: TestProject) {
  await useDecoderBuild();
  const dir = await mkdtemp(path.join(tmpdir(), "tessera-workers-"));
  const serving = { TESSERA_DECODER_SECRET: WORKERS_TEST_SECRET, TESSERA_DECODER_PORT: "0", TESSERA_DATA_DIR: dir };
  // The decoders start together, while the files they serve are written (a decoder reads its
  // directory only when asked).
  const frozen = { TESSERA_DECODER_SECRET: WORKERS_TEST_SECRET, TESSERA_DECODER_PORT: "0" };
  const [decoder, secondFrozen, rotated, working, counted, connections] = await Promise.all([
    startDecoder(frozen),
    startDecoder(frozen),
    startDecoder({ TESSERA_DECODER_SECRET: "rotated-secret", TESSERA_DECODER_PORT: "0" }),
    startDecoder(serving),
    startDecoder(serving),
    startDecoder(serving),
    writeSources(dir),
  ]);
  decoder.process.kill("SIGSTOP");
  secondFrozen.process.kill("SIGSTOP");
  project.provide("frozenDecoderUrl", decoder.url);
  project.provide("secondFrozenDecoderUrl", secondFrozen.url);
  project.provide("rotatedDecoderUrl", rotated.url);
  project.provide("workingDecoderUrl", working.url);
  project.provide("countedDecoderUrl", counted.url);
  project.provide("connectionsDecoderUrl", connections.url);
  const dropping = createServer((socket: Socket) => socket.once("data", () => socket.resetAndDestroy()));
  project.provide("droppingDecoderUrl", await listening(dropping));
  // Answers every request 200 and dies a tenth of the way through the body.
  const cutting = createHttpServer((_req, res) => {
    res.writeHead(200, { "content-type": "image/jpeg", "content-length": "10000" });
    res.write(Buffer.alloc(1000), () => res.destroy());
  });
  project.provide("cuttingDecoderUrl", await listening(cutting));
  const streaming = streamingDecoder();
  project.provide("streamingDecoderUrl", await listening(streaming));
  const { signedHeaders, limitsFrom, MAX_DEADLINE_MS } = await sharedProtocol();
  const skewed = relayDecoder(working.url, async (path, headers) => ({
    headers: {
      ...headers,
      ...(await signedHeaders(WORKERS_TEST_SECRET, "GET", path, { ...limitsFrom((name) => headers[name] ?? null), timeoutMs: String(MAX_DEADLINE_MS + 1), requestId: null })),
    },
  }));
  project.provide("skewedDecoderUrl", await listening(skewed));
  const late = relayDecoder(working.url, async (_path, headers) => ({ headers, delayMs: LATE_MS }));
  project.provide("lateDecoderUrl", await listening(late));
  const assets = await startAssetServer(dir);
  // Started when a test asks, not here: a drain ends at its deadline, and this run may last longer.
  const draining: DecoderProcess[] = [];
  const control = createHttpServer((_req, res) => {
    drainingDecoder(dir, assets).then(
      (d) => (draining.push(d), res.end(d.url)),
      (err: Error) => res.writeHead(500).end(err.message),
    );
  });
  project.provide("drainingDecoderControlUrl", await listening(control));
  const purgeApi = purgeApiStandIn();
  project.provide("purgeApiUrl", await listening(purgeApi));
  return async () => {
    control.close();
    purgeApi.close();
    await Promise.all(draining.map(killDecoder));
    await assets.close();
    dropping.close();
    cutting.close();
    skewed.close();
    late.close();
    streaming.closeAllConnections();
    streaming.close();
    await Promise.all([stopDecoder(decoder), stopDecoder(secondFrozen), stopDecoder(rotated), stopDecoder(working), stopDecoder(counted), stopDecoder(connections)]);
    await rm(dir, { recursive: true, force: true });
  };
}

/** Cloudflare's purge API, stood in: each POST recorded (path, authorization, body) and answered as the API does; GET /calls answers the record. */
function purgeApiStandIn() {
  const calls: { path: string; authorization?: string; body: unknown }[] = [];
  return createHttpServer((req, res) => {
    if (req.method === "GET" && req.url === "/calls") return void res.end(JSON.stringify(calls));
    let text = "";
    req.on("data", (chunk) => (text += chunk));
    req.on("end", () => {
      calls.push({ path: req.url ?? "", authorization: req.headers.authorization, body: JSON.parse(text || "null") });
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ success: true, errors: [], messages: [], result: { id: "stand-in" } }));
    });
  });
}

/** The working decoders' sources: a slow picture, a large file of noise, the map sample, sources at the world's edges, a mosaic and two styles. */
async function writeSources(dir: string): Promise<void> {
  execFileSync("gdal_translate", [
    "-q", "-outsize", "1000", "1000", "-r", "bilinear", "-of", "COG", "-co", "COMPRESS=JPEG", "-co", "BLOCKSIZE=512",
    path.join(ROOT, "samples/test-pattern.tif"), path.join(dir, "slow.tif"),
  ]);
  // Noise does not compress: 27 MB that take longer than REQUEST_TIMEOUT to read slowly.
  await sharp({ create: { width: 3000, height: 3000, channels: 3, background: "#808080", noise: { type: "gaussian", mean: 128, sigma: 60 } } })
    .tiff({ tile: true, tileWidth: 256, tileHeight: 256, compression: "deflate" })
    .toFile(path.join(dir, "noise.tif"));
  await copyFile(path.join(ROOT, "samples/test-pattern.tif"), path.join(dir, "published.tif"));
  await copyFile(path.join(ROOT, "samples/test-pattern.tif"), path.join(dir, "late.tif"));
  await copyFile(path.join(ROOT, "samples/utm-quadrants.tif"), path.join(dir, "utm-quadrants.tif"));
  // A source across 180° and one around the north pole, as the map tests make them with GDAL.
  for (const fixture of [WORLD_EDGE_FIXTURES.lonLatAcross, WORLD_EDGE_FIXTURES.arctic]) await copyFile(mapFixture(fixture), path.join(dir, `${fixture.id}.tif`));
  // A mosaic of the one sample, indexed at zoom 0 (its one quadkey "").
  const mosaic = { mosaicjson: "0.0.3", minzoom: 0, maxzoom: 16, quadkey_zoom: 0, bounds: [15, 47.66, 15.28, 47.86], tiles: { "": ["utm-quadrants.tif"] } };
  await writeFile(path.join(dir, "quadrants.mosaic.json"), JSON.stringify(mosaic));
  // Stored Raster Style documents beside the sources: one good, one with a bad field.
  await writeFile(path.join(dir, "red-ramp.style.json"), JSON.stringify({ name: "red band, reds ramp", bidx: [1], colormap_name: "reds" }));
  await writeFile(path.join(dir, "broken.style.json"), JSON.stringify({ bidx: [1], rescale: [[0, "max"]] }));
}

/**
 * Answers every decode with streamed-answer.ts's bytes, sent in two parts: the first at once, the
 * rest at once too, except on POST /release for a source named `held-…` and never for one named
 * `cut-…` (the socket is destroyed after the first part). GET /state says how many requests each source got, how many
 * answers wait for their release, and how many ended before their last byte (`cut`).
 */
function streamingDecoder() {
  const answer = Buffer.from(streamedAnswer());
  const held = new Set<() => void>();
  const requests: Record<string, number> = {};
  let cut = 0;
  return createHttpServer((req, res) => {
    if (req.url === "/release") {
      const released = [...held];
      held.clear();
      released.forEach((send) => send());
      return void res.end(String(released.length));
    }
    if (req.url === "/state") return void res.end(JSON.stringify({ requests, held: held.size, cut }));
    const id = decodeURIComponent(req.url!.split("/")[3] ?? ""); // /v1/{route}/{id}/…
    requests[id] = (requests[id] ?? 0) + 1;
    const rest = () => res.end(answer.subarray(FIRST_PART_BYTES));
    res.on("close", () => {
      held.delete(rest);
      if (!res.writableFinished) cut++;
    });
    res.writeHead(200, { "content-type": "image/png", "content-length": String(STREAMED_BYTES) });
    res.write(answer.subarray(0, FIRST_PART_BYTES), () => {
      if (id.startsWith("cut-")) res.destroy();
    });
    if (id.startsWith("held-")) held.add(rest);
    else if (!id.startsWith("cut-")) rest();
  });
}

/** What a relayDecoder sends on for one request: these headers, its answer held `delayMs`. */
interface Relayed {
  headers: Record<string, string>;
  delayMs?: number;
}

/**
 * A decoder's stand-in: each request goes on to the decoder at `target` with the headers
 * `relayed` makes of the edge's, and its answer comes back. GET /state lists what the edge sent,
 * each request's path and signed deadline (x-tessera-timeout-ms) in the order they came.
 */
function relayDecoder(target: string, relayed: (path: string, headers: Record<string, string>) => Promise<Relayed>): Server {
  const sent: { path: string; timeoutMs: string | undefined }[] = [];
  return createHttpServer((req, res) => {
    if (req.url === "/state") return void res.end(JSON.stringify(sent));
    const path = req.url!;
    const headers = Object.fromEntries(Object.entries(req.headers).filter(([name]) => name.startsWith("x-"))) as Record<string, string>;
    sent.push({ path, timeoutMs: headers["x-tessera-timeout-ms"] });
    (async () => {
      const { headers: onward, delayMs = 0 } = await relayed(path, headers);
      const upstream = await fetch(target + path, { headers: onward });
      const body = Buffer.from(await upstream.arrayBuffer());
      await new Promise((r) => setTimeout(r, delayMs));
      const answered = [...upstream.headers].filter(([name]) => !["content-length", "transfer-encoding", "connection", "keep-alive"].includes(name));
      res.writeHead(upstream.status, Object.fromEntries(answered)).end(body);
    })().catch(() => res.destroy());
  });
}

/**
 * shared/protocol.ts, imported by a computed URL: vitest.config.ts loads this file, and Vite's
 * config loader warns of every import without a file extension in the modules it follows
 * (shared/ has them).
 */
async function sharedProtocol(): Promise<typeof import("../../shared/protocol.ts")> {
  return import(/* @vite-ignore */ new URL("../../shared/protocol.ts", import.meta.url).href);
}

/** Listens on a free loopback port; resolves to the server's URL. */
async function listening(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  return `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
}

/** A real decoder that drains for the rest of the run: it holds a tile that never ends, and was sent SIGTERM. */
async function drainingDecoder(dir: string, assets: AssetServer): Promise<DecoderProcess> {
  assets.misbehaviour = "stall";
  const asset = `http://127.0.0.1:${assets.port}/utm-quadrants.tif`;
  const mosaic = { mosaicjson: "0.0.3", minzoom: 0, maxzoom: 16, quadkey_zoom: 0, bounds: [15, 47.66, 15.28, 47.86], tiles: { "": [asset] } };
  await writeFile(path.join(dir, "stalled.mosaic.json"), JSON.stringify(mosaic));
  const longest = String(600_000); // the longest deadline a decoder takes: longer than any test
  const decoder = await startDecoder({
    TESSERA_DECODER_SECRET: WORKERS_TEST_SECRET,
    TESSERA_DECODER_PORT: "0",
    TESSERA_DATA_DIR: dir,
    TESSERA_ASSET_HOSTS: `127.0.0.1:${assets.port}`,
    TESSERA_ASSET_ALLOW_ADDRESSES: "127.0.0.0/8",
    TESSERA_ASSET_TIMEOUT_MS: longest,
    TESSERA_REQUEST_TIMEOUT_MS: longest,
    TESSERA_DRAIN_TIMEOUT_MS: longest,
  });
  const { signedHeaders } = await sharedProtocol();
  const tile = "/v1/tiles/stalled/WebMercatorQuad/12/2219/1427.png";
  const held = fetch(decoder.url + tile, { headers: await signedHeaders(WORKERS_TEST_SECRET, "GET", tile) });
  held.catch(() => {}); // cut when the decoder is killed at the end of the run
  const asked = assets.requests.length;
  while (assets.requests.length === asked) await new Promise((r) => setTimeout(r, 20));
  decoder.process.kill("SIGTERM");
  while ((await fetch(`${decoder.url}/health`)).status !== 503) await new Promise((r) => setTimeout(r, 20));
  return decoder;
}
