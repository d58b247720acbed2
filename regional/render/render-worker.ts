// A render-pool thread (render-pool.ts): renders one large IIIF request, read, assembled,
// resized and encoded here, so none of that work (block copies, big-buffer allocation and
// collection, synchronous block decodes) runs on the decoder's event loop. The source's bytes
// still come through the main thread, which owns the store connection: this thread asks for
// byte ranges on the task's port and gets them back transferred, not copied.

import type { MessagePort } from "node:worker_threads";
import { HttpError, type ErrorKind } from "../../shared/errors";
import type { ResolvedImageRequest } from "../../shared/iiif/resolve";
import { DecodedBlockCache } from "../cog/block-cache";
import { Cog } from "../cog/cog";
import { renderCheapest, type RenderedImage } from "./render";
import type { Source } from "../source/source";
import { WorkBudget } from "../runtime/work-budget";

/** One render, as the main thread hands it over. */
export interface RenderTask {
  /** The source as the main thread opened it; its opening bytes spare the header's reads. */
  source: { version: string; size: number; label: string; firstBytes?: Uint8Array };
  req: ResolvedImageRequest;
  /** The bytes the main thread reserved for this render (its work budget keeps the account). */
  workBytes: number;
  /** The decoder's work allowance, so the render reads as the main thread would. */
  budgetBytes: number;
  /** Cap of this render's own block cache: enough that a band's halo rows are not decoded twice. */
  cacheBytes: number;
  port: MessagePort;
}

/** Messages on the task's port: this thread's reads, the main thread's answers, and its abort. */
export type ReadRequest = { id: number; offset: number; length: number };
export type ReadReply = { id: number; bytes: Uint8Array } | { id: number; error: WireError };
export type MainMessage = ReadReply | { abort: WireError };

/** An error as it crosses threads: an HttpError keeps its kind and Retry-After. */
export interface WireError {
  message: string;
  name: string;
  kind?: ErrorKind;
  retryAfterSeconds?: number;
}

export type RenderOutcome = RenderedImage | { error: WireError };

export function toWire(e: unknown): WireError {
  const err = e instanceof Error ? e : new Error(String(e));
  return e instanceof HttpError
    ? { message: e.message, name: e.name, kind: e.kind, retryAfterSeconds: e.retryAfterSeconds }
    : { message: err.message, name: err.name };
}

export function fromWire(w: WireError): Error {
  if (w.kind) return new HttpError(w.kind, w.message, w.retryAfterSeconds);
  return w.name === "AbortError" || w.name === "TimeoutError" ? new DOMException(w.message, w.name) : new Error(w.message);
}

export default async function renderTask(task: RenderTask): Promise<RenderOutcome> {
  const controller = new AbortController();
  const source = new PortSource(task, controller);
  let cog: Cog | undefined;
  try {
    const budget = new WorkBudget(task.budgetBytes);
    cog = await Cog.open(source, { budget, cache: new DecodedBlockCache(task.cacheBytes) }, controller.signal);
    const out = await renderCheapest(cog, task.req, controller.signal, budget.takeGranted(task.workBytes));
    // A pooled answer's buffer belongs to this thread's pool: its bytes cross as a copy, and
    // only plain fields can cross at all.
    const body = out.done ? Buffer.from(out.body) : out.body;
    out.done?.();
    return { body, contentType: out.contentType };
  } catch (e) {
    return { error: toWire(controller.signal.aborted ? controller.signal.reason : e) };
  } finally {
    await cog?.close();
    source.end();
  }
}

/** The task's source, read through the main thread. */
class PortSource implements Source {
  readonly version: string;
  readonly size: number;
  readonly label: string;
  readonly firstBytes?: Uint8Array;
  private readonly port: MessagePort;
  private readonly waiting = new Map<number, { resolve(b: Uint8Array): void; reject(e: Error): void }>();
  private nextId = 0;

  constructor(task: RenderTask, controller: AbortController) {
    ({ version: this.version, size: this.size, label: this.label, firstBytes: this.firstBytes } = task.source);
    this.port = task.port;
    this.port.on("message", (m: MainMessage) => {
      if ("abort" in m) return controller.abort(fromWire(m.abort));
      const waiter = this.waiting.get(m.id);
      this.waiting.delete(m.id);
      if ("error" in m) waiter?.reject(fromWire(m.error));
      else waiter?.resolve(m.bytes);
    });
  }

  read(offset: number, length: number, signal?: AbortSignal): Promise<Uint8Array> {
    signal?.throwIfAborted();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.port.postMessage({ id, offset, length } satisfies ReadRequest);
    });
  }

  async close(): Promise<void> {}

  /** The task is over: no more reads, and the port no longer keeps this thread busy. */
  end(): void {
    this.port.close();
  }
}
