// What the load benches share (bench:flood, bench:hostile): viewers fetching distinct tiles and
// timing each, crawlers flooding costly URLs and counting how each was answered, and samplers of
// the decoders' resident memory, event-loop stalls and /health latency, all against a local
// stack (infra/local/stack.ts). Where the crawlers run is crawlers-elsewhere.ts.

import { readFile } from "node:fs/promises";
import type { Stack } from "../infra/local/stack";
import { histogram, longestSince, type Bucket } from "../test/support/metrics";

export interface Phase {
  latencies: number[];
  errors: number;
}

/** How a flood's requests were answered. */
export interface Flood {
  ok: number;
  shed503: number;
  /** Refused before any work: 400 (past a declared limit) or 413. */
  refused: number;
  /** 5xx other than a 503 with Retry-After: the service's failures. */
  failed: number;
  other: number;
}

export function p99(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.99) - 1)];
}

export const median = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];

export const progress = (what: string) => process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${what}\n`);

export const sleep = (ms: number, signal: AbortSignal = new AbortController().signal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => (clearTimeout(timer), resolve()), { once: true });
  });

/** Distinct 256² viewer tiles of the `side`² image `id`: full resolution and two overviews, scattered. */
export function viewerTiles(id: string, side: number): string[] {
  const paths: string[] = [];
  for (const [step, out] of [[256, "max"], [512, "256,256"], [1024, "256,256"]] as const) {
    const across = Math.floor(side / step);
    for (let i = 0; i < across * across; i++) paths.push(`/iiif/3/${id}/${(i % across) * step},${Math.floor(i / across) * step},${step},${step}/${out}/0/default.jpg`);
  }
  // A fixed shuffle (Knuth's multiplicative hash) so viewers do not walk the image row by row.
  return paths.map((p, i) => [(i * 2654435761) % 2 ** 32, p] as const).sort((a, b) => a[0] - b[0]).map(([, p]) => p);
}

/** `viewers` clients fetch the distinct `tiles` until the list or `seconds` runs out. */
export async function viewers(stack: Stack, tiles: string[], options: { viewers: number; seconds: number }): Promise<Phase> {
  const queue = [...tiles];
  const phase: Phase = { latencies: [], errors: 0 };
  const end = Date.now() + options.seconds * 1000;
  await Promise.all(
    Array.from({ length: options.viewers }, async () => {
      for (let p = queue.shift(); p && Date.now() < end; p = queue.shift()) {
        const started = performance.now();
        const res = await fetch(stack.url + p);
        await res.arrayBuffer();
        if (res.status === 200) phase.latencies.push(performance.now() - started);
        else phase.errors++;
      }
    }),
  );
  return phase;
}

/**
 * A flood's URLs, named so that a crawlers' thread can build them itself: `name`, exported by
 * `module` (a file URL), called with `arg`, gives the function of i that is the i-th URL.
 */
export interface CrawlerUrls {
  module: string;
  name: string;
  arg: string;
}

export async function crawlerUrls(urls: CrawlerUrls): Promise<(i: number) => string> {
  const make = (await import(urls.module))[urls.name] as (arg: string) => (i: number) => string;
  return make(urls.arg);
}

/**
 * `crawlers` clients each fetch `next(i)` for i = 0, 1, … from the edge at `base` until `stop`
 * aborts. A crawler waits the Retry-After of a 503 (the contract a 503 states), and goes straight
 * on after a refusal.
 */
export function crawl(base: string, next: (i: number) => string, crawlers: number, stop: AbortSignal): { flood: Flood; done: Promise<void> } {
  const flood: Flood = { ok: 0, shed503: 0, refused: 0, failed: 0, other: 0 };
  let k = 0;
  const loop = async () => {
    while (!stop.aborted) {
      try {
        const res = await fetch(base + next(k++), { signal: stop });
        await discard(res);
        const retryAfter = res.headers.get("retry-after");
        if (res.status === 200) flood.ok++;
        else if (res.status === 503 && retryAfter !== null) flood.shed503++;
        else if (res.status === 400 || res.status === 413) flood.refused++;
        else if (res.status >= 500) flood.failed++;
        else flood.other++;
        if (res.status === 503) await sleep(Number(retryAfter ?? 1) * 1000, stop);
      } catch {
        // aborted at the end of the phase
      }
    }
  };
  return { flood, done: Promise.all(Array.from({ length: crawlers }, loop)).then(() => {}) };
}

/**
 * Reads a body to its end and drops it chunk by chunk. A crawler collecting a 30 MB answer whole
 * (arrayBuffer) cost this process more CPU than the decoders spent on it, on the cores the stack
 * shares: the client must not be what slows the viewers.
 */
async function discard(res: Response): Promise<void> {
  if (!res.body) return;
  for await (const _ of res.body);
}

/** A value sampled every `ms` from `read`, keeping the largest; `stop` ends the sampling. */
function sampler(ms: number, read: () => Promise<number>): { max(): number; reset(): void; stop(): void } {
  let max = 0;
  const timer = setInterval(() => void read().then((v) => (max = Math.max(max, v)), () => {}), ms);
  return { max: () => max, reset: () => (max = 0), stop: () => clearInterval(timer) };
}

/** The decoders' summed resident memory now. */
export async function decodersRss(stack: Stack): Promise<number> {
  let sum = 0;
  for (const d of stack.decoders) {
    const status = await readFile(`/proc/${d.process.pid}/status`, "utf8").catch(() => "");
    sum += Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
  }
  return sum;
}

/** Peak of the decoders' summed resident memory, sampled every 20 ms. */
export const rssSampler = (stack: Stack) => sampler(20, () => decodersRss(stack));

/** Decoders inherit the environment: with TESSERA_METRICS_TOKEN in it, their /metrics asks for it. */
const METRICS_AUTHORIZATION: Record<string, string> = process.env.TESSERA_METRICS_TOKEN ? { authorization: `Bearer ${process.env.TESSERA_METRICS_TOKEN}` } : {};

/**
 * The longest event-loop stall of any decoder since the sampler started, in seconds: their delay
 * histograms read every 500 ms, each time the longest delay since the last reading, as closely as
 * the buckets tell (their upper bound). A stall is what every request on that decoder waits out.
 */
export function loopLagSampler(stack: Stack) {
  const last = new Map<string, Bucket[]>();
  const read = async () => {
    let max = 0;
    for (const { url } of stack.decoders) {
      const text = await fetch(`${url}/metrics`, { headers: METRICS_AUTHORIZATION }).then((r) => r.text()).catch(() => "");
      const now = histogram(text, "tessera_decoder_eventloop_delay_seconds");
      if (now.length === 0) continue; // a failed scrape: the next one covers the time
      const before = last.get(url);
      if (before) max = Math.max(max, longestSince(before, now));
      last.set(url, now);
    }
    return max;
  };
  void read(); // where each decoder's stalls are counted from
  return sampler(500, read);
}

/** The slowest `/health` of any decoder, asked every 50 ms, in ms: what a probe or a heartbeat waits. */
export const healthSampler = (stack: Stack) =>
  sampler(50, async () => {
    const times = await Promise.all(
      stack.decoders.map(async (d) => {
        const started = performance.now();
        await fetch(`${d.url}/health`).then((r) => r.arrayBuffer());
        return performance.now() - started;
      }),
    );
    return Math.max(...times);
  });

/** One sample of the edge's /metrics (unlabelled). */
export async function edgeMetric(stack: Stack, name: string): Promise<number> {
  const text = await (await fetch(`${stack.url}/metrics`)).text();
  return Number(new RegExp(`^${name} (\\S+)$`, "m").exec(text)?.[1]);
}
