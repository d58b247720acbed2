// `npm run bench:work`: the work unit, measured. Prints, for this machine, the CPU time each
// coefficient of shared/work.ts stands for (ms of one core per million samples at each stage),
// beside the value the code uses, then checks the sums on real renders: a decoder in this process
// answers IIIF requests of every codec and format one at a time, and each request's CPU time is
// compared with the work its answer reports (x-tessera-estimate-work). The last line is the
// summary. The map stages' coefficients have their own bench, bench:map-stages.
//
// Fixtures (under BENCH_DIR, /tmp/tessera-bench, made once with GDAL from bench:decode's 8192²
// textured image): a 2048² RGB COG in each codec the decoder reads. CPU time is the process's
// (process.cpuUsage: every thread, libvips and the libuv pool included), so a busy machine slows
// the wall clock but not the figures much. BENCH_ROUNDS (default 5) repeats each measurement; the
// median is printed.
//
// Needs gdal-bin.

import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import type { AddressInfo } from "node:net";
import path from "node:path";
import sharp from "sharp";
import { ESTIMATE_WORK_HEADER } from "../shared/cost";
import type { Format } from "../shared/iiif/image-request";
import { DECODER, signedHeaders } from "../shared/protocol";
import { WORK_PER_MEGASAMPLE, type Codec } from "../shared/work";
import { Cog } from "../regional/cog/cog";
import { DecodedBlockCache } from "../regional/cog/block-cache";
import { encoderFor } from "../regional/encode/formats";
import { createDecoderServer } from "../regional/http/server";
import { configureSharp } from "../regional/render/render";
import { WorkBudget } from "../regional/runtime/work-budget";
import { LocalCatalog, openLocalFile } from "../regional/source/local";
import { DIR, FILE, makeFixture } from "./decode";
import { cpuMs } from "./cpu-time";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const cpuMsOf = (run: () => Promise<unknown> | unknown) => cpuMs(run, ROUNDS);
const SIDE = 2048;
const SECRET = "bench-work";

/** GDAL's creation options for each codec the decoder reads. */
const CODECS: Record<Exclude<Codec, "other">, string[]> = {
  jpeg: ["COMPRESS=JPEG", "QUALITY=85"],
  webp: ["COMPRESS=WEBP", "QUALITY=85"],
  deflate: ["COMPRESS=DEFLATE", "PREDICTOR=2"],
  lzw: ["COMPRESS=LZW", "PREDICTOR=2"],
  zstd: ["COMPRESS=ZSTD", "PREDICTOR=2"],
  packbits: ["COMPRESS=PACKBITS"], // (GTiff: the COG driver does not write it)
  none: ["COMPRESS=NONE"],
};

const log = (line: string) => process.stdout.write(`${line}\n`);

function fixture(codec: keyof typeof CODECS): string {
  const file = path.join(DIR, `work-${codec}.tif`);
  if (!existsSync(file)) {
    const options = CODECS[codec].flatMap((o) => ["-co", o]);
    const layout = codec === "packbits" ? ["-of", "GTiff", "-co", "TILED=YES", "-co", "BLOCKXSIZE=512", "-co", "BLOCKYSIZE=512"] : ["-of", "COG", "-co", "BLOCKSIZE=512"];
    execFileSync("gdal_translate", ["-q", "-srcwin", "0", "0", String(SIDE), String(SIDE), ...layout, ...options, FILE, file]);
  }
  return file;
}

/** One coefficient: measured ms per million samples beside the code's. */
function row(stage: string, measured: number, used: number): void {
  log(`${stage.padEnd(22)} measured ${measured.toFixed(2).padStart(7)}  code ${used.toFixed(2).padStart(7)}  ratio ${(measured / used).toFixed(2)}`);
}

async function decodeCoefficients(): Promise<void> {
  for (const codec of Object.keys(CODECS) as (keyof typeof CODECS)[]) {
    const source = (await openLocalFile(fixture(codec), codec))!;
    // No block cache: every read decodes its blocks, as a cold tile does.
    const cog = await Cog.open(source, { cache: new DecodedBlockCache(0), budget: new WorkBudget(1 << 30), prefetchRing: 0 });
    const ms = await cpuMsOf(() => cog.readLevelWindow(0, [0, 0, SIDE, SIDE]));
    row(`decode ${codec}`, ms / ((SIDE * SIDE * 3) / 1e6), WORK_PER_MEGASAMPLE.decode[codec]);
    await cog.close();
  }
}

async function imageCoefficients(raw: Buffer): Promise<void> {
  const input = () => sharp(raw, { raw: { width: SIDE, height: SIDE, channels: 3 } });
  const reduce = await cpuMsOf(() => input().resize(SIDE / 2, SIDE / 2, { kernel: "lanczos3" }).raw().toBuffer());
  row("reduce", reduce / ((SIDE * SIDE + (SIDE / 2) ** 2) * 3e-6), WORK_PER_MEGASAMPLE.reduce);
  const half = await input().resize(SIDE / 2).raw().toBuffer();
  const enlarge = await cpuMsOf(() => sharp(half, { raw: { width: SIDE / 2, height: SIDE / 2, channels: 3 } }).resize(SIDE, SIDE, { kernel: "lanczos3" }).raw().toBuffer());
  row("enlarge", enlarge / (SIDE * SIDE * 3e-6), WORK_PER_MEGASAMPLE.enlarge);
  const rotate = await cpuMsOf(() => input().rotate(17, { background: "#fff" }).raw().toBuffer({ resolveWithObject: true }));
  const canvas = await input().rotate(17).raw().toBuffer({ resolveWithObject: true });
  row("rotate", rotate / (canvas.info.width * canvas.info.height * 3e-6), WORK_PER_MEGASAMPLE.rotate);
  for (const format of Object.keys(WORK_PER_MEGASAMPLE.encode) as Format[]) {
    // OpenJPEG takes seconds at 2048²: a quarter of it is enough to measure.
    const side = format === "jp2" ? SIDE / 2 : SIDE;
    const img = () => sharp(raw, { raw: { width: SIDE, height: SIDE, channels: 3 } }).extract({ left: 0, top: 0, width: side, height: side });
    const ms = await cpuMsOf(() => encoderFor(format).encode(img()));
    row(`encode ${format}`, ms / (side * side * 3e-6), WORK_PER_MEGASAMPLE.encode[format]);
  }
}

/** Requests of every kind a decoder answers, to hold the sums against. */
function requests(): string[] {
  const images = [
    "0,0,512,512/256,256/0/default.jpg",
    "0,0,1024,1024/512,512/0/default.jpg",
    "full/1024,/0/default.jpg",
    "full/2048,/0/default.jpg",
    "full/max/0/default.png",
    "full/1024,/0/default.webp",
    "full/512,/0/default.tif",
    "full/512,/17/default.jpg",
    "full/%5E3000,/0/default.jpg",
    "full/512,/0/default.jp2",
  ];
  const ids = Object.keys(CODECS).map((codec) => `work-${codec}`);
  return ids.flatMap((id) => images.map((parts) => `${id}|${parts}`));
}

async function validate(): Promise<number[]> {
  const server = createDecoderServer({ catalog: new LocalCatalog(DIR), secret: SECRET, capacity: 1, log: () => {}, blockCache: new DecodedBlockCache(0) });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const signed = async (target: string) => fetch(base + target, { headers: await signedHeaders(SECRET, "GET", target) });
  const ratios: number[] = [];
  try {
    for (const request of requests()) {
      const [id, parts] = request.split("|");
      const { version } = (await (await signed(DECODER.info(id))).json()) as { version: string };
      const target = DECODER.image(id, parts, version);
      let predicted = 0;
      const ms = await cpuMsOf(async () => {
        const res = await signed(target);
        if (!res.ok) throw new Error(`${request}: ${res.status} ${await res.text()}`);
        predicted = Number(res.headers.get(ESTIMATE_WORK_HEADER));
        await res.arrayBuffer();
      });
      ratios.push(ms / predicted);
      log(`${request.padEnd(48)} predicted ${String(predicted).padStart(6)} units  measured ${ms.toFixed(1).padStart(8)} ms  ratio ${(ms / predicted).toFixed(2)}`);
    }
  } finally {
    server.close();
    server.closeAllConnections();
  }
  return ratios;
}

async function main(): Promise<void> {
  configureSharp();
  makeFixture();
  const raw = await sharp(FILE).extract({ left: 0, top: 0, width: SIDE, height: SIDE }).removeAlpha().raw().toBuffer();
  log("coefficients: ms of CPU per million samples, measured here, against the code's (shared/work.ts)");
  await decodeCoefficients();
  await imageCoefficients(raw);
  log("whole requests, one at a time: the answer's work against its CPU time");
  const ratios = (await validate()).sort((a, b) => a - b);
  const at = (q: number) => ratios[Math.min(ratios.length - 1, Math.floor(q * ratios.length))];
  const spread = Math.max(1 / ratios[0], ratios.at(-1)!);
  log(`work_ms_per_unit median=${at(0.5).toFixed(2)} p10=${at(0.1).toFixed(2)} p90=${at(0.9).toFixed(2)} min=${ratios[0].toFixed(2)} max=${ratios.at(-1)!.toFixed(2)} within_factor=${spread.toFixed(2)} requests=${ratios.length}`);
}

await main();
