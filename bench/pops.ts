// npm run bench:pops — simulated edge locations (one workerd, a Cache API namespace per
// location): decodes per distinct tile, with and without the upper tier.
//
// The local stack (infra/local/stack.ts) with one decoder over the bundled UTM sample, and
// TEST_LOCATION_CACHES set: each request's cf.colo names the cache namespace ("pop-<colo>") the
// edge keeps decoded tiles in, standing for that location's Cache API (the metadata cache is
// shared: it is not what this measures). N locations each run one viewer session: SESSION tile
// requests drawn from a Zipf law (exponent ZIPF_S) over the sample's tiles at zooms 10–14,
// ranked by zoom, then nearness to the map's centre (a viewer opens the whole map, then zooms in
// where most do), asked 6 at a time as a browser does, CONCURRENT sessions at once. Each N runs
// on a fresh copy of the source under its own id, so every location and the tier start cold.
// The same runs go on a second stack with UPPER_TIER=false. Printed per N: distinct tiles asked
// that hold pixels (answered through the edge's decoded cache: the edge answers a tile outside
// the map without a decode), edge misses (the edge→decoder requests: each goes to the admission DO), upper-tier hits, the
// decodes the decoder ran (its own request count), and decodes per distinct tile.
//
//   npm run bench:pops    (TESSERA_BENCH_SESSION, TESSERA_BENCH_CONCURRENT)
import { copyFile, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { ROOT } from "../infra/root";
import { startStack, type Stack } from "../infra/local/stack";
import { decoderTiles } from "./decoder-requests";

const SESSION = Number(process.env.TESSERA_BENCH_SESSION ?? 40);
const CONCURRENT = Number(process.env.TESSERA_BENCH_CONCURRENT ?? 8);
const ZIPF_S = 1;
const LOCATIONS = [1, 10, 100];
/** The sample's extent (west, south, east, north), in degrees. */
const BOUNDS = [15, 47.66, 15.28, 47.86];
const ZOOMS = [10, 11, 12, 13, 14];

/** Web-map tiles over the sample, most popular first. */
function rankedTiles(): string[] {
  const [west, south, east, north] = BOUNDS;
  const column = (lon: number, z: number) => Math.floor(((lon + 180) / 360) * 2 ** z);
  const row = (lat: number, z: number) => {
    const phi = (lat * Math.PI) / 180;
    return Math.floor(((1 - Math.log(Math.tan(phi) + 1 / Math.cos(phi)) / Math.PI) / 2) * 2 ** z);
  };
  const tiles: { path: string; z: number; off: number }[] = [];
  for (const z of ZOOMS) {
    const [x0, x1, y0, y1] = [column(west, z), column(east, z), row(north, z), row(south, z)];
    const [cx, cy] = [(x0 + x1) / 2, (y0 + y1) / 2];
    for (let x = x0; x <= x1; x++) for (let y = y0; y <= y1; y++) tiles.push({ path: `${z}/${x}/${y}.png`, z, off: Math.hypot(x - cx, y - cy) });
  }
  return tiles.sort((a, b) => a.z - b.z || a.off - b.off).map((t) => t.path);
}

/** A seeded generator (mulberry32): every run asks the same stream. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Draws from `items` with P(rank r) ∝ 1 / r^ZIPF_S. */
function zipf(items: string[], rand: () => number): () => string {
  const weights = items.map((_, r) => 1 / (r + 1) ** ZIPF_S);
  const total = weights.reduce((a, b) => a + b, 0);
  return () => {
    let u = rand() * total;
    for (let i = 0; i < items.length; i++) if ((u -= weights[i]) <= 0) return items[i];
    return items[items.length - 1];
  };
}

interface Run {
  /** Distinct tiles answered through the edge's decoded cache (a hit or a miss). */
  decoded: Set<string>;
  distinct: number;
  misses: number;
  tierHits: number;
  decodes: number;
  failed: number;
}

async function metric(stack: Stack, name: string): Promise<number> {
  const text = await (await fetch(`${stack.url}/metrics`)).text();
  return Number(new RegExp(`^${name} (\\d+)$`, "m").exec(text)?.[1] ?? 0);
}

/** One location's viewer session: its tiles asked 6 at a time, at the location `colo`. */
async function session(stack: Stack, id: string, colo: string, tiles: string[], run: Run): Promise<void> {
  for (let i = 0; i < tiles.length; i += 6) {
    await Promise.all(
      tiles.slice(i, i + 6).map(async (tile) => {
        const res = await stack.miniflare.dispatchFetch(`${stack.url}/tiles/${id}/WebMercatorQuad/${tile}`, { cf: { colo } });
        await res.arrayBuffer();
        if (res.status !== 200) run.failed++;
        const cache = res.headers.get("x-tessera-cache");
        if (cache) run.decoded.add(tile);
        if (cache === "miss") run.misses++;
      }),
    );
  }
}

/** N locations' sessions over a fresh copy of the sample. */
async function locations(stack: Stack, dir: string, id: string, n: number): Promise<Run> {
  await copyFile(path.join(ROOT, "samples/utm-quadrants.tif"), path.join(dir, `${id}.tif`));
  await (await fetch(`${stack.url}/tiles/${id}/WebMercatorQuad/tilejson.json`)).arrayBuffer(); // the metadata, shared
  const draw = zipf(rankedTiles(), random(n));
  const sessions = Array.from({ length: n }, () => Array.from({ length: SESSION }, draw));
  const run: Run = { decoded: new Set(), distinct: new Set(sessions.flat()).size, misses: 0, tierHits: 0, decodes: 0, failed: 0 };
  const [decodes, hits] = [await decoderTiles(stack), await metric(stack, "tessera_admission_upper_tier_hits_total")];
  let next = 0;
  const worker = async () => {
    while (next < n) {
      const i = next++;
      await session(stack, id, `${id}-${i}`, sessions[i], run);
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENT, n) }, worker));
  run.decodes = (await decoderTiles(stack)) - decodes;
  run.tierHits = (await metric(stack, "tessera_admission_upper_tier_hits_total")) - hits;
  return run;
}

const per = (run: Run) => (run.decodes / run.decoded.size).toFixed(3);

async function stackRuns(dir: string, label: string, vars: Record<string, string>): Promise<Map<number, Run>> {
  const stack = await startStack({ decoderEnv: { TESSERA_DATA_DIR: dir }, vars: { TEST_LOCATION_CACHES: "true", ...vars } });
  try {
    await locations(stack, dir, `${label}-warm-up`, 1); // the decoder's first decodes pay for its modules
    const runs = new Map<number, Run>();
    for (const n of LOCATIONS) {
      const run = await locations(stack, dir, `${label}-${n}`, n);
      runs.set(n, run);
      console.log(
        `${label}, ${n} simulated locations (cache namespaces pop-<colo> in one workerd): ${n * SESSION} tile requests, ` +
          `${run.distinct} distinct tiles (${run.decoded.size} with pixels), ${run.misses} edge→decoder requests (edge misses), ${run.tierHits} upper-tier hits, ` +
          `${run.decodes} decodes = ${per(run)} per distinct tile with pixels, ${run.failed} answers not 200`,
      );
    }
    return runs;
  } finally {
    await stack.stop();
  }
}

const dir = await mkdtemp(path.join(tmpdir(), "tessera-pops-"));
try {
  const started = performance.now();
  const tier = await stackRuns(dir, "tier", {});
  const none = await stackRuns(dir, "no-tier", { UPPER_TIER: "false" });
  console.log(
    LOCATIONS.map((n) => `pops_${n}_decodes_per_tile=${per(tier.get(n)!)} pops_${n}_decodes_per_tile_no_tier=${per(none.get(n)!)}`).join(" ") +
      ` seconds=${((performance.now() - started) / 1000).toFixed(0)}`,
  );
} finally {
  await rm(dir, { recursive: true, force: true });
}
