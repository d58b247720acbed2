// `npm run bench:capacity`: what one admission DO shard and one decoder core each sustain, for
// sizing regions and shards (docs/operators.md, "Capacity: regions and shards").
//
// The edge Worker and its admission DO run in workerd through Miniflare, as `npm start` runs
// them, with one decoder over bench:decode's 8192² JPEG COG, both on one core (BENCH_SERVER_CPUS,
// default 0), this client on the other, 8 requests in flight. A probe Worker in the same workerd
// sends distinct native 256² tile misses straight to the DO, as the edge does on a miss; chunks
// of the same list alternate with the probe answering a body of the same size without the DO.
//   DO CPU per miss     workerd's CPU with the DO minus without, per request: the DO's own code,
//                       its stub call and its fetch to the decoder. One DO is one thread, so
//                       1000 ÷ that (ms) is the misses/s one shard sustains at full load.
//   decoder CPU a tile  the decoder process's CPU per tile: 1000 ÷ that (ms) is the tiles/s one
//                       decoder core sustains (its libuv pool pinned to one thread here).
//
//   npm run bench:capacity    (BENCH_TILES tiles, default 512; BENCH_ROUNDS chunks, default 4)
//
// Needs gdal-bin (for the fixture). Ports 9295–9296.
import { execFileSync } from "node:child_process";
import { copyFileSync, rmSync } from "node:fs";
import path from "node:path";
import { startStack } from "../infra/local/stack";
import { DECODER, signedHeaders } from "../shared/protocol";
import { workerdPid } from "../test/support/workerd-process";
import { DIR, drive, FILE, get, grid, makeFixture, shuffled, type Tile } from "./decode";
import { interleaved, PROBE_HOST, PROBE_WORKER } from "./do-probe";

const EDGE_PORT = 9295;
const DECODER_PORT = 9296;
const SERVER_CPUS = process.env.BENCH_SERVER_CPUS ?? "0";
const CLIENT_CPUS = process.env.BENCH_CLIENT_CPUS ?? "1";
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const TILES = shuffled(grid(256, 256, 256), 7).slice(0, Number(process.env.BENCH_TILES ?? 512));
const SECRET = "bench-capacity-secret";

const pin = (pid: number, cpus: string) => execFileSync("taskset", ["-a", "-cp", cpus, String(pid)], { stdio: "ignore" });

async function main(): Promise<void> {
  execFileSync("taskset", ["-cp", CLIENT_CPUS, String(process.pid)], { stdio: "ignore" });
  makeFixture();
  const id = `capacity-${process.pid}`;
  copyFileSync(FILE, path.join(DIR, `${id}.tif`)); // a fresh copy: every tile is a first decode
  process.once("exit", () => rmSync(path.join(DIR, `${id}.tif`), { force: true }));
  const stack = await startStack({
    port: EDGE_PORT,
    decoderPort: DECODER_PORT,
    vars: { DECODER_SECRET: SECRET },
    decoderEnv: { TESSERA_DECODER_SECRET: SECRET, TESSERA_DATA_DIR: DIR, UV_THREADPOOL_SIZE: "1" },
    workers: [
      { name: "probe", modules: true, script: PROBE_WORKER, routes: [`${PROBE_HOST}/*`], durableObjects: { ADMISSION: { className: "AdmissionDO", scriptName: "tessera" } } },
    ],
  });
  try {
    const pids = { workerd: workerdPid(stack.url), decoder: stack.decoders[0].process.pid! };
    pin(pids.workerd, SERVER_CPUS);
    pin(pids.decoder, SERVER_CPUS);
    const infoPath = DECODER.info(id);
    const info = await fetch(`${stack.decoders[0].url}${infoPath}`, { headers: await signedHeaders(SECRET, "GET", infoPath) });
    const { version } = (await info.json()) as { version: string };
    const probe = { host: PROBE_HOST };
    const miss = (t: Tile) => () => get(EDGE_PORT, DECODER.image(id, `${t.region.join(",")}/${t.out},${t.out}/0/default.jpg`, version), probe);
    // Warm-up, untimed (JIT, connections, the source's open), on tiles outside the list; the
    // probe's baseline answers bodies of their mean size.
    const listed = new Set(TILES.map((t) => t.region.join(",")));
    const warm = grid(256, 256, 256).filter((t) => !listed.has(t.region.join(","))).slice(0, 96);
    let warmBytes = 0;
    await drive(warm.map((t) => async () => (warmBytes += await miss(t)())));
    const meanBytes = Math.round(warmBytes / warm.length);
    const split = await interleaved(
      TILES,
      ROUNDS,
      { admission: miss, baseline: () => () => get(EDGE_PORT, `/baseline?bytes=${meanBytes}`, probe) },
      pids,
    );
    const n = TILES.length;
    const doMs = ((split.admission.cpu.workerd - split.baseline.cpu.workerd) * 1000) / n;
    const decoderMs = (split.admission.cpu.decoder * 1000) / n;
    const log = (msg: string) => process.stdout.write(`${msg}\n`);
    log(`${n} distinct native 256² tile misses, 8 in flight, servers on cpu ${SERVER_CPUS}, ${ROUNDS} alternating chunks`);
    log(`DO CPU per miss ${doMs.toFixed(2)} ms (probe→DO ${((split.admission.cpu.workerd * 1000) / n).toFixed(2)} ms − probe alone ${((split.baseline.cpu.workerd * 1000) / n).toFixed(2)} ms): ${(1000 / doMs).toFixed(0)} misses/s per shard`);
    log(`decoder CPU per tile ${decoderMs.toFixed(2)} ms: ${(1000 / decoderMs).toFixed(0)} tiles/s per decoder core`);
    log(`do_cpu_ms_per_miss=${doMs.toFixed(2)} misses_per_s_per_shard=${(1000 / doMs).toFixed(0)} decoder_cpu_ms_per_tile=${decoderMs.toFixed(2)} tiles_per_s_per_core=${(1000 / decoderMs).toFixed(0)}`);
  } finally {
    await stack.stop();
  }
}

main().catch((err) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : err);
  process.exitCode = 1;
});
