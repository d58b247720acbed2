// A decoder's answer as the admission DO passes it on. Below STREAM_ANSWER_BYTES it is read
// whole: one buffer, however many clients it answers (a Response over an ArrayBuffer shares its
// bytes, it does not copy them). At or above it, or of no declared length, it is a stream: its
// bytes pass through a chunk at a time as the decoder sends them and its one reader takes them,
// so what the DO holds for it does not grow with its size. A stream keeps its declared length,
// so one the decoder cuts short errors at its reader rather than ending as if whole.

export interface DecodedAnswer {
  status: number;
  headers: Headers;
  body: ArrayBuffer | ReadableStream<Uint8Array>;
}

/** The answer as a response: a buffer's bytes shared, never copied; a stream for one reader only. */
export const answerResponse = ({ status, headers, body }: DecodedAnswer) => new Response(body, { status, headers });

/** The content-length an answer declares, if any. */
export function declaredLength(headers: Headers): number | undefined {
  const text = headers.get("content-length");
  return text !== null && /^\d+$/.test(text) ? Number(text) : undefined;
}

/** The body of an answer to pass on as a stream: none (read it whole) when it declares fewer than `streamAnswerBytes`. */
export function streamedBody(res: Response, streamAnswerBytes: number): ReadableStream<Uint8Array> | null {
  const length = declaredLength(res.headers);
  return length !== undefined && length < streamAnswerBytes ? null : res.body;
}

/** A pipe that passes `length` bytes and errors on any other count, or passes any when it is unknown. */
export const lengthPipe = (length?: number): TransformStream<Uint8Array, Uint8Array> =>
  length === undefined ? new IdentityTransformStream() : new FixedLengthStream(length);

/** The most a relay reads at once: a decoder's socket hands over 4 KiB reads unless asked for more. */
const RELAY_CHUNK_BYTES = 64 * 1024;

/**
 * Copies `source` into every writer in step, a chunk at a time: the next is read once each
 * writer's reader has taken the last (a write to a pipe without a high-water mark completes when
 * it is read), so one chunk is held whatever the answer's size and the readers' pace, and the
 * slowest reader sets the pace. A writer whose reader has gone is dropped. Resolves true once
 * the source has ended (the writers closed), false when every reader has gone (the source
 * cancelled); rejects with the writers aborted, their readers' streams erroring, when the source
 * fails (the error is the source's) or `signal` aborts.
 */
export async function relay(source: ReadableStream<Uint8Array>, writers: WritableStreamDefaultWriter<Uint8Array>[], signal?: AbortSignal): Promise<boolean> {
  const reader = source.getReader({ mode: "byob" });
  const stop = () => {
    void reader.cancel(signal?.reason).catch(() => {});
    for (const writer of writers) void writer.abort(signal?.reason).catch(() => {});
  };
  signal?.addEventListener("abort", stop, { once: true });
  try {
    let buffer = new ArrayBuffer(RELAY_CHUNK_BYTES);
    for (;;) {
      const { done, value } = await reader.read(new Uint8Array(buffer));
      signal?.throwIfAborted();
      if (done) break;
      const written = await Promise.allSettled(writers.map((writer) => writer.write(value)));
      signal?.throwIfAborted();
      writers = writers.filter((_, i) => written[i].status === "fulfilled");
      if (writers.length === 0) {
        await reader.cancel();
        return false;
      }
      buffer = value.buffer; // read out by every reader: the next read may fill it again
    }
    await Promise.all(writers.map((writer) => writer.close()));
    return true;
  } catch (err) {
    await Promise.allSettled([reader.cancel(err), ...writers.map((writer) => writer.abort(err))]);
    throw err;
  } finally {
    signal?.removeEventListener("abort", stop);
  }
}
