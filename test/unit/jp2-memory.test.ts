// What a large jp2 answer leaves behind in a real decoder process: its resident memory, read
// from /proc, back near what the same png leaves once the encode is over. OpenJPEG's WebAssembly
// memory never shrinks, so an encoder that held it for the whole image kept the decoder that much
// larger for as long as it ran.
import { readFile, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startDecoder, stopDecoder, type DecoderProcess } from "../../infra/local/decoders";
import { DEFAULT_WORK_BUDGET_BYTES } from "../../regional/runtime/work-budget";
import { estimatePeakBytes } from "../../shared/cost";
import { DECODER, signRequest, type SourceInfo } from "../../shared/protocol";
import { jp2Header } from "../support/jp2";
import { patternCog } from "../support/pattern-cog";

const MIB = 1024 * 1024;
const SECRET = "jp2-memory-secret";
const SIDE = 6000;
const BLOCK_CACHE_MB = 16;
/**
 * What the encode may leave over the png's: the issue's 64 MiB plus the decoded-block cache at
 * its cap, and, measured at 130–195 MiB where this allows 208, what a jp2's raw output leaves
 * to the render thread's next collection (libvips streams a png, jp2 takes the raw pixels).
 * OpenJPEG holding a whole large image left 300 MiB more and more; one holding a tile, none.
 */
const ALLOWED_BYTES = 64 * MIB + BLOCK_CACHE_MB * MIB + 128 * MIB;
/** How long the memory may take to come back after the answer. */
const RETURN_MS = 30_000;

let dir: string;
let decoder: DecoderProcess;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "tessera-jp2-memory-"));
  patternCog(path.join(dir, "big.tif"), SIDE);
  decoder = await startDecoder({
    TESSERA_DECODER_SECRET: SECRET,
    TESSERA_DECODER_PORT: "0",
    TESSERA_DATA_DIR: dir,
    TESSERA_BLOCK_CACHE_MB: String(BLOCK_CACHE_MB),
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
  return fetch(decoder.url + target, { headers: { "x-tessera-signature": await signRequest(SECRET, "GET", target) } });
}

async function residentBytes(): Promise<number> {
  const status = await readFile(`/proc/${decoder.process.pid}/status`, "utf8");
  return 1024 * Number(/^VmRSS:\s+(\d+) kB$/m.exec(status)![1]);
}

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

// The render around the encode (decoded bands, the resized output, libvips's and glibc's arenas)
// leaves the same whatever the format: the png of the same size is the baseline, and what the
// jp2 adds to it is the encoder's.
it("a large jp2 leaves the decoder's resident memory within 64 MiB and the block cache of what the same png leaves", async () => {
  const info = (await (await get(DECODER.info("big"))).json()) as SourceInfo;
  const side = largestJp2(info);
  const image = (format: string) => get(DECODER.image("big", `full/${side},${side}/0/default.${format}`, info.version));
  await sleep(1000);
  const idle = await residentBytes();
  expect((await image("png")).status).toBe(200);
  await sleep(RETURN_MS / 3);
  const afterPng = await residentBytes();

  const res = await image("jp2");
  expect(res.status).toBe(200);
  expect(jp2Header(Buffer.from(await res.arrayBuffer()))).toMatchObject({ width: side, height: side, components: 3 });
  const after = await residentBytes();
  const now = await settled(afterPng);
  const mib = (bytes: number) => `${(bytes / MIB).toFixed(0)} MiB`;
  console.log(`${side}²: idle ${mib(idle)}, after the png ${mib(afterPng)}, after the jp2 ${mib(after)}, then ${mib(now)}`);
  expect((now - afterPng) / MIB).toBeLessThanOrEqual(ALLOWED_BYTES / MIB);
}, 240_000);
