// The render pool: worker threads (piscina) that render the full partition's decodes, large IIIF
// requests and costly map tiles (render-worker.ts), so that a decode of seconds never holds the
// decoder's event loop, and the loop keeps answering tiles, heartbeats and deadlines while it
// runs, at a lower priority than tiles' work. The main thread keeps what it owns: the work
// reservation (held until the render returns), the request's signal (passed on as an abort),
// and the sources' I/O (the worker's reads are served here and their bytes transferred). Fulls
// bypass the shared decoded-block cache: their blocks are read once, and would only evict the
// blocks viewers come back to; sharing it would move every decoded block between threads.

import { availableParallelism } from "node:os";
import { MessageChannel, type MessagePort } from "node:worker_threads";
import { Piscina } from "piscina";
import type { ResolvedImageRequest } from "../../shared/iiif/resolve";
import type { Cog } from "../cog/cog";
import { workerScript } from "../decoder-files";
import { chooseLevel, windowAtLevel } from "../../shared/levels";
import type { RenderedImage } from "./render";
import { fromWire, toWire, type MainMessage, type ReadRequest, type RenderOutcome, type RenderTask, type WireSource } from "./render-worker";
import type { PaintRequest, TileAsset } from "../maps/compose-tile";
import { BACKGROUND_NICE_INCREMENT } from "../runtime/priority";
import type { Reservation } from "../runtime/work-budget";

/** Idle threads beyond the first end after this long; a busier moment starts them again. */
const IDLE_TIMEOUT_MS = 60_000;

let threads = availableParallelism();
let pool: Piscina<RenderTask, RenderOutcome> | undefined;

/**
 * Sets how many large renders run at once (the rest wait their turn) and starts the first
 * thread now: loading a thread's modules takes about a second, which no render should wait.
 */
export function configureRenderPool(maxThreads: number): void {
  threads = maxThreads;
  renderPool();
}

function renderPool(): Piscina<RenderTask, RenderOutcome> {
  if (!pool) {
    pool = startPool();
    // A thread lost with no render on it (a failed start) is logged: unheard, piscina's error
    // event would end the decoder.
    pool.on("error", (err: unknown) =>
      process.stderr.write(`${JSON.stringify({ level: "error", msg: "render pool thread failed", error: String(err) })}\n`),
    );
  }
  return pool;
}

function startPool(): Piscina<RenderTask, RenderOutcome> {
  const script = workerScript("render/render-worker");
  return new Piscina({
    filename: script.url.href,
    minThreads: 1,
    maxThreads: threads,
    idleTimeout: IDLE_TIMEOUT_MS,
    // A full is throughput, a tile is latency: on a busy machine the scheduler runs the event
    // loop and the libuv pool (tiles' decodes and encodes) first; idle CPU still goes to fulls.
    niceIncrement: BACKGROUND_NICE_INCREMENT,
    // From source the worker is TypeScript: tsx's loader, whether or not this process started with it.
    execArgv: script.execArgv,
    // geotiff.js loads web-worker, which on any thread but the main one reads workerData to
    // find its own script: an object without one tells it this thread is not its worker.
    workerData: {},
  });
}

/** Renders handed to the pool and not yet returned (running or queued). */
let inPool = 0;

/** Renders ever handed to the pool, and the times the pool was replaced to return its memory. */
let renders = 0;
let recycles = 0;
/** `renders` when the current pool started. */
let rendersAtStart = 0;

/** What the decoder's /metrics reports of the pool (metrics.ts). */
export function renderPoolStats(): { threads: number; busy: number; queued: number; renders: number; recycles: number } {
  const queued = pool?.queueSize ?? 0;
  return { threads: pool?.threads.length ?? 0, busy: Math.max(0, inPool - queued), queued, renders, recycles };
}

/** Renders `req` on a pool thread, its reads served from `cog`'s source. */
export function renderInPool(cog: Cog, req: ResolvedImageRequest, signal: AbortSignal, work: Reservation): Promise<RenderedImage> {
  return runInPool({ kind: "image", source: wireSource(cog), req, cacheBytes: blockRowsBytes(cog, req) }, [cog], signal, work);
}

/**
 * Paints a map tile of the full partition on a pool thread, its assets' sources read from the
 * COGs open here. Its reservation counts every asset's decoded blocks: the thread's own block
 * cache may hold them all, so that a tile's bands never decode a block twice.
 */
export function paintInPool(assets: TileAsset[], req: PaintRequest, what: string, signal: AbortSignal, work: Reservation): Promise<RenderedImage> {
  const cogs = [...new Set(assets.flatMap((a) => a.bands.map((b) => b.cog)))];
  const wired = assets.map(({ label, channels, bands }) => ({ label, channels, bands: bands.map(({ name, cog, band }) => ({ name, band, source: cogs.indexOf(cog) })) }));
  return runInPool({ kind: "tile", sources: cogs.map(wireSource), assets: wired, req, what, cacheBytes: work.bytes }, cogs, signal, work);
}

const wireSource = ({ source: { version, size, label, firstBytes } }: Cog): WireSource => ({ version, size, label, firstBytes });

/**
 * Runs `task` on a pool thread. The reservation stays held on this thread for the whole render;
 * the worker's reads are served from `cogs`' sources under `signal`.
 */
async function runInPool(
  task: DistributiveOmit<RenderTask, "workBytes" | "budgetBytes" | "port">,
  cogs: Cog[],
  signal: AbortSignal,
  work: Reservation,
): Promise<RenderedImage> {
  signal.throwIfAborted();
  const { port1, port2 } = new MessageChannel();
  port1.on("message", (m: ReadRequest) => void serveRead(cogs[m.source], m, signal, port1));
  const abort = () => port1.postMessage({ abort: toWire(signal.reason) } satisfies MainMessage);
  signal.addEventListener("abort", abort, { once: true });
  inPool++;
  renders++;
  try {
    const handed = { ...task, workBytes: work.bytes, budgetBytes: cogs[0].budget.limitBytes, port: port2 } as RenderTask;
    const out = await renderPool().run(handed, { transferList: [port2] });
    signal.throwIfAborted();
    if ("error" in out) throw fromWire(out.error);
    return { body: Buffer.from(out.body.buffer, out.body.byteOffset, out.body.byteLength), contentType: out.contentType };
  } finally {
    inPool--;
    signal.removeEventListener("abort", abort);
    port1.close();
  }
}

/** Omit over each member of a union, keeping it a union. */
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/**
 * Replaces the pool, when idle and it has rendered since it started, by a fresh one (its first
 * thread started now), ending the old one's threads: a thread keeps what a large render grew (its
 * heap, pixel buffers awaiting a collection an idle thread never runs, its allocator's arenas).
 */
export function recycleRenderPool(): void {
  if (inPool > 0 || !pool || renders === rendersAtStart) return;
  const old = pool;
  pool = undefined;
  recycles++;
  renderPool();
  rendersAtStart = renders;
  void old.destroy();
}

/** Serves one of the worker's reads, its bytes transferred when they are a buffer of their own. */
async function serveRead(cog: Cog, { id, offset, length }: ReadRequest, signal: AbortSignal, port: MessagePort): Promise<void> {
  try {
    const bytes = await cog.source.read(offset, length, signal);
    const own = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer;
    port.postMessage({ id, bytes } satisfies MainMessage, own ? [bytes.buffer as ArrayBuffer] : []);
  } catch (e) {
    port.postMessage({ id, error: toWire(e) } satisfies MainMessage);
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
