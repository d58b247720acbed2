// A source's stored bytes (/file), streamed from a decoder. Nothing is decoded, so no decode
// permit is taken; transfers have a cap of their own (MAX_FILE_TRANSFERS, then 503).
// The request's deadline (REQUEST_TIMEOUT from its arrival at the edge, its metadata's admission
// included) bounds the wait for the decoder's headers; once the bytes flow, a transfer is
// cut only when a window of REQUEST_TIMEOUT passes with fewer than FILE_MIN_RATE a second in it
// (a stall, or a client reading a trickle to keep its place), or the client leaves: a large file
// read at any honest speed is never cut short by the deadline.
import { HttpError } from "../../shared/errors";
import type { SignedLimits } from "../../shared/protocol";
import type { EdgeConfig } from "../env";
import type { Deadline } from "./coalesce";
import { decoderHeaders, type DecoderCalls } from "./decoder-calls";
import { isDrainingAnswer } from "./draining";
import { checkAnswer, failedWhileAnswering } from "./faults";

export class FileTransfers {
  /** Transfers streaming now: they hold no decode permit, only a place under their own cap. */
  inProgress = 0;
  /** Transfers refused with 503 because MAX_FILE_TRANSFERS were streaming. */
  shed = 0;

  constructor(
    private readonly config: Pick<EdgeConfig, "maxFileTransfers" | "fileMinRate" | "decoderSecret" | "admission">,
    private readonly calls: Pick<DecoderCalls, "reachableDecoder" | "resendFromDraining" | "fetchDecoder">,
    private readonly waitUntil: (promise: Promise<unknown>) => void,
    /** The request's deadline, counted when it passes (Leases.deadline). */
    private readonly deadline: (at: number) => Deadline,
  ) {}

  /** Streams the decoder's answer for `path` until its last byte, a stall, or the client leaving; its headers by `deadlineAt`. */
  async transfer(path: string, client: AbortSignal, deadlineAt: number, requestId?: string): Promise<Response> {
    const { maxFileTransfers } = this.config;
    if (this.inProgress >= maxFileTransfers) {
      this.shed++;
      throw new HttpError("overloaded", `${maxFileTransfers} file transfers in progress; retry shortly`, 1);
    }
    this.inProgress++;
    const cut = new AbortController();
    const { requestTimeoutMs } = this.config.admission;
    const slow = () => cut.abort(new HttpError("deadline", `the transfer moved under FILE_MIN_RATE (${this.config.fileMinRate} bytes/s) for REQUEST_TIMEOUT`));
    const floor = new RateFloor(requestTimeoutMs, (this.config.fileMinRate * requestTimeoutMs) / 1000, slow);
    const onClient = () => cut.abort(client.reason);
    client.addEventListener("abort", onClient, { once: true });
    const deadline = this.deadline(deadlineAt);
    let finished = false;
    const finish = () => {
      if (finished) return;
      finished = true;
      floor.stop();
      deadline.clear();
      client.removeEventListener("abort", onClient);
      this.inProgress--;
    };
    try {
      if (client.aborted) throw client.reason;
      const upstream = await this.answerFor(path, AbortSignal.any([cut.signal, deadline.signal]), deadlineAt, requestId);
      deadline.clear(); // the headers are in: from now on the pace bounds the transfer, never its length
      if (!upstream.body) {
        finish();
        return upstream;
      }
      floor.restart(); // the first window starts with the body
      const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, stream) {
          floor.count(chunk.byteLength);
          stream.enqueue(chunk);
        },
      });
      this.waitUntil(upstream.body.pipeTo(writable, { signal: cut.signal }).catch(() => {}).finally(finish));
      return new Response(readable, { status: upstream.status, headers: upstream.headers });
    } catch (err) {
      finish();
      throw err;
    }
  }

  /** A reachable decoder's answer for `path`, from another one while those reached are draining. */
  private async answerFor(path: string, cut: AbortSignal, deadlineAt: number, requestId?: string): Promise<Response> {
    for (;;) {
      if (cut.aborted) throw cut.reason;
      const decoder = await this.calls.reachableDecoder(cut, requestId);
      const limits: SignedLimits = { timeoutMs: String(Math.max(1, deadlineAt - Date.now())) };
      const headers = await decoderHeaders(this.config.decoderSecret, "GET", path, limits, requestId); // a fresh id for each decoder tried
      const upstream = await this.calls.fetchDecoder(decoder.url, path, { headers, signal: cut }).catch((err) => {
        if (cut.aborted) throw cut.reason;
        throw failedWhileAnswering(decoder.url, String(err), requestId);
      });
      if (!isDrainingAnswer(upstream)) {
        await checkAnswer(decoder, upstream, requestId);
        return upstream;
      }
      await upstream.body?.cancel();
      this.calls.resendFromDraining(decoder, requestId);
    }
  }
}

/** Calls `onSlow` when a window of `ms` ends with no bytes counted in it, or fewer than `minBytes`. */
class RateFloor {
  private counted = 0;
  private timer: ReturnType<typeof setInterval> | null = null;
  constructor(
    private readonly ms: number,
    private readonly minBytes: number,
    private readonly onSlow: () => void,
  ) {}
  /** Starts (again) with a first window from now. */
  restart(): void {
    clearInterval(this.timer);
    this.counted = 0;
    this.timer = setInterval(() => {
      if (this.counted < Math.max(1, this.minBytes)) this.onSlow(); // a stall is slow at any floor
      this.counted = 0;
    }, this.ms);
  }
  count(bytes: number): void {
    this.counted += bytes;
  }
  stop(): void {
    clearInterval(this.timer);
  }
}
