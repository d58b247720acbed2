// A render-pool thread (render-pool.ts): renders one large request, read, assembled, resized and
// encoded here, so none of that work (block copies, big-buffer allocation and collection,
// synchronous block decodes, a map tile's warps and expressions) runs on the decoder's event
// loop, and all of it runs at the pool's lower priority. An IIIF image reads one source; a map
// tile (a mosaic's, or one COG's) the sources of every asset it paints. Their bytes still come
// through the main thread, which owns the store connections: this thread asks for byte ranges on
// the task's port and gets them back transferred, not copied.

import { isMainThread, type MessagePort } from "node:worker_threads";
import { HttpError, type ErrorKind } from "../../shared/errors";
import type { ResolvedImageRequest } from "../../shared/iiif/resolve";
import { DecodedBlockCache } from "../cog/block-cache";
import { Cog } from "../cog/cog";
import { composeTile, type PaintRequest, type TileAsset } from "../maps/compose-tile";
import { renderCheapest, type RenderedImage } from "./render";
import type { Source } from "../source/source";
import { WorkBudget, type Reservation } from "../runtime/work-budget";
import { addTileMatrixSets } from "../../shared/maps/tile-matrix-sets";
import { operatorSetDocuments } from "../maps/operator-sets";

// A map tile here may be on one of the operator's sets: a pool thread has modules of its own, so
// it adds them as the main thread did (which checked them before starting the pool). The main
// thread imports this module too, for its wire helpers: it adds them itself.
if (!isMainThread) addTileMatrixSets(operatorSetDocuments(process.env));

/** A source as the main thread opened it; its opening bytes spare the header's reads. */
export interface WireSource {
  version: string;
  size: number;
  label: string;
  firstBytes?: Uint8Array;
}

/** A map tile's asset, its bands naming sources by their index in the task's `sources`. */
export interface WireAsset {
  label: string;
  bands: { name: string; source: number; band: number }[];
  channels: string[];
}

/** What every render is handed over with. */
interface TaskBase {
  /** The bytes the main thread reserved for this render (its work budget keeps the account). */
  workBytes: number;
  /** The decoder's work allowance, so the render reads as the main thread would. */
  budgetBytes: number;
  /** Cap of this render's own block cache: what it reads again (a band's halo rows, a tile's blocks). */
  cacheBytes: number;
  port: MessagePort;
}

/** One render, as the main thread hands it over: an IIIF image, or a map tile. */
export type RenderTask =
  | (TaskBase & { kind: "image"; source: WireSource; req: ResolvedImageRequest })
  | (TaskBase & { kind: "tile"; sources: WireSource[]; assets: WireAsset[]; req: PaintRequest; what: string });

/** Messages on the task's port: this thread's reads (of source `source`), the main thread's answers, and its abort. */
export type ReadRequest = { id: number; source: number; offset: number; length: number };
export type ReadReply = { id: number; bytes: Uint8Array } | { id: number; error: WireError };
export type MainMessage = ReadReply | { abort: WireError };

/** An error as it crosses threads: an HttpError keeps its kind, Retry-After and detail. */
export interface WireError {
  message: string;
  name: string;
  kind?: ErrorKind;
  retryAfterSeconds?: number;
  detail?: string;
}

export type RenderOutcome = RenderedImage | { error: WireError };

export function toWire(e: unknown): WireError {
  const err = e instanceof Error ? e : new Error(String(e));
  return e instanceof HttpError
    ? { message: e.message, name: e.name, kind: e.kind, retryAfterSeconds: e.retryAfterSeconds, detail: e.detail }
    : { message: err.message, name: err.name };
}

export function fromWire(w: WireError): Error {
  if (w.kind) return new HttpError(w.kind, w.message, w.retryAfterSeconds, w.detail);
  return w.name === "AbortError" || w.name === "TimeoutError" ? new DOMException(w.message, w.name) : new Error(w.message);
}

export default async function renderTask(task: RenderTask): Promise<RenderOutcome> {
  const controller = new AbortController();
  const port = new TaskPort(task.port, controller);
  const budget = new WorkBudget(task.budgetBytes);
  const cache = new DecodedBlockCache(task.cacheBytes);
  const cogs: Cog[] = [];
  const open = async (source: WireSource, index: number) => {
    const cog = await Cog.open(port.source(source, index), { budget, cache }, controller.signal);
    cogs.push(cog);
    return cog;
  };
  try {
    const work = budget.takeGranted(task.workBytes);
    const out =
      task.kind === "image"
        ? await renderCheapest(await open(task.source, 0), task.req, controller.signal, work)
        : await paintTile(task, open, controller.signal, work);
    // A pooled answer's buffer belongs to this thread's pool: its bytes cross as a copy, and
    // only plain fields can cross at all.
    const body = out.done ? Buffer.from(out.body) : out.body;
    out.done?.();
    return { body, contentType: out.contentType };
  } catch (e) {
    return { error: toWire(controller.signal.aborted ? controller.signal.reason : e) };
  } finally {
    await Promise.all(cogs.map((cog) => cog.close()));
    port.end();
  }
}

/** A map tile over its assets' sources, opened here, composed and painted as the main thread would. */
async function paintTile(
  task: Extract<RenderTask, { kind: "tile" }>,
  open: (source: WireSource, index: number) => Promise<Cog>,
  signal: AbortSignal,
  work: Reservation,
) {
  const cogs: Cog[] = [];
  for (const [i, source] of task.sources.entries()) cogs.push(await open(source, i));
  const assets: TileAsset[] = task.assets.map((a) => ({ ...a, bands: a.bands.map((b) => ({ name: b.name, cog: cogs[b.source], band: b.band })) }));
  const prepared = await composeTile(assets, task.req, task.what, signal);
  return prepared.render(signal, work, "full");
}

/** The task's port: reads of any of its sources go out on it, their answers and the abort come back. */
class TaskPort {
  private readonly waiting = new Map<number, { resolve(b: Uint8Array): void; reject(e: Error): void }>();
  private nextId = 0;

  constructor(
    private readonly port: MessagePort,
    controller: AbortController,
  ) {
    port.on("message", (m: MainMessage) => {
      if ("abort" in m) return controller.abort(fromWire(m.abort));
      const waiter = this.waiting.get(m.id);
      this.waiting.delete(m.id);
      if ("error" in m) waiter?.reject(fromWire(m.error));
      else waiter?.resolve(m.bytes);
    });
  }

  /** Source `index` of the task, read through the main thread. */
  source({ version, size, label, firstBytes }: WireSource, index: number): Source {
    const read = (offset: number, length: number, signal?: AbortSignal) => {
      signal?.throwIfAborted();
      const id = this.nextId++;
      return new Promise<Uint8Array>((resolve, reject) => {
        this.waiting.set(id, { resolve, reject });
        this.port.postMessage({ id, source: index, offset, length } satisfies ReadRequest);
      });
    };
    return { version, size, label, firstBytes, read, close: async () => {} };
  }

  /** The task is over: no more reads, and the port no longer keeps this thread busy. */
  end(): void {
    this.port.close();
  }
}
