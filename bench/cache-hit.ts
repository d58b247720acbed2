// Cache-hit throughput of the Tessera edge against the floor the platform sets: a bare Worker
// whose only work per request is `caches.default.match`. Both run in workerd through Miniflare on
// loopback, hold the same tile bytes under the same paths, and are driven by the same client
// (undici, keep-alive, fixed concurrency) in alternating timed runs, so machine noise and drift
// fall on both alike. The ratio is the share of the floor's throughput the edge keeps on hits;
// cpu_ratio is the same share in workerd CPU per answer (the floor's over the edge's), which other
// load on the machine moves much less.
//
//   npm run bench:cache    (TESSERA_BENCH_SECONDS per run, _ROUNDS, _CONCURRENCY)
import { convertV4MiniflareOptions, Miniflare } from "miniflare";
import { Pool } from "undici";
import { unstable_getMiniflareWorkerOptions } from "wrangler";
import { ROOT } from "../infra/root";
import { startStack } from "../infra/local/stack";
import { workerdPid } from "../test/support/workerd-process";
import { cpuSeconds } from "./decode";

const SECONDS = Number(process.env.TESSERA_BENCH_SECONDS ?? 3);
const ROUNDS = Number(process.env.TESSERA_BENCH_ROUNDS ?? 6);
const CONCURRENCY = Number(process.env.TESSERA_BENCH_CONCURRENCY ?? 16);
const IMAGE = "test-pattern";

// A pull-through cache and nothing else: a miss (warm-up only) copies the edge's answer,
// so both servers hold identical bytes and headers under identical paths.
const BARE_WORKER = `
export default {
  async fetch(request, env, ctx) {
    const hit = await caches.default.match(request.url);
    if (hit) return hit;
    const origin = await fetch(env.ORIGIN + new URL(request.url).pathname);
    ctx.waitUntil(caches.default.put(request.url, origin.clone()));
    return origin;
  },
};`;

interface Target {
  name: string;
  pool: Pool;
  /** Its workerd process, whose CPU time is the target's. */
  pid: number;
  /** Whether an answer counts: a 200 that really came from the cache. */
  ok(status: number, headers: Record<string, string | string[] | undefined>): boolean;
}

/** The tile paths OpenSeadragon asks for at every level of the image's IIIF tile pyramid. */
async function tilePaths(edge: string): Promise<string[]> {
  const info = (await (await fetch(`${edge}/iiif/3/${IMAGE}/info.json`)).json()) as {
    width: number;
    height: number;
    tiles: { width: number; height: number; scaleFactors: number[] }[];
  };
  const { width: tw, height: th, scaleFactors } = info.tiles[0];
  const paths: string[] = [];
  for (const sf of scaleFactors) {
    for (let y = 0; y < info.height; y += th * sf) {
      for (let x = 0; x < info.width; x += tw * sf) {
        const w = Math.min(tw * sf, info.width - x);
        const h = Math.min(th * sf, info.height - y);
        paths.push(`/iiif/3/${IMAGE}/${x},${y},${w},${h}/${Math.ceil(w / sf)},${Math.ceil(h / sf)}/0/default.jpg`);
      }
    }
  }
  return paths;
}

/** Requests every path until each answer is a cache hit (the cache write runs after the answer). */
async function warm(target: Target, paths: string[]): Promise<void> {
  for (const path of paths) {
    for (let attempt = 0; ; attempt++) {
      const res = await target.pool.request({ path, method: "GET" });
      await res.body.arrayBuffer();
      if (res.statusCode !== 200) throw new Error(`${target.name} ${path}: ${res.statusCode}`);
      if (target.ok(res.statusCode, res.headers)) break;
      if (attempt === 20) throw new Error(`${target.name} ${path}: still not a cache hit`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

/**
 * CONCURRENCY loops over the paths for SECONDS; returns answers per second and workerd's CPU
 * microseconds per answer. Any bad answer aborts.
 */
async function run(target: Target, paths: string[]): Promise<{ rate: number; cpuUs: number }> {
  const cpuBefore = cpuSeconds(target.pid);
  const started = performance.now();
  const end = started + SECONDS * 1000;
  let done = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async (_, worker) => {
      for (let i = worker; performance.now() < end; i += CONCURRENCY) {
        const path = paths[i % paths.length];
        const res = await target.pool.request({ path, method: "GET" });
        await res.body.arrayBuffer();
        if (!target.ok(res.statusCode, res.headers)) {
          throw new Error(`${target.name} ${path}: ${res.statusCode}, not a cache hit`);
        }
        done++;
      }
    }),
  );
  return { rate: done / ((performance.now() - started) / 1000), cpuUs: ((cpuSeconds(target.pid) - cpuBefore) * 1e6) / done };
}

async function main() {
  const stack = await startStack();
  const { workerOptions } = unstable_getMiniflareWorkerOptions(`${ROOT}wrangler.toml`);
  const bare = new Miniflare(
    convertV4MiniflareOptions({
      name: "bare-match",
      modules: true,
      script: BARE_WORKER,
      compatibilityDate: workerOptions.compatibilityDate as string,
      compatibilityFlags: workerOptions.compatibilityFlags as string[],
      bindings: { ORIGIN: stack.url },
      host: "127.0.0.1",
      port: 0,
    }),
  );
  const pools: Pool[] = [];
  try {
    const bareUrl = (await bare.ready).toString().replace(/\/$/, "");
    const pool = (url: string) => {
      const p = new Pool(url, { connections: CONCURRENCY, pipelining: 1 });
      pools.push(p);
      return p;
    };
    const targets: Target[] = [
      { name: "tessera", pool: pool(stack.url), pid: workerdPid(stack.url), ok: (s, h) => s === 200 && h["x-tessera-cache"] === "hit" },
      // Miniflare's Cache API marks what it matched; a silent pull-through would not count.
      { name: "bare", pool: pool(bareUrl), pid: workerdPid(bareUrl), ok: (s, h) => s === 200 && h["cf-cache-status"] === "HIT" },
    ];
    const paths = await tilePaths(stack.url);
    for (const t of targets) await warm(t, paths);
    // One short discarded pass each: JIT, connection set-up, workerd's first-use costs.
    for (const t of targets) await run(t, paths);
    console.log(`${paths.length} tile paths, ${CONCURRENCY} concurrent, ${ROUNDS} rounds of ${SECONDS} s each`);

    const runs: Record<string, { rate: number; cpuUs: number }[]> = { tessera: [], bare: [] };
    for (let round = 0; round < ROUNDS; round++) {
      // ABBA order: whichever goes first in a round goes second in the next.
      const order = round % 2 === 0 ? targets : [...targets].reverse();
      for (const t of order) runs[t.name].push(await run(t, paths));
      const [x, y] = [runs.tessera[round], runs.bare[round]];
      console.log(
        `round ${round + 1}: tessera ${x.rate.toFixed(0)}/s (${x.cpuUs.toFixed(0)} µs CPU each), bare ${y.rate.toFixed(0)}/s (${y.cpuUs.toFixed(0)} µs), ratio ${(x.rate / y.rate).toFixed(3)}`,
      );
    }
    // Medians: a round that another process on the machine disturbed does not drag the result.
    // CPU per answer (each workerd's own) moves far less with other load than answers per second.
    const tessera = median(runs.tessera.map((r) => r.rate));
    const bareRate = median(runs.bare.map((r) => r.rate));
    const [tesseraCpu, bareCpu] = [median(runs.tessera.map((r) => r.cpuUs)), median(runs.bare.map((r) => r.cpuUs))];
    console.log(
      `tessera_hits_per_s=${tessera.toFixed(0)} bare_match_per_s=${bareRate.toFixed(0)} ratio=${(tessera / bareRate).toFixed(3)} tessera_cpu_us_per_hit=${tesseraCpu.toFixed(0)} bare_cpu_us_per_hit=${bareCpu.toFixed(0)} cpu_ratio=${(bareCpu / tesseraCpu).toFixed(3)}`,
    );
  } finally {
    await Promise.all(pools.map((p) => p.close()));
    await bare.dispose();
    await stack.stop();
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exitCode = 1;
});
