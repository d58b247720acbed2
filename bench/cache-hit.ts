// Cache-hit throughput of the Tessera edge against the floor the platform sets: a bare Worker
// whose only work per request is `caches.default.match`. Both run in workerd through Miniflare on
// loopback, hold the same tile bytes under the same paths, and are driven by the same client
// (undici, keep-alive, fixed concurrency) in alternating timed runs, so machine noise and drift
// fall on both alike. The ratio is the share of the floor's throughput the edge keeps on hits;
// cpu_ratio is the same share in workerd CPU per answer (the floor's over the edge's), which other
// load on the machine moves much less.
//
// The same run also times authorized hits on a restricted source (a copy of the image, restricted
// by its catalog entry, the session cookie on every request) against the open hits: the access
// check's cost is restricted_ratio (restricted hits per second over open ones; the target is
// ≥ 0.9, the check costing at most 10 %) and restricted_cpu_ratio (the open hit's CPU over the
// restricted one's).
//
//   npm run bench:cache    (TESSERA_BENCH_SECONDS per run, _ROUNDS, _CONCURRENCY)
import { randomBytes } from "node:crypto";
import { copyFile, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { SignJWT } from "jose";
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
/** The same image, restricted to logged-in users by its catalog entry. */
const RESTRICTED = "restricted";
const AUTH_SECRET = randomBytes(32).toString("hex");
const AUTH_LOGIN_KEY = randomBytes(32).toString("hex");

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
  paths: string[];
  /** Sent with every request (the restricted target's session cookie). */
  headers?: Record<string, string>;
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

/**
 * A session cookie for every source, as a browser gets one: the access service's state cookie,
 * then the login's assertion (signed here with AUTH_LOGIN_KEY, as the operator's login signs it)
 * posted to the login return.
 */
async function sessionCookie(edge: string): Promise<string> {
  const start = await fetch(`${edge}/auth/active?origin=${encodeURIComponent("https://viewer.example")}`, { redirect: "manual" });
  const state = new URL(start.headers.get("location")!).searchParams.get("state")!;
  const assertion = await new SignJWT({ sub: "bench", see: ["*"], state })
    .setProtectedHeader({ alg: "HS256" })
    .setAudience("tessera-login")
    .setExpirationTime("5m")
    .sign(new TextEncoder().encode(AUTH_LOGIN_KEY));
  const back = await fetch(`${edge}/auth/active/return`, {
    method: "POST",
    body: new URLSearchParams({ assertion }),
    headers: { cookie: cookiePair(start, "__Host-tessera-login") },
  });
  if (back.status !== 200) throw new Error(`login return: ${back.status}`);
  return cookiePair(back, "__Host-tessera-session");
}

/** `name=value` of a Set-Cookie in `res`. */
function cookiePair(res: Response, name: string): string {
  const line = res.headers.getSetCookie().find((c) => c.startsWith(`${name}=`));
  if (!line) throw new Error(`no ${name} cookie`);
  return line.split(";")[0];
}

/** Requests every path until each answer is a cache hit (the cache write runs after the answer). */
async function warm(target: Target): Promise<void> {
  for (const path of target.paths) {
    for (let attempt = 0; ; attempt++) {
      const res = await target.pool.request({ path, method: "GET", headers: target.headers });
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
async function run(target: Target): Promise<{ rate: number; cpuUs: number }> {
  const { paths } = target;
  const cpuBefore = cpuSeconds(target.pid);
  const started = performance.now();
  const end = started + SECONDS * 1000;
  let done = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async (_, worker) => {
      for (let i = worker; performance.now() < end; i += CONCURRENCY) {
        const path = paths[i % paths.length];
        const res = await target.pool.request({ path, method: "GET", headers: target.headers });
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
  // The image and its restricted copy, in a data directory of the bench's own.
  const dataDir = await mkdtemp(path.join(tmpdir(), "tessera-bench-cache-"));
  await copyFile(`${ROOT}samples/${IMAGE}.tif`, path.join(dataDir, `${IMAGE}.tif`));
  await copyFile(`${ROOT}samples/${IMAGE}.tif`, path.join(dataDir, `${RESTRICTED}.tif`));
  await writeFile(path.join(dataDir, `${RESTRICTED}.tessera.json`), JSON.stringify({ access: { profile: "active" } }));
  const stack = await startStack({
    decoderEnv: { TESSERA_SOURCE: "local", TESSERA_DATA_DIR: dataDir },
    // The login is never reached: the bench signs its assertion itself.
    vars: { AUTH_SECRET, AUTH_LOGIN_URL: "https://login.invalid/", AUTH_LOGIN_KEY },
  });
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
    const paths = await tilePaths(stack.url);
    const edgeHit = (s: number, h: Record<string, string | string[] | undefined>) => s === 200 && h["x-tessera-cache"] === "hit";
    const edgePid = workerdPid(stack.url);
    const targets: Target[] = [
      { name: "tessera", pool: pool(stack.url), paths, pid: edgePid, ok: edgeHit },
      // Miniflare's Cache API marks what it matched; a silent pull-through would not count.
      { name: "bare", pool: pool(bareUrl), paths, pid: workerdPid(bareUrl), ok: (s, h) => s === 200 && h["cf-cache-status"] === "HIT" },
      // The same tiles of the restricted copy, each request with the session cookie, on the same edge.
      {
        name: "restricted",
        pool: pool(stack.url),
        paths: paths.map((p) => p.replace(`/iiif/3/${IMAGE}/`, `/iiif/3/${RESTRICTED}/`)),
        headers: { cookie: await sessionCookie(stack.url) },
        pid: edgePid,
        ok: edgeHit,
      },
    ];
    for (const t of targets) await warm(t);
    await sameBytes(targets[0], targets[2]);
    // One short discarded pass each: JIT, connection set-up, workerd's first-use costs.
    for (const t of targets) await run(t);
    console.log(`${paths.length} tile paths, ${CONCURRENCY} concurrent, ${ROUNDS} rounds of ${SECONDS} s each`);

    const runs: Record<string, { rate: number; cpuUs: number }[]> = { tessera: [], bare: [], restricted: [] };
    for (let round = 0; round < ROUNDS; round++) {
      // Each target first, middle and last in turn, and the order reversed every other round.
      const turned = [...targets.slice(round % targets.length), ...targets.slice(0, round % targets.length)];
      const order = round % 2 === 0 ? turned : turned.reverse();
      for (const t of order) runs[t.name].push(await run(t));
      const [x, y, z] = [runs.tessera[round], runs.bare[round], runs.restricted[round]];
      console.log(
        `round ${round + 1}: tessera ${x.rate.toFixed(0)}/s (${x.cpuUs.toFixed(0)} µs CPU each), bare ${y.rate.toFixed(0)}/s (${y.cpuUs.toFixed(0)} µs), ratio ${(x.rate / y.rate).toFixed(3)}; restricted ${z.rate.toFixed(0)}/s (${z.cpuUs.toFixed(0)} µs), ratio to open ${(z.rate / x.rate).toFixed(3)}`,
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
    // Per round, then the median: the restricted and open runs of a round are neighbours in time.
    const restrictedRatios = runs.restricted.map((r, i) => r.rate / runs.tessera[i].rate);
    const restrictedCpuRatios = runs.restricted.map((r, i) => runs.tessera[i].cpuUs / r.cpuUs);
    const restricted = median(runs.restricted.map((r) => r.rate));
    const restrictedCpu = median(runs.restricted.map((r) => r.cpuUs));
    console.log(
      `restricted_hits_per_s=${restricted.toFixed(0)} open_hits_per_s=${tessera.toFixed(0)} restricted_ratio=${median(restrictedRatios).toFixed(3)} restricted_cpu_us_per_hit=${restrictedCpu.toFixed(0)} open_cpu_us_per_hit=${tesseraCpu.toFixed(0)} restricted_cpu_ratio=${median(restrictedCpuRatios).toFixed(3)}`,
    );
  } finally {
    await Promise.all(pools.map((p) => p.close()));
    await bare.dispose();
    await stack.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

/** The restricted copy's tiles are the open image's, byte for byte: the two targets do the same work but the check. */
async function sameBytes(open: Target, restricted: Target): Promise<void> {
  for (const [i, path] of open.paths.entries()) {
    const [a, b] = await Promise.all([
      open.pool.request({ path, method: "GET" }).then((r) => r.body.arrayBuffer()),
      restricted.pool.request({ path: restricted.paths[i], method: "GET", headers: restricted.headers }).then((r) => r.body.arrayBuffer()),
    ]);
    if (!Buffer.from(a).equals(Buffer.from(b))) throw new Error(`${restricted.paths[i]}: not the bytes of ${path}`);
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
