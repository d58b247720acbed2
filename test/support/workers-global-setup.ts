// A real decoder, frozen with SIGSTOP, behind the Worker tests: whatever reaches it hangs,
// so a test that gets an answer proves the edge answered alone, and a hung decode is real.
// Beside it, three decoders gone wrong: a real one whose secret was rotated (it answers every
// request 401), one that accepts a request and dies before answering (its socket reset), and
// one that dies midway through its answer's body;
// and one that works, over a picture whose upscaled, rotated render keeps libvips busy a while,
// a large file of noise, and the bundled map sample; and a second working decoder over the same
// files for the tests that count its decodes, which no other test file sends work to, and a
// third for the test that counts the connections the DO opens to it.
import { execFileSync } from "node:child_process";
import { copyFile, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer as createHttpServer } from "node:http";
import { createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import sharp from "sharp";
import type { TestProject } from "vitest/node";
import { ROOT, startDecoder, stopDecoder } from "../../infra/local/stack.ts";

export const WORKERS_TEST_SECRET = "workers-test-secret";

declare module "vitest" {
  export interface ProvidedContext {
    frozenDecoderUrl: string;
    rotatedDecoderUrl: string;
    droppingDecoderUrl: string;
    workingDecoderUrl: string;
    countedDecoderUrl: string;
    connectionsDecoderUrl: string;
    cuttingDecoderUrl: string;
  }
}

export default async function setup(project: TestProject) {
  const decoder = await startDecoder({ TESSERA_DECODER_SECRET: WORKERS_TEST_SECRET, TESSERA_DECODER_PORT: "0" });
  decoder.process.kill("SIGSTOP");
  project.provide("frozenDecoderUrl", decoder.url);
  const rotated = await startDecoder({ TESSERA_DECODER_SECRET: "rotated-secret", TESSERA_DECODER_PORT: "0" });
  project.provide("rotatedDecoderUrl", rotated.url);
  const dropping = createServer((socket: Socket) => socket.once("data", () => socket.resetAndDestroy()));
  project.provide("droppingDecoderUrl", await listening(dropping));
  // Answers every request 200 and dies a tenth of the way through the body.
  const cutting = createHttpServer((_req, res) => {
    res.writeHead(200, { "content-type": "image/jpeg", "content-length": "10000" });
    res.write(Buffer.alloc(1000), () => res.destroy());
  });
  project.provide("cuttingDecoderUrl", await listening(cutting));
  const dir = await mkdtemp(path.join(tmpdir(), "tessera-workers-"));
  execFileSync("gdal_translate", [
    "-q", "-outsize", "1000", "1000", "-r", "bilinear", "-of", "COG", "-co", "COMPRESS=JPEG", "-co", "BLOCKSIZE=512",
    path.join(ROOT, "samples/test-pattern.tif"), path.join(dir, "slow.tif"),
  ]);
  // Noise does not compress: 27 MB that take longer than REQUEST_TIMEOUT to read slowly.
  await sharp({ create: { width: 3000, height: 3000, channels: 3, background: "#808080", noise: { type: "gaussian", mean: 128, sigma: 60 } } })
    .tiff({ tile: true, tileWidth: 256, tileHeight: 256, compression: "deflate" })
    .toFile(path.join(dir, "noise.tif"));
  await copyFile(path.join(ROOT, "samples/test-pattern.tif"), path.join(dir, "published.tif"));
  await copyFile(path.join(ROOT, "samples/utm-quadrants.tif"), path.join(dir, "utm-quadrants.tif"));
  // A mosaic of the one sample, indexed at zoom 0 (its one quadkey "").
  const mosaic = { mosaicjson: "0.0.3", minzoom: 0, maxzoom: 16, quadkey_zoom: 0, bounds: [15, 47.66, 15.28, 47.86], tiles: { "": ["utm-quadrants.tif"] } };
  await writeFile(path.join(dir, "quadrants.mosaic.json"), JSON.stringify(mosaic));
  // Stored Raster Style documents beside the sources: one good, one with a bad field.
  await writeFile(path.join(dir, "red-ramp.style.json"), JSON.stringify({ name: "red band, reds ramp", bidx: [1], colormap_name: "reds" }));
  await writeFile(path.join(dir, "broken.style.json"), JSON.stringify({ bidx: [1], rescale: [[0, "max"]] }));
  const working = await startDecoder({ TESSERA_DECODER_SECRET: WORKERS_TEST_SECRET, TESSERA_DECODER_PORT: "0", TESSERA_DATA_DIR: dir });
  project.provide("workingDecoderUrl", working.url);
  const counted = await startDecoder({ TESSERA_DECODER_SECRET: WORKERS_TEST_SECRET, TESSERA_DECODER_PORT: "0", TESSERA_DATA_DIR: dir });
  project.provide("countedDecoderUrl", counted.url);
  const connections = await startDecoder({ TESSERA_DECODER_SECRET: WORKERS_TEST_SECRET, TESSERA_DECODER_PORT: "0", TESSERA_DATA_DIR: dir });
  project.provide("connectionsDecoderUrl", connections.url);
  return async () => {
    dropping.close();
    cutting.close();
    await Promise.all([stopDecoder(decoder), stopDecoder(rotated), stopDecoder(working), stopDecoder(counted), stopDecoder(connections)]);
    await rm(dir, { recursive: true, force: true });
  };
}

/** Listens on a free loopback port; resolves to the server's URL. */
async function listening(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  return `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
}
