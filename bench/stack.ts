// `npm run bench:stack`: the whole local stack (the edge Worker and the admission DO in workerd
// through Miniflare, as `npm start` runs them, and one decoder) against iipsrv behind lighttpd,
// over bench:decode's 8192² JPEG COG, and where each tier's CPU goes per miss.
//
// Every server runs on the same core (BENCH_SERVER_CPUS, default 0: workerd, the decoder,
// iipsrv, lighttpd), this client on the other; 8 requests in flight. Both are sent the same list
// of random distinct native 256² tiles, IIIF URLs each, cut into ROUNDS chunks run alternately,
// after an untimed warm-up on bench:decode's warm copy. The stack reads a fresh copy of the file
// (its own id), so every one of its tiles is a miss at the edge and a first decode at the decoder.
//
// Per-tier CPU, from /proc/<pid>/stat (utime + stime) over each timed window:
//   decoder   the decoder process ÷ tiles, in the stack; and again with the same tiles of another
//             copy sent to it directly, signed, as bench:decode does: the difference is what the
//             stack makes it do beyond decoding.
//   workerd   the workerd process (the Worker, the DO, and Miniflare's own entry Worker and Cache
//             API service) ÷ misses.
//   DO        workerd's clock only moves on I/O, so the DO cannot time itself. A probe Worker in
//             the same workerd sends each request of a third copy straight to the DO, as the edge
//             does on a miss, and streams the answer back; interleaved with it, the probe answers
//             as many requests with a body of the same size without the DO. The DO's share is the
//             difference of workerd's CPU between the two, per request: the DO's own code, its
//             stub call and its fetch to the decoder. A third phase has the probe fetch the same
//             tiles from the decoder itself, signed ahead by this client: the fetch alone, so the
//             DO's share splits into its call to the decoder and the rest (the stub call in and
//             out, admission, signing, relaying the answer).
//   Cache API the probe making one Cache API lookup (a miss) and one store of a body that size,
//             minus the probe alone: Miniflare's local Cache API service, which on Cloudflare is
//             not the Worker's CPU; counted once for the edge's cache and once more for each
//             lookup in the DO's upper tier (its metrics say how many a miss made).
//   Worker    what is left of workerd's per miss: the edge's own code.
//
//   npm run bench:stack    (BENCH_TILES tiles per list, default all 1024; BENCH_ROUNDS, default 4)
//
// Needs what bench:decode needs (gdal-bin, iipimage-server, lighttpd). Ports 9290–9294.

import { execFileSync } from "node:child_process";
import { copyFileSync, rmSync } from "node:fs";
import path from "node:path";
import { DECODER, signedHeaders } from "../shared/protocol";
import { startStack } from "../infra/local/stack";
import { workerdPid } from "../test/support/workerd-process";
import { DIR, drive, FILE, get, grid, ID, makeFixture, shuffled, startIipsrv, WARM_ID, type Server, type Tile } from "./decode";
import { interleaved, PROBE_HOST, PROBE_WORKER } from "./do-probe";

const EDGE_PORT = 9290;
const DECODER_PORT = 9291;
const IIP_PORT = 9292;
const LIGHTTPD_PORT = 9293;
const SERVER_CPUS = process.env.BENCH_SERVER_CPUS ?? "0";
const CLIENT_CPUS = process.env.BENCH_CLIENT_CPUS ?? "1";
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const TILES = shuffled(grid(256, 256, 256), 1).slice(0, Number(process.env.BENCH_TILES ?? Infinity));
const SECRET = "bench-stack-secret";

function log(msg: string) {
  process.stdout.write(`${msg}\n`);
}

/** Pins every thread of `pid` to `cpus`. */
const pin = (pid: number, cpus: string) => execFileSync("taskset", ["-a", "-cp", cpus, String(pid)], { stdio: "ignore" });

/** A fresh copy of the fixture under its own id, so nothing has seen its tiles. */
function freshCopy(name: string): string {
  const id = `stack-${process.pid}-${name}`;
  copyFileSync(FILE, path.join(DIR, `${id}.tif`));
  return id;
}

const iiifPath = (id: string, { region, out }: Tile) => `/iiif/3/${id}/${region.join(",")}/${out},${out}/0/default.jpg`;

async function signedDecoderPath(pathAndQuery: string): Promise<Record<string, string>> {
  return signedHeaders(SECRET, "GET", pathAndQuery);
}

async function main(): Promise<void> {
  execFileSync("taskset", ["-cp", CLIENT_CPUS, String(process.pid)], { stdio: "ignore" });
  makeFixture();
  const ids = { stack: freshCopy("edge"), probe: freshCopy("probe"), direct: freshCopy("direct"), fetched: freshCopy("fetched") };
  // Removed however the run ends, a failed start included.
  process.once("exit", () => Object.values(ids).forEach((id) => rmSync(path.join(DIR, `${id}.tif`), { force: true })));
  const stack = await startStack({
    port: EDGE_PORT,
    decoderPort: DECODER_PORT,
    vars: { DECODER_SECRET: SECRET },
    // BENCH_DECODER_NODE_OPTIONS="--cpu-prof --cpu-prof-dir=/tmp/prof" profiles the decoder.
    decoderEnv: { TESSERA_DECODER_SECRET: SECRET, TESSERA_DATA_DIR: DIR, UV_THREADPOOL_SIZE: "1", NODE_OPTIONS: process.env.BENCH_DECODER_NODE_OPTIONS ?? "" },
    workers: [
      {
        name: "probe",
        modules: true,
        compatibilityDate: "2026-11-17",
        script: PROBE_WORKER,
        routes: [`${PROBE_HOST}/*`],
        durableObjects: { ADMISSION: { className: "AdmissionDO", scriptName: "tessera" }, ECHO: { className: "Echo" } },
        bindings: { DECODER_URL: `http://127.0.0.1:${DECODER_PORT}` },
      },
    ],
  });
  let iipsrv: Server | undefined;
  try {
    iipsrv = await startIipsrv(IIP_PORT, LIGHTTPD_PORT, SERVER_CPUS);
    const pids = { workerd: workerdPid(stack.url), decoder: stack.decoders[0].process.pid! };
    pin(pids.workerd, process.env.BENCH_WORKERD_CPUS ?? SERVER_CPUS);
    pin(pids.decoder, SERVER_CPUS);
    const version = async (id: string) => {
      const p = DECODER.info(id);
      const res = await fetch(`${stack.decoders[0].url}${p}`, { headers: await signedDecoderPath(p) });
      return ((await res.json()) as { version: string }).version;
    };
    const versions = { warm: await version(WARM_ID), probe: await version(ids.probe), direct: await version(ids.direct), fetched: await version(ids.fetched) };
    const decoderPath = (id: string, t: Tile, v: string) => DECODER.image(id, `${t.region.join(",")}/${t.out},${t.out}/0/default.jpg`, v);

    // Warm-up, untimed: JIT, connections, the source opens, and the decoder's block cache filled
    // (its memory first touched: ~100 page faults a tile while it grows) with every block of
    // another copy, so no timed window pays for that more than another.
    const signedGet = async (p: string) => {
      const headers = await signedDecoderPath(p);
      return () => get(DECODER_PORT, p, headers);
    };
    await drive(await Promise.all(grid(256, 256, 256).map((t) => signedGet(decoderPath(WARM_ID, t, versions.warm)))));
    const warm = TILES.slice(0, 96);
    await drive(warm.map((t) => () => get(EDGE_PORT, iiifPath(WARM_ID, t))));
    await drive(warm.map((t) => () => get(LIGHTTPD_PORT, `/iiif/${WARM_ID}.tif/${t.region.join(",")}/${t.out},/0/default.jpg`)));
    for (const id of Object.values(ids)) await get(EDGE_PORT, `/iiif/3/${id}/info.json`);

    const decoderRequests = async () => {
      const text = await (await fetch(`${stack.decoders[0].url}/metrics`)).text();
      return [...text.matchAll(/^tessera_decoder_requests_total\{[^}]*\} (\d+)$/gm)].reduce((n, m) => n + Number(m[1]), 0);
    };
    // Lookups in the admission DO's upper tier: each is one more Miniflare Cache API lookup (and,
    // the answer kept, one more store) in a miss, beside the edge's own.
    const tierLookups = async () => {
      const res = await fetch(`${stack.url}/metrics`);
      if (!res.ok) throw new Error(`the edge's /metrics answered ${res.status}`);
      const text = await res.text();
      return ["hits", "misses"].reduce((n, kind) => n + Number(new RegExp(`^tessera_admission_upper_tier_${kind}_total (\\d+)$`, "m").exec(text)?.[1] ?? 0), 0);
    };
    const requestsBefore = await decoderRequests();
    const lookupsBefore = await tierLookups();
    // 1. The stack against iipsrv, chunks alternating.
    const versus = await interleaved(
      TILES,
      ROUNDS,
      {
        stack: (t) => () => get(EDGE_PORT, iiifPath(ids.stack, t)),
        iipsrv: (t) => () => get(LIGHTTPD_PORT, `/iiif/${ID}.tif/${t.region.join(",")}/${t.out},/0/default.jpg`),
      },
      { ...pids, iipsrv: iipsrv.pids[0], lighttpd: iipsrv.pids[1] },
    );
    const decoderRequestsPerMiss = ((await decoderRequests()) - requestsBefore) / TILES.length;
    const tierLookupsPerMiss = ((await tierLookups()) - lookupsBefore) / TILES.length;
    const meanBytes = Math.round(versus.stack.bytes / TILES.length);
    // 2. The decoder alone, the same tiles of another copy: its CPU per tile without the stack.
    // (Signed ahead, so the client's work stays out of the timed windows.)
    const directRequests = new Map(await Promise.all(TILES.map(async (t) => [t, await signedGet(decoderPath(ids.direct, t, versions.direct))] as const)));
    const direct = await interleaved(TILES, ROUNDS, { direct: (t) => directRequests.get(t)! }, pids);
    // 3. The DO alone (through the probe) against the probe answering alike without it, and the
    // probe fetching the decoder itself (signed ahead, a copy of its own: first decodes too).
    const probeHeaders = { host: PROBE_HOST };
    const fetchedHeaders = new Map(
      await Promise.all(TILES.map(async (t) => [t, { ...(await signedDecoderPath(decoderPath(ids.fetched, t, versions.fetched))), ...probeHeaders }] as const)),
    );
    const split = await interleaved(
      TILES,
      ROUNDS,
      {
        admission: (t) => () => get(EDGE_PORT, decoderPath(ids.probe, t, versions.probe), probeHeaders),
        cache: (t) => () => get(EDGE_PORT, `/cache?bytes=${meanBytes}&key=${process.pid}-${t.region.join("-")}`, probeHeaders),
        baseline: () => () => get(EDGE_PORT, `/baseline?bytes=${meanBytes}`, probeHeaders),
        echoFetch: () => () => get(EDGE_PORT, `/echo-fetch?bytes=${meanBytes}`, probeHeaders),
        echoRpc: () => () => get(EDGE_PORT, `/echo-rpc?bytes=${meanBytes}`, probeHeaders),
        fetch: (t) => () => get(EDGE_PORT, `/decoder${decoderPath(ids.fetched, t, versions.fetched)}`, fetchedHeaders.get(t)!),
      },
      pids,
    );

    const n = TILES.length;
    const ms = (s: number) => ((s * 1000) / n).toFixed(2);
    const stackRate = n / versus.stack.seconds;
    const iipRate = n / versus.iipsrv.seconds;
    const workerdPerMiss = versus.stack.cpu.workerd;
    const doCpu = split.admission.cpu.workerd - split.baseline.cpu.workerd;
    const fetchCpu = split.fetch.cpu.workerd - split.baseline.cpu.workerd;
    // A miss makes the edge's lookup and store, and the DO's in its upper tier when it is on.
    const cacheCpu = (split.cache.cpu.workerd - split.baseline.cpu.workerd) * (1 + tierLookupsPerMiss);
    const workerCpu = workerdPerMiss - doCpu - cacheCpu - split.baseline.cpu.workerd;
    // Tiles per CPU-second of all each side's processes: what other load on the machine moves
    // much less than tiles per wall-second.
    const stackCpu = versus.stack.cpu.workerd + versus.stack.cpu.decoder;
    const iipCpu = versus.iipsrv.cpu.iipsrv + versus.iipsrv.cpu.lighttpd;
    log(`${n} distinct native 256² tiles per list, 8 in flight, servers on cpu ${SERVER_CPUS}, ${ROUNDS} alternating chunks; mean tile ${meanBytes} bytes`);
    log(`stack   ${stackRate.toFixed(0)} tiles/s: decoder ${ms(versus.stack.cpu.decoder)} ms/tile, workerd ${ms(workerdPerMiss)} ms/miss (${ms(stackCpu)} ms/tile in all)`);
    log(`decoder requests per miss: ${decoderRequestsPerMiss.toFixed(2)}; upper-tier lookups per miss: ${tierLookupsPerMiss.toFixed(2)}`);
    log(`iipsrv  ${iipRate.toFixed(0)} tiles/s: iipsrv ${ms(versus.iipsrv.cpu.iipsrv)} ms/tile, lighttpd ${ms(versus.iipsrv.cpu.lighttpd)} ms/tile`);
    log(`per CPU-second: stack ${(n / stackCpu).toFixed(0)} tiles, iipsrv ${(n / iipCpu).toFixed(0)} tiles, ratio ${(iipCpu / stackCpu).toFixed(2)}`);
    log(`decoder alone (signed requests, no edge) ${(n / direct.direct.seconds).toFixed(0)} tiles/s: ${ms(direct.direct.cpu.decoder)} ms/tile`);
    log(
      `workerd per miss ${ms(workerdPerMiss)} ms: DO ${ms(doCpu)} ms (probe→DO ${ms(split.admission.cpu.workerd)} ms − probe alone ${ms(split.baseline.cpu.workerd)} ms), ` +
        `Miniflare's Cache API lookups + stores (${(1 + tierLookupsPerMiss).toFixed(2)} of each) ${ms(cacheCpu)} ms, Miniflare's entry and HTTP in/out ${ms(split.baseline.cpu.workerd)} ms, the Worker's own code the rest, ${ms(workerCpu)} ms`,
    );
    log(`the DO's ${ms(doCpu)} ms: its fetch to the decoder and relay of the answer ${ms(fetchCpu)} ms (probe→decoder ${ms(split.fetch.cpu.workerd)} ms − probe alone), the stub call and admission ${ms(doCpu - fetchCpu)} ms`);
    log(`a DO that answers alike: by stub fetch ${ms(split.echoFetch.cpu.workerd - split.baseline.cpu.workerd)} ms, by RPC ${ms(split.echoRpc.cpu.workerd - split.baseline.cpu.workerd)} ms`);
    log(`stack_tiles_per_s=${stackRate.toFixed(1)} iipsrv_tiles_per_s=${iipRate.toFixed(1)} ratio=${(stackRate / iipRate).toFixed(2)} do_cpu_ms_per_miss=${ms(doCpu)} do_fetch_ms_per_miss=${ms(fetchCpu)} worker_cpu_ms_per_miss=${ms(workerCpu)}`);
  } finally {
    await iipsrv?.stop();
    await stack.stop();
  }
}

main().catch((err) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : err);
  process.exitCode = 1;
});
