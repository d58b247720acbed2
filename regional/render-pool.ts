// The render pool: worker threads (piscina) that render large IIIF requests (render-worker.ts),
// so that a full decode of seconds never holds the decoder's event loop, and the loop keeps
// answering tiles, heartbeats and deadlines while it runs. The main thread keeps what it owns:
// the work reservation (held until the render returns), the request's signal (passed on as an
// abort), and the source's I/O (the worker's reads are served here and their bytes
// transferred). Fulls bypass the shared decoded-block cache: their blocks are read once, band
// by band, and would only evict the blocks viewers come back to; sharing it would move every
// decoded block between threads.

import { availableParallelism } from "node:os";
import { MessageChannel, type MessagePort } from "node:worker_threads";
import { Piscina } from "piscina";
import { Counter, Gauge } from "prom-client";
import type { ResolvedImageRequest } from "../shared/iiif/resolve";
import type { Cog } from "./cog/cog";
import { registry } from "./metrics";
import type { RenderedImage } from "./render";
import { fromWire, toWire, type MainMessage, type ReadRequest, type RenderOutcome, type RenderTask } from "./render-worker";
import type { Reservation } from "./work-budget";

/** Idle threads above none end after this long; the next large render starts one again. */
const IDLE_TIMEOUT_MS = 60_000;

let threads = availableParallelism();
let pool: Piscina<RenderTask, RenderOutcome> | undefined;

/** Sets how many large renders run at once (the rest wait their turn); call before the first. */
export function configureRenderPool(maxThreads: number): void {
  threads = maxThreads;
}

function renderPool(): Piscina<RenderTask, RenderOutcome> {
  return (pool ??= new Piscina({
    filename: new URL("./render-worker.ts", import.meta.url).href,
    minThreads: 0,
    maxThreads: threads,
    idleTimeout: IDLE_TIMEOUT_MS,
    // geotiff.js loads web-worker, which on any thread but the main one reads workerData to
    // find its own script: an object without one tells it this thread is not its worker.
    workerData: {},
  }));
}

const offLoop = new Counter({
  name: "tessera_decoder_render_pool_renders_total",
  help: "Large renders run on the render pool's threads, off the event loop.",
  registers: [registry],
});
const poolGauge = (name: string, help: string, read: (p: Piscina) => number) =>
  new Gauge({ name, help, registers: [registry], collect() { this.set(pool ? read(pool) : 0); } });
poolGauge("tessera_decoder_render_pool_threads", "Render-pool threads started now.", (p) => p.threads.length);
poolGauge("tessera_decoder_render_pool_busy", "Large renders running on the pool now.", (p) => Math.max(0, inPool - p.queueSize));
poolGauge("tessera_decoder_render_pool_queued", "Large renders admitted and waiting for a pool thread.", (p) => p.queueSize);

/** Renders handed to the pool and not yet returned (running or queued). */
let inPool = 0;

/**
 * Renders `req` on a pool thread. The reservation stays held on this thread for the whole
 * render; the worker's reads are served from `cog`'s source under `signal`.
 */
export async function renderInPool(cog: Cog, req: ResolvedImageRequest, signal: AbortSignal, work: Reservation): Promise<RenderedImage> {
  signal.throwIfAborted();
  const { port1, port2 } = new MessageChannel();
  port1.on("message", (m: ReadRequest) => void serveRead(cog, m, signal, port1));
  const abort = () => port1.postMessage({ abort: toWire(signal.reason) } satisfies MainMessage);
  signal.addEventListener("abort", abort, { once: true });
  const { version, size, label } = cog.source;
  const task: RenderTask = {
    source: { version, size, label },
    req,
    workBytes: work.bytes,
    budgetBytes: cog.budget.limitBytes,
    cacheBytes: blockRowsBytes(cog),
    port: port2,
  };
  inPool++;
  offLoop.inc();
  try {
    const out = await renderPool().run(task, { transferList: [port2] });
    signal.throwIfAborted();
    if ("error" in out) throw fromWire(out.error);
    return { body: Buffer.from(out.body.buffer, out.body.byteOffset, out.body.byteLength), contentType: out.contentType };
  } finally {
    inPool--;
    signal.removeEventListener("abort", abort);
    port1.close();
  }
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

/** Two rows of blocks of the widest level: what a band's halo reads again from the band before. */
function blockRowsBytes(cog: Cog): number {
  return Math.max(1, ...cog.levels.map((l) => (l.blocks ? 2 * l.blocks.tilesAcross * l.blocks.blockBytes : 0)));
}
