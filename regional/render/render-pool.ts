// The render pool: child processes (render-process.ts) that render the full partition's decodes,
// large IIIF requests and costly map tiles, so that a decode of seconds never holds the decoder's
// event loop, and the loop keeps answering tiles, heartbeats and deadlines while it runs. Each
// process starts at nice +10, so that every thread of it is below tiles' work: its main thread,
// libvips's workers and V8's collector threads (worker threads at +10 left the last two at the
// decoder's priority, a third to a half of a flood's CPU). The decoder keeps what it owns: the
// work reservation (held until the render returns), the request's signal (passed on as an abort),
// and the sources' I/O (the process's reads are served here, over its IPC channel). Fulls
// bypass the shared decoded-block cache: their blocks are read once, and would only evict the
// blocks viewers come back to.

import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import { badGateway } from "../../shared/errors";
import type { ResolvedImageRequest } from "../../shared/iiif/resolve";
import type { Cog } from "../cog/cog";
import { workerScript } from "../decoder-files";
import { chooseLevel, windowAtLevel } from "../../shared/levels";
import type { RenderedImage } from "./render";
import { fromWire, toWire, type MainMessage, type ReadRequest, type RenderTask, type WireSource } from "./render-worker";
import type { FromRenderProcess, ToRenderProcess } from "./render-process";
import type { TileAsset } from "../maps/compose-tile";
import type { TileRequest } from "../../shared/maps/tile-request";
import { DECODER_NODE_FLAGS } from "../runtime/allocator";
import { jsonLog } from "../runtime/log";
import { BACKGROUND_NICE_INCREMENT, BACKGROUND_PROCESS_ENV } from "../runtime/priority";
import type { Reservation } from "../runtime/work-budget";

/**
 * Idle processes beyond the first end after this long; a busier moment starts them again (half a
 * second of a core, at the pool's priority). Each holds some 100 MiB of the decoder's envelope,
 * which must be back within 30 s of a flood's end.
 */
const IDLE_TIMEOUT_MS = 10_000;

/** How many renders (processes) run at once; the rest wait their turn, first come first served. */
let threads = availableParallelism();

/** The processes (starting, idle or rendering), and the renders waiting for one. */
const processes = new Set<RenderProcess>();
const queue: Job[] = [];

/** A render handed to the pool: its task, the sources its reads are served from, and its end. */
interface Job {
  task: RenderTask;
  cogs: Cog[];
  signal: AbortSignal;
  /** The process rendering it, once one took it. */
  process?: RenderProcess;
  finish(result: RenderedImage | Error): void;
}

/**
 * Sets how many large renders run at once (the rest wait their turn) and starts the first
 * process now: loading a process's modules takes about a second, which no render should wait.
 */
export function configureRenderPool(maxProcesses: number): void {
  threads = maxProcesses;
  if (processes.size === 0) processes.add(new RenderProcess());
}

// The processes end with the decoder: at its exit here, and at any other end (SIGKILL, a crash)
// when their IPC channel closes (render-process.ts).
process.on("exit", () => {
  for (const p of processes) p.child.kill();
});

/** Hands waiting renders to idle processes, and starts processes for those no process will take. */
function dispatch(): void {
  for (const p of processes) if (p.ready && !p.job && queue.length > 0) p.take(queue.shift()!);
  const starting = [...processes].filter((p) => !p.ready).length;
  for (let i = starting; i < queue.length && processes.size < threads; i++) processes.add(new RenderProcess());
}

/** A render process: started below the decoder's priority, one render at a time. */
class RenderProcess {
  readonly child: ChildProcess;
  ready = false;
  job: Job | undefined;
  /** The running render's answer, as its pieces fill it. */
  private answer: { body: Buffer; filled: number; contentType: string } | undefined;
  private idleTimer: NodeJS.Timeout | undefined;
  /** Its resident memory once it had loaded. */
  private readyBytes = 0;
  private gone = false;
  /** Ended here (idle, or recycled), not lost. */
  private ended = false;

  constructor() {
    const script = workerScript("render/render-process");
    const node = [process.execPath, ...DECODER_NODE_FLAGS, ...script.execArgv, fileURLToPath(script.url)];
    // Through nice(1), so that the process runs below the decoder from its first instruction, and
    // so does every thread it starts.
    this.child = spawn("nice", ["-n", String(BACKGROUND_NICE_INCREMENT), ...node], {
      stdio: ["ignore", "inherit", "inherit", "ipc"],
      // Bytes cross as bytes (a JSON channel would spell them out).
      serialization: "advanced",
      env: { ...process.env, [BACKGROUND_PROCESS_ENV]: "1" },
    });
    // An idle process keeps no one alive; a render's request does.
    this.child.unref();
    this.child.channel?.unref();
    this.child.on("message", (m: FromRenderProcess) => this.heard(m));
    this.child.on("exit", (code, signal) => this.exited(`exited (${signal ?? code})`));
    this.child.on("error", (err) => this.exited(`failed: ${err.message}`));
  }

  take(job: Job): void {
    clearTimeout(this.idleTimer);
    this.job = job;
    job.process = this;
    this.send({ task: job.task });
  }

  send(m: ToRenderProcess): void {
    // A process that has gone fails its render at its exit; what was sent meanwhile is moot.
    if (this.child.connected) this.child.send(m, () => {});
  }

  /** Ends the process (idle, or recycled): it returns all the memory it grew. */
  end(): void {
    this.ended = true;
    processes.delete(this);
    this.child.kill();
  }

  /** What it grew since it had loaded. */
  grownBytes(): number {
    return this.ready ? Math.max(0, residentBytes(this.child.pid) - this.readyBytes) : 0;
  }

  private heard(m: FromRenderProcess): void {
    const job = this.job;
    if ("ready" in m) {
      this.ready = true;
      this.readyBytes = residentBytes(this.child.pid);
      return dispatch();
    }
    if (!job) return;
    if ("read" in m) void serveRead(job.cogs[m.read.source], m.read, job.signal, (reply) => this.job === job && this.send(reply));
    else if ("error" in m) this.answered(job, fromWire(m.error));
    else if ("answer" in m) this.filling(job, { body: Buffer.allocUnsafe(m.answer.bytes), filled: 0, contentType: m.answer.contentType });
    else this.filling(job, this.answer!, m.piece);
  }

  /** Copies a piece into its place in the answer, a piece at a time: never one long copy on the loop. */
  private filling(job: Job, answer: NonNullable<RenderProcess["answer"]>, piece?: Uint8Array): void {
    if (piece) answer.body.set(piece, answer.filled);
    answer.filled += piece?.byteLength ?? 0;
    this.answer = answer;
    if (answer.filled === answer.body.byteLength) this.answered(job, { body: answer.body, contentType: answer.contentType });
  }

  private answered(job: Job, result: RenderedImage | Error): void {
    this.job = undefined;
    this.answer = undefined;
    job.finish(result);
    this.idle();
    dispatch();
  }

  /** With nothing to render: a process beyond the first ends after IDLE_TIMEOUT_MS of it. */
  private idle(): void {
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => !this.job && processes.size > 1 && this.end(), IDLE_TIMEOUT_MS).unref();
  }

  /** Its render fails (a 502) and the pool goes on without it; a process lost before it was ready fails the waiting renders too. */
  private exited(how: string): void {
    if (this.gone) return;
    this.gone = true;
    clearTimeout(this.idleTimer);
    processes.delete(this);
    if (this.ended) return;
    const detail = `render process ${this.child.pid ?? "(not started)"} ${how}`;
    jsonLog({ level: "error", msg: "render process lost", detail });
    const failed = this.job ? [this.job] : this.ready ? [] : queue.splice(0);
    for (const job of failed) job.finish(badGateway("the render failed: its process ended", detail));
    this.job = undefined;
    // A process that started and then died is replaced at once; one that could not start is not
    // (it would not start again), until a render asks for one.
    if (this.ready && processes.size === 0) processes.add(new RenderProcess());
    dispatch();
  }
}

/** Renders handed to the pool and not yet returned (running or queued). */
let inPool = 0;

/** Renders ever handed to the pool, and the times the pool was replaced to return its memory. */
let renders = 0;
let recycles = 0;
/** `renders` when the current pool started. */
let rendersAtStart = 0;

/**
 * What the processes grew since they were ready (Linux; 0 elsewhere): what a recycle returns of
 * the memory they count in the decoder's envelope. Read at a spell's start and end
 * (runtime/settle.ts), a small file each; a process still loading counts nothing, so that one
 * started by a recycle never sets off the next.
 */
export function renderPoolGrowthBytes(): number {
  let bytes = 0;
  for (const p of processes) bytes += p.grownBytes();
  return bytes;
}

/** The page size of /proc's statm (4 KiB on every Linux the decoder targets). */
const PAGE_BYTES = 4096;

/** Process `pid`'s resident memory now, 0 where /proc does not tell (not Linux, or it has just ended). */
function residentBytes(pid: number | undefined): number {
  try {
    return Number(readFileSync(`/proc/${pid}/statm`, "latin1").split(" ")[1]) * PAGE_BYTES;
  } catch {
    return 0;
  }
}

/** What the decoder's /metrics reports of the pool (metrics.ts): processes started, renders running, renders waiting. */
export function renderPoolStats(): { threads: number; busy: number; queued: number; renders: number; recycles: number } {
  const busy = [...processes].filter((p) => p.job).length;
  return { threads: processes.size, busy, queued: queue.length, renders, recycles };
}

/** Renders `req` in a pool process, its reads served from `cog`'s source. */
export function renderInPool(cog: Cog, req: ResolvedImageRequest, signal: AbortSignal, work: Reservation): Promise<RenderedImage> {
  return runInPool({ kind: "image", source: wireSource(cog), req, cacheBytes: blockRowsBytes(cog, req) }, [cog], signal, work);
}

/**
 * Paints a map tile of the full partition in a pool process, its assets' sources read from the
 * COGs open here. Its reservation counts every asset's decoded blocks: the render's own block
 * cache may hold them all, so that a tile's bands never decode a block twice.
 */
export function paintInPool(assets: TileAsset[], req: TileRequest, what: string, signal: AbortSignal, work: Reservation): Promise<RenderedImage> {
  const cogs = [...new Set(assets.flatMap((a) => a.bands.map((b) => b.cog)))];
  const wired = assets.map(({ label, channels, bands }) => ({ label, channels, bands: bands.map(({ name, cog, band }) => ({ name, band, source: cogs.indexOf(cog) })) }));
  return runInPool({ kind: "tile", sources: cogs.map(wireSource), assets: wired, req, what, cacheBytes: work.bytes }, cogs, signal, work);
}

const wireSource = ({ source: { version, size, label, firstBytes } }: Cog): WireSource => ({ version, size, label, firstBytes });

/**
 * Runs `task` in a pool process, after those handed over before it. The reservation stays held
 * here for the whole render; the process's reads are served from `cogs`' sources under `signal`.
 */
async function runInPool(
  task: DistributiveOmit<RenderTask, "workBytes" | "budgetBytes">,
  cogs: Cog[],
  signal: AbortSignal,
  work: Reservation,
): Promise<RenderedImage> {
  signal.throwIfAborted();
  inPool++;
  renders++;
  try {
    const handed = { ...task, workBytes: work.bytes, budgetBytes: cogs[0].budget.limitBytes } as RenderTask;
    const out = await new Promise<RenderedImage | Error>((finish) => {
      const job: Job = { task: handed, cogs, signal, finish };
      const abort = () => abortJob(job);
      signal.addEventListener("abort", abort, { once: true });
      job.finish = (result) => {
        signal.removeEventListener("abort", abort);
        finish(result);
      };
      queue.push(job);
      dispatch();
    });
    signal.throwIfAborted();
    if (out instanceof Error) throw out;
    return out;
  } finally {
    inPool--;
  }
}

/** A waiting render leaves the queue; a running one is told, and stops at its next read or stage. */
function abortJob(job: Job): void {
  if (job.process) return job.process.send({ abort: toWire(job.signal.reason) });
  queue.splice(queue.indexOf(job), 1);
  job.finish(job.signal.reason);
}

/** Omit over each member of a union, keeping it a union. */
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/**
 * Replaces the pool, when idle and it has rendered since it started, by a fresh process (started
 * now), ending the old ones: a process keeps what a large render grew (its heap, pixel buffers
 * awaiting a collection an idle process never runs, its allocator's arenas).
 */
export function recycleRenderPool(): void {
  if (inPool > 0 || renders === rendersAtStart) return;
  recycles++;
  for (const p of [...processes]) p.end();
  processes.add(new RenderProcess());
  rendersAtStart = renders;
}

/** Serves one of a render's reads. */
async function serveRead(cog: Cog, { id, offset, length }: ReadRequest, signal: AbortSignal, reply: (m: MainMessage) => void): Promise<void> {
  try {
    reply({ id, bytes: await cog.source.read(offset, length, signal) });
  } catch (e) {
    reply({ id, error: toWire(e) });
  }
}

/** Two rows of the blocks the render reads: what a band's halo reads again of the band before. */
function blockRowsBytes(cog: Cog, req: ResolvedImageRequest): number {
  const index = chooseLevel(cog.levels, req.region, req.width, req.height);
  const level = cog.levels[index];
  const [x0, , x1] = windowAtLevel(cog.levels[0], level, req.region);
  const across = Math.ceil(x1 / level.tileWidth) - Math.floor(x0 / level.tileWidth);
  return 2 * across * (level.blocks?.blockBytes ?? 0);
}
