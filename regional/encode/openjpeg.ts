// JPEG 2000 codestreams from 8-bit pixels, with OpenJPEG built to WebAssembly (libvips here has
// no JPEG 2000 encoder), run on one worker thread (openjpeg-worker.ts) so that an encode never
// stalls the decoder's event loop. The worker starts on the first jp2 answer and takes encodes
// one at a time; if it dies, the encodes it held fail and the next one starts a new worker.

import { Worker } from "node:worker_threads";
import { workerScript } from "../decoder-files";
import type { J2kInput, J2kReply, J2kRequest } from "./openjpeg-worker";

export type { J2kInput };

interface Pending {
  resolve(codestream: Uint8Array): void;
  reject(err: Error): void;
}

let worker: Worker | undefined;
const pending = new Map<number, Pending>();
let nextId = 0;

/** The J2K codestream (FF4F FF51 …) of `input`. */
export function encodeJ2k(input: J2kInput): Promise<Uint8Array> {
  const id = nextId++;
  const encoder = openJpegWorker();
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject });
    // A worker with encodes to answer keeps the process alive; an idle one does not.
    encoder.ref();
    // The pixels are copied to the worker (a buffer from sharp may not be transferable).
    encoder.postMessage({ id, input } satisfies J2kRequest);
  });
}

/** Settles the encode `id` is waiting for, if any. */
function settle(started: Worker, id: number, outcome: (waiting: Pending) => void): void {
  const waiting = pending.get(id);
  pending.delete(id);
  if (waiting) outcome(waiting);
  if (pending.size === 0) started.unref();
}

function openJpegWorker(): Worker {
  if (worker) return worker;
  const script = workerScript("encode/openjpeg-worker");
  const started = new Worker(script.url, { execArgv: script.execArgv });
  started.on("message", (reply: J2kReply) =>
    settle(started, reply.id, (waiting) => ("error" in reply ? waiting.reject(new Error(reply.error)) : waiting.resolve(reply.codestream))),
  );
  const fail = (err: Error) => {
    if (worker === started) worker = undefined;
    for (const id of [...pending.keys()]) settle(started, id, (waiting) => waiting.reject(err));
  };
  started.on("error", fail);
  started.on("exit", (code) => fail(new Error(`the OpenJPEG worker exited (code ${code})`)));
  return (worker = started);
}
