// `npm run bench:decode`: Tessera's regional decoder against iipsrv, side by side, same run.
//
// Fixture: an 8192² RGB image with texture (gradients plus noise), made here with GDAL into a
// JPEG q85 COG with 512² blocks and overviews (not committed; cached under BENCH_DIR). Both
// servers serve that same file and run at the same time, both pinned to core 0 (taskset;
// iipsrv with OMP_NUM_THREADS=1 behind lighttpd, Tessera's decoder with a 1-thread libuv pool);
// this client runs on core 1 with 8 requests in flight (32 for aligned) and sends both the same
// URL lists:
//   native   random distinct 256² tiles at full resolution (256² out of 512² blocks)
//   lower    random distinct 256² tiles one zoom level down (512² regions → 256²)
//   aligned  every 512² tile at full resolution four times, in random order (one stored block
//            each: Tessera answers these by codec passthrough)
// Each list is cut into ROUNDS chunks run alternately on the two servers, after an untimed
// warm-up on a copy of the file: every native and one-zoom-down tile of it, which fills the
// decoder's block cache, so the timed phases see a decoder in its steady state (each new block
// decoded into an evicted one's memory) rather than its first minute, when the cache's memory
// is still being paged in. BENCH_COLD_CACHE=1 warms up with 96 requests per phase only. Plus the per-core limit: libjpeg-turbo decoding one stored
// 512² block and encoding a 256² quadrant, in a loop on one core, nothing else.
//
// With `perf` installed, each phase is then run once more on Tessera alone, untimed, on the warm
// copy (whose blocks the timed phases evicted), sampled by perf record -p: the decoder's CPU split
// into libjpeg-turbo, the kernel, V8's background threads (concurrent GC and compilation) and the
// rest (JS, Node, V8 on the main thread); outside_libjpeg_share is 1 − libjpeg-turbo's share.
// Not during the timed phases: sampling with call graphs slowed the decoder by up to half on
// this VM. BENCH_PERF=0 turns this off.
//
// BENCH_OTHER_NODE=/usr/bin/node adds a second Tessera decoder run by that Node binary (own port,
// same core), interleaved with the other two, and prints how the two compare; with
// BENCH_OTHER_ROOT=<checkout> that decoder is another checkout's (e.g. the previous toolchain's,
// whose dependencies still load on an older Node), otherwise this one's.
//
// Needs: gdal-bin, iipimage-server, lighttpd (apt-get install -y gdal-bin iipimage-server
// lighttpd). The last line is the summary the issue asks for.

import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { closeSync, copyFileSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from "node:fs";
import { Agent, request } from "node:http";
import path from "node:path";
import { fileURLToPath } from "node:url";
import jpegTurbo from "@julusian/jpeg-turbo";
import { fromFile } from "geotiff";
import { DECODER, signedHeaders } from "../shared/protocol";
import { mergeJpegTables } from "../regional/cog/jpeg-tables";
import { ALLOCATOR_ENV, DECODER_NODE_FLAGS } from "../regional/runtime/allocator";

export const ROOT = fileURLToPath(new URL("..", import.meta.url));
export const DIR = process.env.BENCH_DIR ?? "/tmp/tessera-bench";
export const ID = "rgb-jpeg";
export const FILE = path.join(DIR, `${ID}.tif`);
export const SIZE = 8192;
/**
 * Requests in flight (BENCH_IN_FLIGHT, default 8). On a loaded machine 8 can leave the faster
 * server idle, waiting for the client to turn answers into new requests: its `cpu` column then
 * stays well under 1.0 while the other's does not, and a larger figure measures capacity.
 */
export const IN_FLIGHT = Number(process.env.BENCH_IN_FLIGHT ?? 8);
/**
 * Requests in flight in the tile-aligned phase (BENCH_ALIGNED_IN_FLIGHT, default 32). Passthrough
 * answers ~190 KB without decoding: at 8 in flight the decoder's core idled (cpu 0.66–0.86) while
 * requests waited on the client's round trips, so the phase measured the client. Its lines print
 * both sides' CPU: the server's near 1.0 and the client's below it show the server is the limit.
 */
const ALIGNED_IN_FLIGHT = Number(process.env.BENCH_ALIGNED_IN_FLIGHT ?? 32);
const inFlightOf = (phase: string) => (phase === "aligned" ? ALIGNED_IN_FLIGHT : IN_FLIGHT);
const DECODER_PORT = 9190;
const IIP_PORT = 9191;
const LIGHTTPD_PORT = 9192;
const OTHER_NODE_DECODER_PORT = 9193;
const SECRET = "bench-secret";

type Phase = "native" | "lower" | "aligned";
export interface Tile {
  region: [number, number, number, number];
  out: number;
}

function log(msg: string) {
  process.stdout.write(`${msg}\n`);
}

/** Gradients plus noise, so JPEG blocks cost what photographs cost (a flat image is too cheap). */
export function makeFixture(): void {
  if (existsSync(FILE)) return;
  mkdirSync(DIR, { recursive: true });
  const ppm = path.join(DIR, "base.ppm");
  log(`making ${FILE} (8192² RGB, JPEG q85, 512² blocks, overviews) with GDAL…`);
  const fd = openSync(ppm, "w");
  writeSync(fd, `P6\n${SIZE} ${SIZE}\n255\n`);
  const row = Buffer.alloc(SIZE * 3);
  let seed = 12345;
  const noise = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff - 0.5) * 48;
  for (let y = 0; y < SIZE; y++) {
    for (let x = 0; x < SIZE; x++) {
      const n = noise();
      row[x * 3] = 128 + 100 * Math.sin(x / 300) + n;
      row[x * 3 + 1] = (y / SIZE) * 255 + n;
      row[x * 3 + 2] = 128 + 90 * Math.cos((x + y) / 500) + n;
    }
    writeSync(fd, row);
  }
  closeSync(fd);
  execFileSync("gdal_translate", ["-q", "-of", "COG", "-co", "COMPRESS=JPEG", "-co", "QUALITY=85", "-co", "BLOCKSIZE=512", "-co", "OVERVIEWS=AUTO", ppm, FILE]);
  rmSync(ppm);
}

/** Seeded shuffle, so both servers get the same order and runs are comparable. */
export function shuffled<T>(items: T[], seed: number): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    const j = seed % (i + 1);
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

export function grid(step: number, regionSize: number, out: number): Tile[] {
  const tiles: Tile[] = [];
  for (let y = 0; y < SIZE; y += step) for (let x = 0; x < SIZE; x += step) tiles.push({ region: [x, y, regionSize, regionSize], out });
  return tiles;
}

const ALL_PHASES: Record<Phase, Tile[]> = {
  native: shuffled(grid(256, 256, 256), 1),
  lower: shuffled(grid(512, 512, 256), 2),
  // The 256 stored blocks four times over (passthrough caches nothing, so a repeat costs what the
  // first did): at ~1,700 a second one pass lasted 150 ms, its chunks too short to time steadily.
  aligned: [1, 2, 3, 4].flatMap((round) => shuffled(grid(512, 512, 512), 3 + round)),
};
// BENCH_PHASES=aligned (comma-separated) runs only those, e.g. to profile one path.
const PHASES = Object.fromEntries(
  Object.entries(ALL_PHASES).filter(([k]) => !process.env.BENCH_PHASES || process.env.BENCH_PHASES.split(",").includes(k)),
) as Record<Phase, Tile[]>;
/**
 * Each phase's list is cut into this many chunks, run alternately on the two servers (T I, I T,
 * …), so load from anything else on the machine falls on both alike.
 */
const ROUNDS = 4;
/** Warm-up: every phase's kind of request, on a copy of the file (its own caches), untimed. */
export const WARM_ID = `${ID}-warm`;
/** Requests of each phase's list the warm-up sends (all, unless BENCH_COLD_CACHE=1). */
const WARM_UP = process.env.BENCH_COLD_CACHE === "1" ? 96 : Infinity;

const agent = new Agent({ keepAlive: true, maxSockets: Math.max(IN_FLIGHT, ALIGNED_IN_FLIGHT) });

/**
 * Closes the client's idle connections: a server closes one it has kept idle for its keep-alive
 * timeout (lighttpd's and Node's are 5 s), and a request sent on it at that moment fails.
 */
export function closeIdleConnections(): void {
  for (const sockets of Object.values(agent.freeSockets)) for (const socket of sockets ?? []) socket.destroy();
}

export function get(port: number, pathAndQuery: string, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path: pathAndQuery, agent, headers }, (res) => {
      let bytes = 0;
      res.on("data", (c: Buffer) => (bytes += c.length));
      res.on("end", () => (res.statusCode === 200 ? resolve(bytes) : reject(new Error(`${pathAndQuery}: HTTP ${res.statusCode}`))));
    });
    // A kept-alive socket the server closed while it idled (other servers' turns can outlast its
    // keep-alive timeout) fails at once: the request is sent again on a new one, as Node advises.
    req.on("error", (e: NodeJS.ErrnoException) => (req.reusedSocket && e.code === "ECONNRESET" ? get(port, pathAndQuery, headers).then(resolve, reject) : reject(e)));
    req.end();
  });
}

/** Runs every request with `inFlight` at once; returns requests per second. */
export async function drive(requests: (() => Promise<number>)[], inFlight = IN_FLIGHT): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < requests.length) await requests[next++]();
    }),
  );
  return requests.length / ((performance.now() - started) / 1000);
}

export async function waitFor(port: number, pathAndQuery: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    try {
      await get(port, pathAndQuery);
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  throw new Error(`nothing answered on port ${port}`);
}

export function stop(p: ChildProcess): Promise<void> {
  if (p.exitCode !== null || p.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    p.once("exit", () => resolve());
    p.kill("SIGTERM");
  });
}

export interface Server {
  name: string;
  /** Processes whose CPU time is the server's. */
  pids: number[];
  /** One request for `tile` of source `id`. */
  request(id: string, tile: Tile): Promise<() => Promise<number>>;
  stop(): Promise<void>;
}

/** The decoder under the given Node binary (by default the one running this bench). */
async function startTessera(
  node = process.execPath,
  port = DECODER_PORT,
  name = "tessera",
  root = ROOT,
): Promise<Server & { pid: number; metrics(): Promise<string> }> {
  // BENCH_DECODER_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" profiles the decoder.
  const nodeArgs = (process.env.BENCH_DECODER_NODE_ARGS ?? "").split(" ").filter(Boolean);
  const flags = root === ROOT ? DECODER_NODE_FLAGS : [];
  const decoder = spawn("taskset", ["-c", "0", node, ...flags, ...nodeArgs, "--import", "tsx", "regional/main.ts"], {
    cwd: root,
    env: {
      ...process.env,
      // As deployed: this checkout's allocator settings and flags (another checkout runs as it did).
      ...(root === ROOT && ALLOCATOR_ENV),
      TESSERA_DECODER_SECRET: SECRET,
      TESSERA_DECODER_PORT: String(port),
      TESSERA_DATA_DIR: DIR,
      // One pool thread for one core (docs/operators.md, "libvips threads"): more threads than cores only
      // time-slice decodes and thrash the caches (measured here: 4 threads ran ~40% slower).
      UV_THREADPOOL_SIZE: process.env.UV_THREADPOOL_SIZE ?? "1",
    },
    stdio: ["ignore", "ignore", "inherit"],
  });
  await waitFor(port, DECODER.health);
  const versions = new Map<string, string>();
  for (const id of [ID, WARM_ID]) versions.set(id, JSON.parse(await fetchText(port, DECODER.info(id), true)).version);
  return {
    name,
    pids: [decoder.pid!], // taskset execs the decoder in place
    pid: decoder.pid!,
    async request(id, { region, out }) {
      const p = DECODER.image(id, `${region.join(",")}/${out},${out}/0/default.jpg`, versions.get(id)!);
      const headers = await signedHeaders(SECRET, "GET", p); // signed ahead: the client's cost stays out of the timing
      return () => get(port, p, headers);
    },
    metrics: () => fetchText(port, "/metrics", false),
    stop: () => stop(decoder),
  };
}

/** User + system CPU seconds of a process so far (/proc/<pid>/stat, clock ticks of 1/100 s). */
export function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

async function fetchText(port: number, pathAndQuery: string, signed: boolean): Promise<string> {
  const headers: Record<string, string> = signed ? await signedHeaders(SECRET, "GET", pathAndQuery) : {};
  const res = await fetch(`http://127.0.0.1:${port}${pathAndQuery}`, { headers });
  if (!res.ok) throw new Error(`${pathAndQuery}: HTTP ${res.status}`);
  return res.text();
}

/** iipsrv behind lighttpd, both on `cpus`; each port pair has its own config and log, so two benches can run at once. */
export async function startIipsrv(fcgiPort = IIP_PORT, httpPort = LIGHTTPD_PORT, cpus = "0"): Promise<Server> {
  const conf = path.join(DIR, `lighttpd-${httpPort}.conf`);
  mkdirSync(path.join(DIR, "www"), { recursive: true });
  writeFileSync(
    conf,
    [
      `server.modules = ( "mod_fastcgi" )`,
      `server.bind = "127.0.0.1"`,
      `server.port = ${httpPort}`,
      `server.document-root = "${path.join(DIR, "www")}"`,
      `server.errorlog = "${path.join(DIR, `lighttpd-${httpPort}.log`)}"`,
      `server.max-keep-alive-requests = 100000`,
      `fastcgi.server = ( "/iiif" => ( ( "host" => "127.0.0.1", "port" => ${fcgiPort}, "check-local" => "disable" ) ) )`,
    ].join("\n"),
  );
  const iip = spawn("taskset", ["-c", cpus, "/usr/lib/iipimage-server/iipsrv.fcgi", "--bind", `127.0.0.1:${fcgiPort}`], {
    env: { ...process.env, FILESYSTEM_PREFIX: `${DIR}/`, URI_MAP: "iiif=>IIIF", OMP_NUM_THREADS: "1", MAX_IMAGE_CACHE_SIZE: "5", JPEG_QUALITY: "85", LOGFILE: "/dev/null" },
    stdio: "ignore", // it warns about GeoTIFF tags on every request
  });
  const httpd = spawn("taskset", ["-c", cpus, "lighttpd", "-D", "-f", conf], { stdio: "ignore" });
  await waitFor(httpPort, `/iiif/${ID}.tif/info.json`);
  return {
    name: "iipsrv",
    pids: [iip.pid!, httpd.pid!],
    async request(id, { region, out }) {
      const p = `/iiif/${id}.tif/${region.join(",")}/${out},/0/default.jpg`;
      return () => get(httpPort, p);
    },
    async stop() {
      await stop(httpd);
      await stop(iip);
    },
  };
}

/** libjpeg-turbo's own rate on one core (TurboJPEG): decode a stored 512² block, encode a 256² quadrant at q85. */
async function jpegLimit(): Promise<number> {
  const tiff = await fromFile(FILE);
  const image = await tiff.getImage(0);
  const dir = image.getFileDirectory();
  const offsets = (await dir.loadValue("TileOffsets")) as ArrayLike<number>;
  const counts = (await dir.loadValue("TileByteCounts")) as ArrayLike<number>;
  const tables = Uint8Array.from((await dir.loadValue("JPEGTables")) as ArrayLike<number>);
  const file = readFileSync(FILE);
  const blocks = Array.from({ length: 64 }, (_, i) => mergeJpegTables(file.subarray(offsets[i], offsets[i] + counts[i]), tables));
  // Synchronous on this thread: exactly one core's worth of libjpeg-turbo, nothing else.
  const tiles = (n: number) => {
    for (let i = 0; i < n; i++) {
      const { data } = jpegTurbo.decompressSync(Buffer.from(blocks[i % blocks.length]), { format: jpegTurbo.FORMAT_RGB });
      const quadrant = Buffer.from(data.buffer, data.byteOffset + (i % 2) * 256 * 3); // top-left or top-right 256²
      jpegTurbo.compressSync(quadrant, { width: 256, height: 256, stride: 512, format: jpegTurbo.FORMAT_RGB, quality: 85, subsampling: jpegTurbo.SAMP_420 });
    }
  };
  // Untimed first: a cold first pass (fresh pages, JIT) measured ~35% slower than the rest.
  tiles(400);
  const n = 800;
  const started = performance.now();
  tiles(n);
  return n / ((performance.now() - started) / 1000);
}

/** The CPU split of one process while `perf record` sampled it. */
interface CpuSplit {
  libjpeg: number;
  kernel: number;
  v8Background: number;
}

/** perf is usable here (installed, and allowed to sample another process). */
function perfAvailable(): boolean {
  if (process.env.BENCH_PERF === "0") return false;
  try {
    execFileSync("perf", ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** Samples `pid` with perf until the returned function is called; that resolves to the split. */
function samplePerf(pid: number, file: string): () => Promise<CpuSplit | undefined> {
  const perf = spawn("perf", ["record", "-q", "-F", "999", "-g", "-p", String(pid), "-o", file], { stdio: "ignore" });
  return async () => {
    await new Promise<void>((resolve) => {
      perf.once("exit", () => resolve());
      perf.kill("SIGINT");
    });
    return cpuSplit(file);
  };
}

/** Shares of the samples in `file`: by library (libjpeg-turbo, kernel) and by thread (V8's workers). */
function cpuSplit(file: string): CpuSplit | undefined {
  const report = (sort: string) =>
    execFileSync("perf", ["report", "-i", file, "--no-children", "--sort", sort, "-g", "none", "--stdio", "-q"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
  const share = (text: string, name: RegExp) =>
    text
      .split("\n")
      .filter((line) => name.test(line))
      .reduce((sum, line) => sum + Number(/([\d.]+)%/.exec(line)?.[1] ?? 0) / 100, 0);
  try {
    const byDso = report("dso");
    const byThread = report("comm");
    return { libjpeg: share(byDso, /libturbojpeg|libjpeg/), kernel: share(byDso, /\[kernel/), v8Background: share(byThread, /V8Worker/) };
  } catch {
    return undefined;
  }
}

/** The decoder's CPU split per phase: each phase's list on the warm copy, untimed, under perf. */
async function cpuSplits(tessera: Server & { pid: number }): Promise<Partial<Record<Phase, CpuSplit>>> {
  const splits: Partial<Record<Phase, CpuSplit>> = {};
  for (const [phase, tiles] of Object.entries(PHASES) as [Phase, Tile[]][]) {
    const requests = await Promise.all(tiles.map((t) => tessera.request(WARM_ID, t)));
    const stop = samplePerf(tessera.pid, path.join(DIR, `decoder-${phase}.perf.data`));
    await new Promise((r) => setTimeout(r, 500)); // perf attaches; the idle decoder adds no samples
    await drive(requests, inFlightOf(phase));
    const split = await stop();
    if (split) splits[phase] = split;
  }
  return splits;
}

/** A server's phase: tiles a second, the cores it used, and the cores this client used driving it. */
interface PhaseResult {
  rate: number;
  cpu: number;
  clientCpu: number;
}

/** Each server's rate and CPU use per phase, its chunks interleaved with the other servers'. */
async function measure(servers: Server[]): Promise<Record<string, Record<Phase, PhaseResult>>> {
  const seconds: Record<string, Record<string, number>> = Object.fromEntries(servers.map((s) => [s.name, {}]));
  const cpu: Record<string, Record<string, number>> = Object.fromEntries(servers.map((s) => [s.name, {}]));
  const client: Record<string, Record<string, number>> = Object.fromEntries(servers.map((s) => [s.name, {}]));
  const clientCpu = () => {
    const { user, system } = process.cpuUsage();
    return (user + system) / 1e6;
  };
  const cpuOf = (s: Server) => s.pids.reduce((n, pid) => n + cpuSeconds(pid), 0);
  for (const phase of Object.keys(PHASES) as Phase[]) {
    const tiles = PHASES[phase];
    const chunk = Math.ceil(tiles.length / ROUNDS);
    for (let r = 0; r < ROUNDS; r++) {
      // Each round starts with the next server (T I, I T, … for two), so no one always goes first.
      const order = [...servers.slice(r % servers.length), ...servers.slice(0, r % servers.length)];
      for (const server of order) {
        const requests = await Promise.all(tiles.slice(r * chunk, (r + 1) * chunk).map((t) => server.request(ID, t)));
        const [cpuBefore, clientBefore] = [cpuOf(server), clientCpu()];
        const started = performance.now();
        await drive(requests, inFlightOf(phase));
        seconds[server.name][phase] = (seconds[server.name][phase] ?? 0) + (performance.now() - started) / 1000;
        cpu[server.name][phase] = (cpu[server.name][phase] ?? 0) + cpuOf(server) - cpuBefore;
        client[server.name][phase] = (client[server.name][phase] ?? 0) + clientCpu() - clientBefore;
      }
    }
  }
  return Object.fromEntries(
    servers.map((s) => [
      s.name,
      Object.fromEntries(
        Object.keys(PHASES).map((p) => [
          p,
          { rate: PHASES[p as Phase].length / seconds[s.name][p], cpu: cpu[s.name][p] / seconds[s.name][p], clientCpu: client[s.name][p] / seconds[s.name][p] },
        ]),
      ),
    ]),
  ) as Record<string, Record<Phase, PhaseResult>>;
}

async function main(): Promise<void> {
  // This process is the client: keep it off the servers' core.
  execFileSync("taskset", ["-cp", "1", String(process.pid)], { stdio: "ignore" });
  makeFixture();
  const warmFile = path.join(DIR, `${WARM_ID}.tif`);
  if (!existsSync(warmFile)) copyFileSync(FILE, warmFile);
  const limit = await jpegLimit();
  const tessera = await startTessera();
  const iipsrv = await startIipsrv();
  const otherNode = process.env.BENCH_OTHER_NODE;
  const otherRoot = process.env.BENCH_OTHER_ROOT ?? ROOT;
  const other = otherNode
    ? await startTessera(otherNode, OTHER_NODE_DECODER_PORT, `other(node ${execFileSync(otherNode, ["--version"], { encoding: "utf8" }).trim()}, ${otherRoot})`, otherRoot)
    : undefined;
  const servers = other ? [tessera, other, iipsrv] : [tessera, iipsrv];
  try {
    for (const server of servers) {
      for (const [phase, tiles] of Object.entries(ALL_PHASES)) {
        const count = phase === "aligned" ? 96 : WARM_UP; // passthrough caches nothing
        await drive(await Promise.all(tiles.slice(0, count).map((t) => server.request(WARM_ID, t))), inFlightOf(phase));
      }
    }
    const results = await measure(servers);
    const metrics = await tessera.metrics();
    const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, "m").exec(metrics)?.[1] ?? NaN);
    const peakRss = Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${tessera.pid}/status`, "utf8"))?.[1]) * 1024;
    const splits = perfAvailable() ? await cpuSplits(tessera) : {};
    // cpu: cores each server used while it was being driven (1.0 = all of its one core). Below
    // 1.0 it was waiting or, on a shared machine, its core was busy with other work.
    for (const phase of Object.keys(PHASES) as Phase[]) {
      const t = results.tessera[phase];
      const y = results.iipsrv[phase];
      // Tiles per CPU-second: what each server gets out of the CPU it was given, which other
      // load on a shared machine moves much less than tiles per wall-second.
      const perCpu = (r: { rate: number; cpu: number }) => r.rate / r.cpu;
      log(
        `${phase.padEnd(8)} tessera=${t.rate.toFixed(0)}/s (cpu ${t.cpu.toFixed(2)}, client cpu ${t.clientCpu.toFixed(2)}) iipsrv=${y.rate.toFixed(0)}/s (cpu ${y.cpu.toFixed(2)}, client cpu ${y.clientCpu.toFixed(2)}) ratio=${(t.rate / y.rate).toFixed(2)} per_cpu_second_ratio=${(perCpu(t) / perCpu(y)).toFixed(2)} (${new Set(PHASES[phase].map((t) => t.region.join())).size} distinct tiles, ${PHASES[phase].length} requests, ${inFlightOf(phase)} in flight)`,
      );
    }
    for (const phase of other ? (Object.keys(PHASES) as Phase[]) : []) {
      const [t, o] = [results.tessera[phase], results[other!.name][phase]];
      log(
        `${phase.padEnd(8)} tessera(node ${process.version})=${t.rate.toFixed(0)}/s (cpu ${t.cpu.toFixed(2)}) ${other!.name}=${o.rate.toFixed(0)}/s (cpu ${o.cpu.toFixed(2)}) ratio=${(t.rate / o.rate).toFixed(2)} per_cpu_second_ratio=${(t.rate / t.cpu / (o.rate / o.cpu)).toFixed(2)}`,
      );
    }
    for (const [phase, s] of Object.entries(splits)) {
      const pct = (n: number) => `${(n * 100).toFixed(0)}%`;
      log(
        `${phase.padEnd(8)} decoder cpu (perf): libjpeg-turbo ${pct(s.libjpeg)}, kernel ${pct(s.kernel)}, V8 background threads ${pct(s.v8Background)}, the rest (JS, Node, V8 on the main thread) ${pct(1 - s.libjpeg - s.kernel - s.v8Background)}; outside libjpeg-turbo ${pct(1 - s.libjpeg)}`,
      );
    }
    log(`decoder peak_rss_bytes=${peakRss} work_budget_peak_bytes=${value("tessera_decoder_work_budget_peak_bytes")} block_cache_hits=${value("tessera_decoder_block_cache_hits_total")} blocks_decoded=${value("tessera_decoder_blocks_decoded_total")} passthrough=${value("tessera_decoder_passthrough_total")}`);
    log(`limit (one core, libjpeg-turbo: decode a 512² block + encode a 256² quadrant) ${limit.toFixed(0)}/s`);
    if (!results.tessera.native || !results.tessera.aligned) return;
    const { tessera: t, iipsrv: i } = results;
    const x = t.native.rate;
    const y = i.native.rate;
    const p = t.aligned.rate;
    // The same ratios per CPU-second: what a shared machine's other load moves least.
    const perCpu = (a: { rate: number; cpu: number }, b: { rate: number; cpu: number }) => (a.rate / a.cpu / (b.rate / b.cpu)).toFixed(2);
    const lower = t.lower && i.lower ? ` lower_ratio=${(t.lower.rate / i.lower.rate).toFixed(2)} lower_per_cpu_ratio=${perCpu(t.lower, i.lower)}` : "";
    const outside = splits.native ? ` outside_libjpeg_share=${(1 - splits.native.libjpeg).toFixed(2)}` : "";
    log(
      `tiles_per_s=${x.toFixed(1)} iipsrv_tiles_per_s=${y.toFixed(1)} ratio=${(x / y).toFixed(2)} per_cpu_ratio=${perCpu(t.native, i.native)}${lower} limit_tiles_per_s=${limit.toFixed(1)} passthrough_ratio=${(p / y).toFixed(2)} passthrough_per_cpu_ratio=${perCpu(t.aligned, i.native)}${outside} peak_rss_bytes=${peakRss}`,
    );
  } finally {
    await tessera.stop();
    await other?.stop();
    await iipsrv.stop();
    agent.destroy();
  }
}

// The helpers above also serve bench:stack, which imports this file without running it.
if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) await main();
