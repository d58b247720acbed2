// npm run bench:flood — do viewers stay fast while crawlers flood full-image requests?
//
// The local stack (infra/local/stack.ts) with two decoders and a fixed MEMORY_LIMIT, on a
// 6000 px JPEG COG generated here with GDAL (full-image decodes take seconds and hundreds of
// MB) and an 11000 px one too large to render whole, whose max is the area a decoder's work
// budget renders (info.json's maxArea: 6720², about the whole 512 MiB). For each mode (advanced,
// then basic), ROUNDS times: a viewer workload alone (distinct tiles, all cache misses), then
// the same workload on a fresh copy of the image while crawlers flood full-size pct: requests
// and the 11000 px image's /full/max/ at many times the full partition's capacity. Figures are
// ratios within the same run. The last line is the summary: tile p99 flooded/alone, tile errors,
// the crawlers' 503s and 413s, the decoders' peak RSS (sum of both, sampled) and the limit, the
// requests the decoders found in another partition than the edge did (each re-admitted once), the
// decoders' longest event-loop stall, and basic mode's ratio. TILES_THREAD_RATIO is the product's
// default unless BENCH_TILES_THREAD_RATIO says otherwise; BENCH_ROUNDS (3) and
// BENCH_VIEWER_SECONDS (10) shorten a run while developing.
//
// The crawlers run elsewhere, as on Cloudflare, where a flood's clients are on the internet and
// its requests run in edge isolates of their own (crawlers-elsewhere.ts: a thread and a second
// edge location, both at nice 19): every refused full's edge work (its 503) is then not taken
// from the viewers' workerd. BENCH_LOCATIONS=1 runs them as before: on this thread, through the
// viewers' edge, at the stack's priority.

import { execFileSync } from "node:child_process";
import { copyFile, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { ROOT } from "../infra/root";
import { ADMISSION_DEFAULTS } from "../shared/admission-config";
import { startFlood, startLoadStack } from "./crawlers-elsewhere";
import { edgeMetric, loopLagSampler, median, p99, progress, rssSampler, sleep, viewers, viewerTiles, type Flood, type Phase } from "./load";

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

async function runMode(mode: "advanced" | "basic", dir: string) {
  const stack = await startLoadStack({
    decoders: 2,
    decoderEnv: { TESSERA_DATA_DIR: dir, TESSERA_DECODER_CAPACITY: String(DECODER_CAPACITY) },
    vars: { ADMISSION_MODE: mode, MEMORY_LIMIT: String(MEMORY_LIMIT), TILES_THREAD_RATIO },
  });
  const rss = rssSampler(stack);
  const lag = loopLagSampler(stack);
  try {
    const alone: Phase = { latencies: [], errors: 0 };
    const flooded: Phase = { latencies: [], errors: 0 };
    const flood: Flood = { ok: 0, shed503: 0, refused: 0, failed: 0, other: 0 };
    // Alone and flooded windows alternate, each on a fresh copy of the image, so a change in the
    // machine's background load over the run weighs on both sides alike.
    for (let round = 0; round < ROUNDS; round++) {
      const [aloneId, floodId] = [`alone-${round}`, `flood-${round}`];
      for (const id of [aloneId, floodId, `huge-${floodId}`]) {
        await (await fetch(`${stack.url}/iiif/3/${id}/info.json`)).arrayBuffer(); // a viewer opens info.json first
      }
      progress(`${mode} round ${round + 1}/${ROUNDS}: viewers alone`);
      merge(alone, await viewers(stack, viewerTiles(aloneId, BIG), { viewers: VIEWERS, seconds: VIEWER_SECONDS }));
      progress(`${mode} round ${round + 1}/${ROUNDS}: viewers under the crawler flood`);
      const crawler = await startFlood(stack, { module: new URL("./flood-urls.ts", import.meta.url).href, name: "fullUrls", arg: floodId }, CRAWLERS);
      await sleep(2000); // let the flood build up
      merge(flooded, await viewers(stack, viewerTiles(floodId, BIG), { viewers: VIEWERS, seconds: VIEWER_SECONDS }));
      const answered = await crawler.stop();
      for (const k of Object.keys(flood) as (keyof Flood)[]) flood[k] += answered[k];
    }
    const result = {
      mode,
      aloneP99: p99(alone.latencies),
      floodP99: p99(flooded.latencies),
      tiles: [alone.latencies.length, flooded.latencies.length],
      tileErrors: alone.errors + flooded.errors,
      ...flood,
      rssPeak: rss.max(),
      loopLagMax: lag.max(),
      fullShadowRejected: await edgeMetric(stack, "tessera_admission_full_shadow_rejected_total"),
      memoryShadowTooLarge: await edgeMetric(stack, "tessera_decode_memory_shadow_too_large_total"),
      leasesExpired: await edgeMetric(stack, "tessera_admission_leases_expired_total"),
      disagreements: await edgeMetric(stack, "tessera_admission_classifier_disagreement_total"),
    };
    console.log(
      `${mode}: ${result.tiles.join(" / ")} tiles; tile p99 alone ${result.aloneP99.toFixed(0)} ms, flooded ${result.floodP99.toFixed(0)} ms ` +
        `(medians ${median(alone.latencies).toFixed(0)} / ${median(flooded.latencies).toFixed(0)} ms); tile errors ${result.tileErrors}; crawler ok ${result.ok}, ` +
        `503 ${result.shed503}, 413 ${result.refused}, other ${result.other + result.failed}; decoder RSS peak ` +
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
        `full_503=${advanced.shed503} full_413=${advanced.refused} decoder_rss_peak_bytes=${advanced.rssPeak} ` +
        `memory_limit_bytes=${MEMORY_LIMIT} classifier_disagreements=${advanced.disagreements} ` +
        `decoder_loop_stall_max_ms=${(advanced.loopLagMax * 1000).toFixed(0)} ` +
        `basic_tile_p99_ratio=${(basic.floodP99 / basic.aloneP99).toFixed(2)}`,
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
