// npm run bench:flood — do viewers stay fast while crawlers flood full-image requests?
//
// The local stack (infra/local/stack.ts) with two decoders and a fixed MEMORY_LIMIT, on a
// 6000 px JPEG COG generated here with GDAL (full-image decodes take seconds and hundreds of
// MB) and an 11000 px one too large to render whole, whose max is the area a decoder's work
// budget renders (info.json's maxArea: 6720², about the whole 512 MiB). For each mode (advanced,
// then basic), ROUNDS times: a viewer workload alone (distinct tiles, all cache misses), then
// the same workload on a fresh copy of the image while crawlers flood full-size pct: requests
// and the 11000 px image's /full/max/ at many times the full partition's capacity. Figures are
// ratios within the same run. The last line is the summary: tile p99 flooded/alone, tile
// errors, the crawlers' 503s and 413s, the decoders' peak RSS (sum of both, sampled) and the
// limit, the requests the decoders found in another partition than the edge did (each
// re-admitted once), the decoders' longest event-loop stall, and basic mode's ratio. TILES_THREAD_RATIO is the product's default unless
// BENCH_TILES_THREAD_RATIO says otherwise; BENCH_ROUNDS (3) and BENCH_VIEWER_SECONDS (10) shorten
// a run while developing.

import { execFileSync } from "node:child_process";
import { copyFile, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { ROOT } from "../infra/root";
import { startStack, type Stack } from "../infra/local/stack";
import { ADMISSION_DEFAULTS } from "../shared/admission-config";

const MEMORY_LIMIT = 1.5 * 2 ** 30;
const DECODER_CAPACITY = 2; // per decoder: n = 4 permits
// The product's default (half the permits guaranteed to tiles: full_max = 2, so both decoders may
// render a full at once); BENCH_TILES_THREAD_RATIO compares another.
const TILES_THREAD_RATIO = process.env.BENCH_TILES_THREAD_RATIO ?? String(ADMISSION_DEFAULTS.TILES_THREAD_RATIO);
const VIEWERS = 3;
// Bounds a window: in basic mode a flooded tile can wait QUEUE_TIMEOUT, and the whole list of
// ~700 tiles would take many minutes.
const VIEWER_SECONDS = Number(process.env.BENCH_VIEWER_SECONDS ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CRAWLERS = 24; // 12 times the full partition at the default ratio, 6 times all permits
const BIG = 6000;
const HUGE = 11000; // full/max: 6720², read from the full level in bands, ~512 MiB by the estimate

interface Phase {
  latencies: number[];
  errors: number;
}
interface Flood {
  ok: number;
  shed503: number;
  tooLarge413: number;
  other: number;
}

function p99(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.99) - 1)];
}

/** Distinct viewer tiles of source `id`, in a scattered order: full resolution and two overviews. */
function viewerTiles(id: string): string[] {
  const paths: string[] = [];
  for (const [step, out] of [
    [256, "max"],
    [512, "256,256"],
    [1024, "256,256"],
  ] as const) {
    const across = Math.floor(BIG / step);
    for (let i = 0; i < across * across; i++) {
      paths.push(`/iiif/3/${id}/${(i % across) * step},${Math.floor(i / across) * step},${step},${step}/${out}/0/default.jpg`);
    }
  }
  // A fixed shuffle (Knuth's multiplicative hash) so viewers do not walk the image row by row.
  return paths.map((p, i) => [(i * 2654435761) % 2 ** 32, p] as const).sort((a, b) => a[0] - b[0]).map(([, p]) => p);
}

/** The viewers fetch distinct tiles until the list or VIEWER_SECONDS runs out. */
async function viewers(stack: Stack, id: string): Promise<Phase> {
  const queue = viewerTiles(id);
  const phase: Phase = { latencies: [], errors: 0 };
  const end = Date.now() + VIEWER_SECONDS * 1000;
  await Promise.all(
    Array.from({ length: VIEWERS }, async () => {
      for (let p = queue.shift(); p && Date.now() < end; p = queue.shift()) {
        const started = performance.now();
        const res = await fetch(stack.url + p);
        await res.arrayBuffer();
        phase.latencies.push(performance.now() - started);
        if (res.status !== 200) phase.errors++;
      }
    }),
  );
  return phase;
}

/** Crawlers until `stop` aborts: distinct pct: regions at max size, and the huge image's max. */
function crawl(stack: Stack, id: string, stop: AbortSignal): { flood: Flood; done: Promise<void> } {
  const flood: Flood = { ok: 0, shed503: 0, tooLarge413: 0, other: 0 };
  let k = 0;
  const next = () => {
    const i = k++;
    if (i % 4 === 3) return `/iiif/3/huge-${id}/full/max/0/default.jpg`;
    const w = 50 + (i % 41); // 50..90 % of each side: a 3000–5400 px output, always a full
    const x = (i * 13) % (101 - w);
    const y = (i * 7) % (101 - w);
    return `/iiif/3/${id}/pct:${x},${y},${w},${w}/max/0/default.jpg`;
  };
  const loop = async () => {
    while (!stop.aborted) {
      try {
        const res = await fetch(stack.url + next(), { signal: stop });
        await res.arrayBuffer();
        if (res.status === 200) flood.ok++;
        else if (res.status === 503) flood.shed503++;
        else if (res.status === 413) flood.tooLarge413++;
        else flood.other++;
        // It waits the Retry-After of a 503 (the contract the 503 states), and goes straight on
        // to its next URL after a 413 (that one will never work).
        const retryAfter = Number(res.headers.get("retry-after") ?? 0);
        if (res.status === 503) await sleep(retryAfter * 1000, stop);
      } catch {
        // aborted at the end of the phase
      }
    }
  };
  return { flood, done: Promise.all(Array.from({ length: CRAWLERS }, loop)).then(() => {}) };
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => (clearTimeout(timer), resolve()), { once: true });
  });

/** Peak of the decoders' summed resident memory, sampled every 20 ms. */
function rssSampler(stack: Stack): { peak(): number; stop(): void } {
  let peak = 0;
  const timer = setInterval(async () => {
    let sum = 0;
    for (const d of stack.decoders) {
      const status = await readFile(`/proc/${d.process.pid}/status`, "utf8").catch(() => "");
      sum += Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
    }
    peak = Math.max(peak, sum);
  }, 20);
  return { peak: () => peak, stop: () => clearInterval(timer) };
}

/**
 * The longest event-loop stall of either decoder: their lag maximum (prom-client resets it at
 * each scrape), read every 500 ms. A stall is what every tile on that decoder waits out.
 */
function loopLagSampler(stack: Stack): { max(): number; stop(): void } {
  let max = 0;
  const timer = setInterval(async () => {
    for (const d of stack.decoders) {
      const text = await fetch(`${d.url}/metrics`).then((r) => r.text()).catch(() => "");
      max = Math.max(max, Number(/^tessera_decoder_nodejs_eventloop_lag_max_seconds (\S+)$/m.exec(text)?.[1] ?? 0));
    }
  }, 500);
  return { max: () => max, stop: () => clearInterval(timer) };
}

async function metric(stack: Stack, name: string): Promise<number> {
  const text = await (await fetch(`${stack.url}/metrics`)).text();
  return Number(new RegExp(`^${name} (\\S+)$`, "m").exec(text)?.[1]);
}

async function runMode(mode: "advanced" | "basic", dir: string) {
  const stack = await startStack({
    decoders: 2,
    decoderEnv: { TESSERA_DATA_DIR: dir, TESSERA_DECODER_CAPACITY: String(DECODER_CAPACITY) },
    vars: { ADMISSION_MODE: mode, MEMORY_LIMIT: String(MEMORY_LIMIT), TILES_THREAD_RATIO },
  });
  const rss = rssSampler(stack);
  const lag = loopLagSampler(stack);
  try {
    const alone: Phase = { latencies: [], errors: 0 };
    const flooded: Phase = { latencies: [], errors: 0 };
    const flood: Flood = { ok: 0, shed503: 0, tooLarge413: 0, other: 0 };
    // Alone and flooded windows alternate, each on a fresh copy of the image, so a change in the
    // machine's background load over the run weighs on both sides alike.
    for (let round = 0; round < ROUNDS; round++) {
      const [aloneId, floodId] = [`alone-${round}`, `flood-${round}`];
      for (const id of [aloneId, floodId, `huge-${floodId}`]) {
        await (await fetch(`${stack.url}/iiif/3/${id}/info.json`)).arrayBuffer(); // a viewer opens info.json first
      }
      progress(`${mode} round ${round + 1}/${ROUNDS}: viewers alone`);
      merge(alone, await viewers(stack, aloneId));
      progress(`${mode} round ${round + 1}/${ROUNDS}: viewers under the crawler flood`);
      const stop = new AbortController();
      const crawler = crawl(stack, floodId, stop.signal);
      await sleep(2000, new AbortController().signal); // let the flood build up
      merge(flooded, await viewers(stack, floodId));
      stop.abort();
      await crawler.done;
      for (const k of Object.keys(flood) as (keyof Flood)[]) flood[k] += crawler.flood[k];
    }
    const result = {
      mode,
      aloneP99: p99(alone.latencies),
      floodP99: p99(flooded.latencies),
      tiles: [alone.latencies.length, flooded.latencies.length],
      tileErrors: alone.errors + flooded.errors,
      ...flood,
      rssPeak: rss.peak(),
      loopLagMax: lag.max(),
      fullShadowRejected: await metric(stack, "tessera_admission_full_shadow_rejected_total"),
      memoryShadowTooLarge: await metric(stack, "tessera_decode_memory_shadow_too_large_total"),
      leasesExpired: await metric(stack, "tessera_admission_leases_expired_total"),
      disagreements: await metric(stack, "tessera_admission_classifier_disagreement_total"),
    };
    console.log(
      `${mode}: ${result.tiles.join(" / ")} tiles; tile p99 alone ${result.aloneP99.toFixed(0)} ms, flooded ${result.floodP99.toFixed(0)} ms ` +
        `(medians ${median(alone.latencies).toFixed(0)} / ${median(flooded.latencies).toFixed(0)} ms); tile errors ${result.tileErrors}; crawler ok ${result.ok}, ` +
        `503 ${result.shed503}, 413 ${result.tooLarge413}, other ${result.other}; decoder RSS peak ` +
        `${(result.rssPeak / 2 ** 20).toFixed(0)} MiB of ${(MEMORY_LIMIT / 2 ** 20).toFixed(0)} MiB; ` +
        `longest decoder event-loop stall ${(result.loopLagMax * 1000).toFixed(0)} ms; ` +
        `shadow: full ${result.fullShadowRejected}, too large ${result.memoryShadowTooLarge}`,
    );
    return result;
  } finally {
    rss.stop();
    lag.stop();
    await stack.stop();
  }
}

function merge(into: Phase, from: Phase): void {
  into.latencies.push(...from.latencies);
  into.errors += from.errors;
}
const progress = (what: string) => process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${what}\n`);
const median = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];

async function main() {
  const dir = await mkdtemp(path.join(tmpdir(), "tessera-bench-flood-"));
  try {
    const cog = ["-of", "COG", "-co", "COMPRESS=JPEG", "-co", "QUALITY=85", "-co", "BLOCKSIZE=256", "-co", "OVERVIEWS=AUTO"];
    const src = `${ROOT}samples/test-pattern.tif`;
    execFileSync("gdal_translate", ["-q", "-outsize", `${BIG}`, `${BIG}`, "-r", "bilinear", ...cog, src, `${dir}/big.tif`]);
    execFileSync("gdal_translate", ["-q", "-outsize", `${HUGE}`, `${HUGE}`, "-r", "near", ...cog, src, `${dir}/huge.tif`]);
    // One copy per window, so no window is served from another's edge cache (each mode runs on
    // a fresh stack, whose cache starts empty).
    for (let round = 0; round < ROUNDS; round++) {
      await copyFile(`${dir}/big.tif`, `${dir}/alone-${round}.tif`);
      await copyFile(`${dir}/big.tif`, `${dir}/flood-${round}.tif`);
      await copyFile(`${dir}/huge.tif`, `${dir}/huge-flood-${round}.tif`);
    }
    const advanced = await runMode("advanced", dir);
    const basic = await runMode("basic", dir);
    console.log(
      `tile_p99_ratio=${(advanced.floodP99 / advanced.aloneP99).toFixed(2)} tile_errors=${advanced.tileErrors} ` +
        `full_503=${advanced.shed503} full_413=${advanced.tooLarge413} decoder_rss_peak_bytes=${advanced.rssPeak} ` +
        `memory_limit_bytes=${MEMORY_LIMIT} classifier_disagreements=${advanced.disagreements} ` +
        `decoder_loop_stall_max_ms=${(advanced.loopLagMax * 1000).toFixed(0)} ` +
        `basic_tile_p99_ratio=${(basic.floodP99 / basic.aloneP99).toFixed(2)}`,
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
