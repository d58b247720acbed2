// A render-pool process (render-pool.ts starts it at nice +10, so every thread it has runs below
// the decoder's): renders one task at a time (render-worker.ts) over its IPC channel to the
// decoder, which serves its reads. The answer goes back in pieces of ANSWER_PIECE_BYTES, its
// length first: the decoder's main thread reads each message whole before it deserializes it,
// and a 30 MB answer in one message held its event loop for 21–28 ms, in pieces copied into a
// buffer of its length 5–12 ms (gathered at the end, 24–29).

import { configureSharp } from "./render";
import { renderTask, toWire, type MainMessage, type ReadRequest, type RenderTask, type TaskChannel, type WireError } from "./render-worker";

/** The most bytes of an answer one message carries. */
export const ANSWER_PIECE_BYTES = 1024 * 1024;

/** What the decoder sends: a task, and the messages of the running one. */
export type ToRenderProcess = { task: RenderTask } | MainMessage;

/** What this process sends: it is ready, a read of the running task, and its answer (its length, then its pieces) or its error. */
export type FromRenderProcess =
  | { ready: true }
  | { read: ReadRequest }
  | { answer: { contentType: string; bytes: number } }
  | { piece: Uint8Array }
  | { error: WireError };

function send(m: FromRenderProcess): void {
  process.send!(m);
}

/** The running task's listener for the decoder's messages. */
let listener: ((m: MainMessage) => void) | undefined;

const channel: TaskChannel = {
  post: (read) => send({ read }),
  listen(l) {
    listener = l;
    return () => {
      if (listener === l) listener = undefined;
    };
  },
};

async function run(task: RenderTask): Promise<void> {
  const out = await renderTask(task, channel).catch((e: unknown) => ({ error: toWire(e) }));
  if ("error" in out) return send(out);
  send({ answer: { contentType: out.contentType, bytes: out.body.byteLength } });
  for (let at = 0; at < out.body.byteLength; at += ANSWER_PIECE_BYTES) send({ piece: out.body.subarray(at, at + ANSWER_PIECE_BYTES) });
}

configureSharp();
process.on("message", (m: ToRenderProcess) => ("task" in m ? void run(m.task) : listener?.(m)));
// The channel closes when the decoder ends, by any means (even SIGKILL): no render outlives it.
process.on("disconnect", () => process.exit(0));
send({ ready: true });
