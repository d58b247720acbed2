// `npm run bench:cost`: what a million requests cost on Cloudflare, from CPU measured here by tier
// and Cloudflare's published prices, beside the same traffic on the operator's own decoders.
//
// The local stack (`npm start`'s: the edge Worker and the admission DO in one workerd through
// Miniflare, one decoder process) serves the bundled test pattern. Three kinds of request, each
// a list of distinct URLs run after a warm-up:
//   hit    a 256² tile the edge has cached (the same list asked a second time)
//   miss   a 256² region never asked before (a canonical form of its own): the edge, the DO's
//          admission and a decode
//   full   the whole 1000² image at a rotation never asked before: a decode of every block
// Per request: workerd's CPU (utime + stime from /proc: the Worker, the DO and Miniflare's own
// emulation of the Cache API, which on Cloudflare is not billed, so an upper bound of the Worker's
// and the DO's billed CPU), the decoder's CPU, and the miss's wall time (how long the DO is active
// waiting for the decoder, which Durable Objects bill as duration).
//
// Prices (USD), as published on Cloudflare's pages, read 2026-12-07:
//   Workers Paid (https://developers.cloudflare.com/workers/platform/pricing/): $0.30 a million
//     requests, $0.02 a million CPU milliseconds, beyond the included 10 M and 30 M a month
//   Durable Objects (https://developers.cloudflare.com/durable-objects/platform/pricing/): $0.15 a
//     million requests, $12.50 a million GB-s of duration (an object is billed at 128 MB)
//   Containers (https://developers.cloudflare.com/containers/pricing/): $0.000020 a vCPU-second
//     of active CPU, $0.0000025 a GiB-second of memory while the instance runs
//   R2 (https://developers.cloudflare.com/r2/pricing/): $0.36 a million Class B reads (GetObject),
//     no egress charge
// Included monthly allowances are left out: the figures are marginal costs at volume. The
// operator's own decoder is priced at BENCH_VM_VCPU_HOUR dollars a vCPU-hour (default 0.04, an
// assumption, not a quote: give your own), fully used, reading the same store. The decoder's CPU
// per miss is measured with its block cache warm (the pattern has 16 blocks): a cold miss also
// inflates its blocks.
//
//   npm run bench:cost    (BENCH_REQUESTS per kind, default 200; BENCH_HIT_RATIO, default 0.9)
import { readFileSync } from "node:fs";
import { startStack } from "../infra/local/stack";
import { workerdPid } from "../test/support/workerd-process";

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 200);
const HIT_RATIO = Number(process.env.BENCH_HIT_RATIO ?? 0.9);
const VM_VCPU_HOUR = Number(process.env.BENCH_VM_VCPU_HOUR ?? 0.04);
/** The decoder's instance as a Container: standard-2's memory (6 GiB) for its one vCPU. */
const CONTAINER_GIB = 6;
/** Block reads a miss makes of the store (a 256² region of the 256² blocks: one to four; two, say). */
const STORE_READS_PER_MISS = 2;
/** …and a full image of the 1000² pattern, every full-level block (4 × 4), read cold. */
const FULL_BLOCKS = 16;

const PRICES = {
  workerRequest: 0.3 / 1e6,
  workerCpuMs: 0.02 / 1e6,
  doRequest: 0.15 / 1e6,
  doGbSecond: 12.5 / 1e6,
  doGb: 0.128,
  containerVcpuSecond: 0.00002,
  containerGibSecond: 0.0000025,
  r2ClassB: 0.36 / 1e6,
};

const log = (msg: string) => process.stdout.write(`${msg}\n`);

/** A process's CPU time so far, in milliseconds (utime + stime, at the kernel's 100 ticks a second). */
function cpuMsOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

interface Measured {
  workerdMs: number;
  decoderMs: number;
  wallMs: number;
}

/** Runs `paths` one after another; CPU of each process and wall time, per request. */
async function measure(edge: string, paths: string[], pids: { workerd: number; decoder: number }): Promise<Measured> {
  const [w0, d0, t0] = [cpuMsOf(pids.workerd), cpuMsOf(pids.decoder), performance.now()];
  for (const path of paths) {
    const res = await fetch(`${edge}${path}`);
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${await res.text()}`);
    await res.arrayBuffer();
  }
  const n = paths.length;
  return { workerdMs: (cpuMsOf(pids.workerd) - w0) / n, decoderMs: (cpuMsOf(pids.decoder) - d0) / n, wallMs: (performance.now() - t0) / n };
}

/** Dollars a million requests of one kind: Workers, the DO, the decoder as a Container and R2; and the decoder on one's own VM. */
function costs(kind: "hit" | "miss" | "full", m: Measured) {
  const worker = PRICES.workerRequest + m.workerdMs * PRICES.workerCpuMs;
  if (kind === "hit") return { worker: worker * 1e6, durableObject: 0, container: 0, r2: 0, ownDecoder: 0 };
  const durableObject = PRICES.doRequest + (m.wallMs / 1000) * PRICES.doGb * PRICES.doGbSecond;
  const decoderSeconds = m.decoderMs / 1000;
  const container = decoderSeconds * (PRICES.containerVcpuSecond + CONTAINER_GIB * PRICES.containerGibSecond);
  const r2 = (kind === "full" ? FULL_BLOCKS : STORE_READS_PER_MISS) * PRICES.r2ClassB;
  const ownDecoder = (decoderSeconds / 3600) * VM_VCPU_HOUR;
  return { worker: worker * 1e6, durableObject: durableObject * 1e6, container: container * 1e6, r2: r2 * 1e6, ownDecoder: ownDecoder * 1e6 };
}

async function main(): Promise<void> {
  const stack = await startStack({ port: 0, decoderPort: 0 });
  try {
    const pids = { workerd: workerdPid(stack.url), decoder: stack.decoders[0].process.pid! };
    const iiif = "/iiif/3/test-pattern";
    const tiles = Array.from({ length: REQUESTS }, (_, i) => `${iiif}/${(i * 3) % 744},${(i * 7) % 744},256,256/256,/0/default.jpg`);
    const warm = Array.from({ length: 20 }, (_, i) => `${iiif}/${i},${i},200,200/200,/0/default.jpg`);
    await measure(stack.url, warm, pids);
    const miss = await measure(stack.url, tiles, pids);
    const hit = await measure(stack.url, tiles, pids);
    const fulls = Array.from({ length: Math.max(10, REQUESTS / 10) }, (_, i) => `${iiif}/full/max/${(i * 7) % 360}/default.jpg`);
    const full = await measure(stack.url, fulls, pids);
    log(`CPU and wall time per request (workerd: the Worker, the DO and Miniflare's emulation; ${REQUESTS} of each, ${fulls.length} fulls)`);
    log("| kind | workerd CPU ms | decoder CPU ms | wall ms |");
    log("|---|---|---|---|");
    for (const [kind, m] of [["hit", hit], ["miss", miss], ["full", full]] as const) log(`| ${kind} | ${m.workerdMs.toFixed(2)} | ${m.decoderMs.toFixed(2)} | ${m.wallMs.toFixed(1)} |`);
    log("");
    log("Dollars a million requests (marginal, beyond the plans' allowances)");
    log("| kind | Workers | Durable Object | decoder as Container | R2 reads | all on Cloudflare | decoder on own VM (same Workers, DO, R2) |");
    log("|---|---|---|---|---|---|---|");
    const rows = { hit: costs("hit", hit), miss: costs("miss", miss), full: costs("full", full) };
    const total = (c: ReturnType<typeof costs>) => c.worker + c.durableObject + c.container + c.r2;
    const own = (c: ReturnType<typeof costs>) => c.worker + c.durableObject + c.r2 + c.ownDecoder;
    for (const [kind, c] of Object.entries(rows)) {
      log(`| ${kind} | ${c.worker.toFixed(3)} | ${c.durableObject.toFixed(3)} | ${c.container.toFixed(3)} | ${c.r2.toFixed(3)} | ${total(c).toFixed(3)} | ${own(c).toFixed(3)} |`);
    }
    const mixed = (f: (c: ReturnType<typeof costs>) => number) => HIT_RATIO * f(rows.hit) + (1 - HIT_RATIO) * f(rows.miss);
    log(`viewer traffic at a hit ratio of ${HIT_RATIO}: $${mixed(total).toFixed(3)} a million requests on Cloudflare, $${mixed(own).toFixed(3)} with the decoder on one's own VM at $${VM_VCPU_HOUR} a vCPU-hour`);
    log(`cost_per_million_mixed=${mixed(total).toFixed(3)} cost_per_million_mixed_own_decoder=${mixed(own).toFixed(3)} hit_ratio=${HIT_RATIO}`);
  } finally {
    await stack.stop();
  }
}

await main();
