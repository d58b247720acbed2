// `npm run bench:full`: the memory of whole-image renders of a 20000² COG, each in a fresh
// decoder process so its peak RSS (VmHWM, with its render processes') is that request's alone.
//
// Fixture: the 1000² test pattern repeated to 20000² RGB, a GDAL JPEG q85 COG with 512² blocks
// and overviews (made once, cached under BENCH_DIR, not committed). For each of full/max (the
// largest size the decoder's work budget renders: SourceInfo.maxArea) and full/2000, a decoder
// with the default settings (512 MiB work budget, 256 MiB block cache) is started, asked for the
// source's info, then for the image (signed, no DO grant: its own budget admits it), and reports
// its peak RSS before and after the image, the work budget's peak and the time taken.
// BENCH_BLOCK_CACHE_MB sets the decoders' block cache (the cache fills during a large read).
// Needs gdal-bin. The last line is the summary.

import path from "node:path";
import sharp from "sharp";
import { startDecoder, stopDecoder, type DecoderProcess } from "../infra/local/decoders";
import { DECODER, signedHeaders, type SourceInfo } from "../shared/protocol";
import { patternCog } from "../test/support/pattern-cog";
import { decoderPeakBytes } from "../test/support/render-processes";

const DIR = process.env.BENCH_DIR ?? "/tmp/tessera-bench";
const ID = "pattern-20000";
const SIZE = 20000;
const SECRET = "bench-secret";
const MIB = 2 ** 20;
const REQUESTS = { full_max: "full/max/0/default.jpg", full_2000: "full/2000,/0/default.jpg" };

interface Figures {
  width: number;
  height: number;
  idleRss: number;
  peakRss: number;
  workPeak: number;
  ms: number;
}

const log = (msg: string) => process.stdout.write(`${msg}\n`);

async function signedGet(d: DecoderProcess, pathAndQuery: string): Promise<Response> {
  const res = await fetch(d.url + pathAndQuery, { headers: await signedHeaders(SECRET, "GET", pathAndQuery) });
  if (!res.ok) throw new Error(`${pathAndQuery}: HTTP ${res.status} ${await res.text()}`);
  return res;
}

async function workPeak(d: DecoderProcess): Promise<number> {
  const text = await (await fetch(`${d.url}/metrics`)).text();
  return Number(/^tessera_decoder_work_budget_peak_bytes (\S+)$/m.exec(text)?.[1]);
}

async function measure(canonical: string): Promise<Figures> {
  const env: Record<string, string> = { TESSERA_DECODER_SECRET: SECRET, TESSERA_DECODER_PORT: "0", TESSERA_DATA_DIR: DIR };
  if (process.env.BENCH_BLOCK_CACHE_MB) env.TESSERA_BLOCK_CACHE_MB = process.env.BENCH_BLOCK_CACHE_MB;
  const d = await startDecoder(env);
  try {
    const info = (await (await signedGet(d, DECODER.info(ID))).json()) as SourceInfo;
    const idleRss = decoderPeakBytes(d.process.pid!);
    const started = performance.now();
    const body = Buffer.from(await (await signedGet(d, DECODER.image(ID, canonical, info.version))).arrayBuffer());
    const ms = performance.now() - started;
    const { width, height } = await sharp(body).metadata();
    return { width: width!, height: height!, idleRss, peakRss: decoderPeakBytes(d.process.pid!), workPeak: await workPeak(d), ms };
  } finally {
    await stopDecoder(d);
  }
}

async function main(): Promise<void> {
  const file = path.join(DIR, `${ID}.tif`);
  log(`fixture ${file} (${SIZE}² RGB JPEG COG; made once with GDAL, a few minutes)`);
  patternCog(file, SIZE);
  const summary: string[] = [];
  for (const [name, canonical] of Object.entries(REQUESTS)) {
    const f = await measure(canonical);
    const mib = (n: number) => `${(n / MIB).toFixed(0)} MiB`;
    log(
      `${canonical}: ${f.width}x${f.height} in ${(f.ms / 1000).toFixed(1)} s; decoder peak RSS ${mib(f.peakRss)} ` +
        `(${mib(f.idleRss)} before the image), work budget peak ${mib(f.workPeak)}; output raw ${mib(f.width * f.height * 3)}`,
    );
    summary.push(`${name}=${f.width}x${f.height} ${name}_peak_rss_bytes=${f.peakRss} ${name}_idle_rss_bytes=${f.idleRss} ${name}_work_peak_bytes=${f.workPeak} ${name}_ms=${Math.round(f.ms)}`);
  }
  log(summary.join(" "));
}

await main();
