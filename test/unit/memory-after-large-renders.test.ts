// What one large render leaves behind in a real decoder process: its resident memory with its
// render processes' (they count in its envelope), read from /proc, back within 64 MiB and the
// block cache's cap of its idle figure within 30 s, for the largest png and jp2 the work budget
// admits. Before, a pool thread kept what a large render grew, glibc kept the buffers it freed, and OpenJPEG's WebAssembly memory (which never shrinks)
// held the whole image: hundreds of MB stayed for as long as the decoder ran. The same holds after
// a spell of 32-asset map tiles, whose planes only a collection of the main thread frees (it
// stayed 358 MiB above idle).
import { copyFile, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startDecoder, stopDecoder, type DecoderProcess } from "../../infra/local/decoders";
import { ROOT } from "../../infra/root";
import { SETTLE_IDLE_MS } from "../../regional/runtime/settle";
import { DEFAULT_WORK_BUDGET_BYTES } from "../../regional/runtime/work-budget";
import { estimatePeakBytes } from "../../shared/cost";
import { DECODER, signedHeaders, type SourceInfo } from "../../shared/protocol";
import { jp2Header } from "../support/jp2";
import { patternCog } from "../support/pattern-cog";
import { decoderResidentBytes } from "../support/render-processes";

const MIB = 1024 * 1024;
const SECRET = "large-render-memory-secret";
const SIDE = 6000;
const BLOCK_CACHE_MB = 16;
const ASSETS = 32;
/** What a render may leave over the idle figure once settled: 64 MiB and the decoded-block cache at its cap. */
const ALLOWED_BYTES = 64 * MIB + BLOCK_CACHE_MB * MIB;
/** How long the memory may take to come back after the answer. */
const RETURN_MS = 30_000;

let dir: string;
let decoder: DecoderProcess;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "tessera-large-render-memory-"));
  patternCog(path.join(dir, "big.tif"), SIDE);
  // A mosaic of 32 copies of the UTM sample: its tiles compute on the main thread.
  const members = Array.from({ length: ASSETS }, (_, i) => `member-${i}.tif`);
  for (const m of members) await copyFile(`${ROOT}samples/utm-quadrants.tif`, path.join(dir, m));
  const mosaic = { mosaicjson: "0.0.3", minzoom: 0, maxzoom: 16, bounds: [15, 47.66, 15.28, 47.86], tiles: { "": members } };
  await writeFile(path.join(dir, "mosaic32.mosaic.json"), JSON.stringify(mosaic));
  decoder = await startDecoder({
    TESSERA_DECODER_SECRET: SECRET,
    TESSERA_DECODER_PORT: "0",
    TESSERA_DATA_DIR: dir,
    TESSERA_BLOCK_CACHE_MB: String(BLOCK_CACHE_MB),
    TESSERA_MOSAIC_MAX_ASSETS: String(ASSETS),
    // One render thread, so one encoder; a deadline for a busy machine: this is about memory.
    TESSERA_RENDER_THREADS: "1",
    TESSERA_REQUEST_TIMEOUT_MS: "300000",
  });
}, 120_000);

afterAll(async () => {
  if (decoder) await stopDecoder(decoder);
  await rm(dir, { recursive: true, force: true });
});

async function get(target: string): Promise<Response> {
  return fetch(decoder.url + target, { headers: await signedHeaders(SECRET, "GET", target) });
}

const residentBytes = () => decoderResidentBytes(decoder.process.pid!);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The widest square jp2 of the whole source that the default work budget admits. */
function largestJp2(info: SourceInfo): number {
  const region = { x: 0, y: 0, w: info.width, h: info.height };
  const fits = (side: number) =>
    estimatePeakBytes({ ...info, channels: 3, region, width: side, height: side, degrees: 0, format: "jp2" }) <= DEFAULT_WORK_BUDGET_BYTES;
  let side = info.width;
  while (!fits(side)) side -= 8;
  return side;
}

/** Resident memory once it has settled within the bound of `from`, or after RETURN_MS. */
async function settled(from: number): Promise<number> {
  let now = await residentBytes();
  for (const start = Date.now(); now - from > ALLOWED_BYTES && Date.now() - start < RETURN_MS; now = await residentBytes()) await sleep(500);
  return now;
}

const mib = (bytes: number) => `${(bytes / MIB).toFixed(0)} MiB`;

/** The times the decoder replaced its idle render pool. */
const recycles = async () => Number(/^tessera_decoder_render_pool_recycles_total (\S+)$/m.exec(await (await fetch(`${decoder.url}/metrics`)).text())?.[1]);

/** Long enough for a render process to load its modules (some 0.5 s here). */
const PROCESS_START_MS = 2000;

it("the largest png, then the largest jp2, each leave the decoder's resident memory within 64 MiB and the block cache of its idle figure within 30 s", async () => {
  const info = (await (await get(DECODER.info("big"))).json()) as SourceInfo;
  const side = largestJp2(info);
  await sleep(1000);
  const idle = await residentBytes();
  for (const format of ["png", "jp2"]) {
    const before = await recycles();
    const res = await get(DECODER.image("big", `full/${side},${side}/0/default.${format}`, info.version));
    expect(res.status).toBe(200);
    const body = Buffer.from(await res.arrayBuffer());
    if (format === "jp2") expect(jp2Header(body)).toMatchObject({ width: side, height: side, components: 3 });
    const after = await residentBytes();
    // The render reserved hundreds of MiB: the idle pool is replaced, and measured once its fresh
    // process has loaded (one still loading would pass for memory returned).
    await expect.poll(recycles, { timeout: 10_000 }).toBeGreaterThan(before);
    await sleep(PROCESS_START_MS);
    const now = await settled(idle);
    console.log(`${side}² ${format}: idle ${mib(idle)}, after the answer ${mib(after)}, settled at ${mib(now)}`);
    expect((now - idle) / MIB, format).toBeLessThanOrEqual(ALLOWED_BYTES / MIB);
  }
}, 240_000);

it("a spell of 32-asset mean map tiles leaves it within 64 MiB and the block cache of its idle figure within 30 s", async () => {
  const tile = (i: number, k: number) => `/v1/tiles/mosaic32/WebMercatorQuad/12/${2218 + ((i + k) % 4)}/1427@2x.png?pixel_selection=mean&bidx=1&rescale=0,${200 + 2 * i + k}`;
  // Idle once warm: the first tile loads the map path's code and opens the 32 members, which stay.
  expect((await get(tile(-1, 0))).status).toBe(200);
  await sleep(SETTLE_IDLE_MS + 2000);
  const idle = await residentBytes();
  for (let i = 0; i < 6; i++) {
    for (const res of await Promise.all([0, 1].map((k) => get(tile(i, k))))) expect(res.status).toBe(200);
  }
  const after = await residentBytes();
  const now = await settled(idle);
  console.log(`mosaic tiles: idle ${mib(idle)}, after ${mib(after)}, settled at ${mib(now)}`);
  expect(after - idle).toBeGreaterThan(ALLOWED_BYTES); // the tiles did leave that much behind
  expect((now - idle) / MIB).toBeLessThanOrEqual(ALLOWED_BYTES / MIB);
}, 120_000);
