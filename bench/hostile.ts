// `npm run bench:hostile`: viewers beside a flood of each kind of costly URL in turn, on the local
// stack with its default configuration (two decoders of two permits each). Each kind is what a
// hostile client would send to buy the most work or memory for the least effort: a band
// expression at the node cap on @2x map tiles, a 32-asset mosaic tile with pixel_selection=mean,
// upscales of a 1000² image, thumbnails of a 65536² image without overviews, large JPEG 2000s,
// and a few large PNGs asked by many clients at once.
//
// For each kind, viewers fetch distinct 256² tiles of 6000² images alone, then while the flood
// runs (each phase on fresh copies, so no tile is an edge-cache hit). The first kind is a control:
// a flood of the cheapest answer, what any flood costs the viewers on this one machine. A line a
// kind: the viewers' p99 flooded ÷ alone (and both in ms), the decoders' longest event-loop stall and slowest /health, the flood's
// answers (ok, refused up front, 503 + Retry-After, failures: any other 5xx), the fewest decoders
// the edge saw alive, and the decoders' RSS at its peak and once settled (sampled until it is back
// within 64 MiB plus the block cache's cap of its idle figure, at most 30 s). The last line is the
// summary against the targets: p99 ratio ≤ 1.5, stall ≤ 100 ms, no failure, no decoder dropped,
// RSS settled. BENCH_VIEWER_SECONDS (10), BENCH_VIEWERS (3) and BENCH_CRAWLERS (8) change a run's size; BENCH_KINDS
// (a comma-separated list of the kinds' names) runs only those.
//
// The crawlers are elsewhere, as on Cloudflare, where a flood's clients are on the internet and
// its requests run in edge isolates of their own (crawlers-elsewhere.ts: a thread and a second
// edge location, both at nice 19). With both at the stack's priority, the crawlers' client and
// edge took over a core of the two (a flood of 404s: 60 % its workerd, 53 % its client), and that
// flood alone lifted the viewers' p99 twofold. BENCH_LOCATIONS=1 runs them as before: on this
// thread, through the viewers' edge, at the same priority.

import { copyFile, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { ROOT } from "../infra/root";
import type { Stack } from "../infra/local/stack";
import { patternCog } from "../test/support/pattern-cog";
import { flatTiff } from "../test/support/tiff-builder";
import { BIG, KINDS } from "./hostile-kinds";
import { startFlood, startLoadStack } from "./crawlers-elsewhere";
import { decodersRss, edgeMetric, healthSampler, loopLagSampler, p99, progress, rssSampler, sleep, viewers, viewerTiles, type Flood } from "./load";

const VIEWER_SECONDS = Number(process.env.BENCH_VIEWER_SECONDS ?? 10);
const CRAWLERS = Number(process.env.BENCH_CRAWLERS ?? 8);
const VIEWERS = Number(process.env.BENCH_VIEWERS ?? 3);
const DECODERS = 2;
/** The decoders' decoded-block cache cap (TESSERA_BLOCK_CACHE_MB's default), each. */
const BLOCK_CACHE_BYTES = 256 * 2 ** 20;
const SETTLE_MS = 30_000;
const MIB = 2 ** 20;

async function fixtures(dir: string): Promise<void> {
  const samples = `${ROOT}samples`;
  await copyFile(`${samples}/test-pattern.tif`, path.join(dir, "test-pattern.tif"));
  await copyFile(`${samples}/utm-quadrants.tif`, path.join(dir, "utm-quadrants.tif"));
  await writeFile(path.join(dir, "flat.tif"), flatTiff(65536));
  patternCog(path.join(dir, "big.tif"), BIG);
  for (const copy of ["big-jp2", "big-png", ...phaseImages("warm-up"), ...Object.keys(KINDS).flatMap((_, k) => [...phaseImages(`alone-${k}`), ...phaseImages(`flooded-${k}`)])]) {
    await copyFile(path.join(dir, "big.tif"), path.join(dir, `${copy}.tif`));
  }
  const members = Array.from({ length: 32 }, (_, i) => `member-${i}.tif`);
  for (const m of members) await copyFile(`${samples}/utm-quadrants.tif`, path.join(dir, m));
  const mosaic = { mosaicjson: "0.0.3", minzoom: 0, maxzoom: 16, quadkey_zoom: 0, bounds: [15, 47.66, 15.28, 47.86], tiles: { "": members } };
  await writeFile(path.join(dir, "mosaic32.mosaic.json"), JSON.stringify(mosaic));
}

/**
 * A phase's images, each fresh to the edge and the decoders. One image has 675 viewer tiles, which
 * three viewers fetch in about 5 s: a p99 of seven latencies, which swung by 2× between two phases
 * alone. Three give some 1,500 within the phase's seconds.
 */
const phaseImages = (name: string) => [1, 2, 3].map((n) => `${name}-${n}`);
const phaseTiles = (name: string) => phaseImages(name).flatMap((id) => viewerTiles(id, BIG));

interface Result {
  kind: string;
  ratio: number;
  /** The viewers' p99 alone and flooded, and how many tiles each phase measured. */
  p99Ms: [number, number];
  samples: [number, number];
  stallMs: number;
  healthMs: number;
  flood: Flood;
  viewerErrors: number;
  decodersMin: number;
  rssPeak: number;
  rssSettled: number;
  settledMs: number;
}

/** The fewest decoders the edge counts alive, sampled every 500 ms. */
function liveSampler(stack: Stack): { min(): number; stop(): void } {
  let min = Infinity;
  const timer = setInterval(() => void edgeMetric(stack, "tessera_admission_decoders_live").then((n) => (min = Math.min(min, n)), () => {}), 500);
  return { min: () => min, stop: () => clearInterval(timer) };
}

async function runKind(stack: Stack, kind: string, k: number, idleRss: number): Promise<Result> {
  progress(`${kind}: viewers alone`);
  const alone = await viewers(stack, phaseTiles(`alone-${k}`), { viewers: VIEWERS, seconds: VIEWER_SECONDS });
  const [rss, lag, health, live] = [rssSampler(stack), loopLagSampler(stack), healthSampler(stack), liveSampler(stack)];
  progress(`${kind}: viewers under the flood`);
  const crawler = await startFlood(stack, { module: new URL("./hostile-kinds.ts", import.meta.url).href, name: "kindUrls", arg: kind }, CRAWLERS);
  await sleep(2000);
  const flooded = await viewers(stack, phaseTiles(`flooded-${k}`), { viewers: VIEWERS, seconds: VIEWER_SECONDS });
  const flood = await crawler.stop();
  const settleStart = Date.now();
  const bound = idleRss + DECODERS * (64 * MIB + BLOCK_CACHE_BYTES);
  let settled = await decodersRss(stack);
  while (settled > bound && Date.now() - settleStart < SETTLE_MS) {
    await sleep(500);
    settled = await decodersRss(stack);
  }
  for (const s of [rss, lag, health, live]) s.stop();
  return {
    kind,
    ratio: p99(flooded.latencies) / p99(alone.latencies),
    p99Ms: [p99(alone.latencies), p99(flooded.latencies)],
    samples: [alone.latencies.length, flooded.latencies.length],
    stallMs: lag.max() * 1000,
    healthMs: health.max(),
    flood,
    viewerErrors: alone.errors + flooded.errors,
    decodersMin: live.min(),
    rssPeak: rss.max(),
    rssSettled: settled,
    settledMs: Date.now() - settleStart,
  };
}

function report(r: Result): void {
  const f = r.flood;
  console.log(
    `${r.kind.padEnd(14)} p99_ratio=${r.ratio.toFixed(2)} p99_ms=${r.p99Ms.map((v) => v.toFixed(0)).join("/")} tiles=${r.samples.join("/")} stall_ms=${r.stallMs.toFixed(0)} health_ms=${r.healthMs.toFixed(0)} ` +
      `flood ok=${f.ok} refused=${f.refused} shed_503=${f.shed503} failed_5xx=${f.failed} other=${f.other} viewer_errors=${r.viewerErrors} ` +
      `decoders_live_min=${r.decodersMin} rss_peak_mib=${(r.rssPeak / MIB).toFixed(0)} rss_settled_mib=${(r.rssSettled / MIB).toFixed(0)} settled_in_ms=${r.settledMs}`,
  );
}

async function main(): Promise<void> {
  const dir = await mkdtemp(path.join(tmpdir(), "tessera-bench-hostile-"));
  let stack: Stack | undefined;
  try {
    await fixtures(dir);
    stack = await startLoadStack({ decoders: DECODERS, decoderEnv: { TESSERA_DATA_DIR: dir, TESSERA_DECODER_CAPACITY: "2" } });
    // Idle before any decode: the memory bound counts the block caches apart.
    const idleRss = await decodersRss(stack);
    // Unmeasured: the first phases alone had a p99 of 150–180 ms against 55–65 once the decoders'
    // block caches had filled and their code was compiled, which made the first kinds' ratios noise.
    progress("warming up");
    await viewers(stack, phaseTiles("warm-up"), { viewers: VIEWERS, seconds: VIEWER_SECONDS });
    const results: Result[] = [];
    const only = process.env.BENCH_KINDS?.split(",");
    for (const [k, kind] of Object.keys(KINDS).entries()) {
      if (only && !only.includes(kind)) continue;
      const r = await runKind(stack, kind, k, idleRss);
      report(r);
      results.push(r);
    }
    const worst = (f: (r: Result) => number) => Math.max(...results.map(f));
    const costly = results.filter((r) => r.kind !== "control");
    const bound = idleRss + DECODERS * (64 * MIB + BLOCK_CACHE_BYTES);
    console.log(
      `p99_ratio_max=${Math.max(...costly.map((r) => r.ratio)).toFixed(2)} control_ratio=${results.find((r) => r.kind === "control")?.ratio.toFixed(2) ?? "-"} stall_ms_max=${worst((r) => r.stallMs).toFixed(0)} health_ms_max=${worst((r) => r.healthMs).toFixed(0)} ` +
        `failed_5xx=${results.reduce((n, r) => n + r.flood.failed, 0)} refused=${results.reduce((n, r) => n + r.flood.refused, 0)} ` +
        `decoders_dropped=${results.some((r) => r.decodersMin < DECODERS) ? "yes" : "no"} idle_rss_mib=${(idleRss / MIB).toFixed(0)} ` +
        `rss_settled_max_mib=${(worst((r) => r.rssSettled) / MIB).toFixed(0)} rss_bound_mib=${(bound / MIB).toFixed(0)} rss_peak_max_mib=${(worst((r) => r.rssPeak) / MIB).toFixed(0)}`,
    );
  } finally {
    await stack?.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
