// A source's stored bytes (/file), streamed from a decoder. Nothing is decoded, so no decode
// permit is taken; transfers have a cap of their own (MAX_FILE_TRANSFERS, then 503).
// REQUEST_TIMEOUT bounds the wait for the decoder's headers; once the bytes flow, only a stall
// that long cuts them (or the client leaving), so a large file is never cut short by the deadline.
import { HttpError } from "../../shared/errors";
import type { SignedLimits } from "../../shared/protocol";
import type { EdgeConfig } from "../env";
import { signedHeaders, type DecoderCalls } from "./decoder-calls";
import { isDrainingAnswer } from "./draining";
import { checkAnswer, failedWhileAnswering } from "./faults";

export class FileTransfers {
  /** Transfers streaming now: they hold no decode permit, only a place under their own cap. */
  inProgress = 0;
  /** Transfers refused with 503 because MAX_FILE_TRANSFERS were streaming. */
  shed = 0;

  constructor(
    private readonly config: Pick<EdgeConfig, "maxFileTransfers" | "decoderSecret" | "admission">,
    private readonly calls: Pick<DecoderCalls, "reachableDecoder" | "resendFromDraining">,
    private readonly waitUntil: (promise: Promise<unknown>) => void,
  ) {}

  /** Streams the decoder's answer for `path` until its last byte, a stall, or the client leaving. */
  async transfer(path: string, client: AbortSignal, requestId?: string): Promise<Response> {
    const { maxFileTransfers } = this.config;
    if (this.inProgress >= maxFileTransfers) {
      this.shed++;
      throw new HttpError("overloaded", `${maxFileTransfers} file transfers in progress; retry shortly`, 1);
    }
    this.inProgress++;
    const cut = new AbortController();
    const stalled = () => cut.abort(new HttpError("deadline", "the transfer stalled past REQUEST_TIMEOUT"));
    const stall = new Watchdog(this.config.admission.requestTimeoutMs, stalled);
    const onClient = () => cut.abort(client.reason);
    client.addEventListener("abort", onClient, { once: true });
    let finished = false;
    const finish = () => {
      if (finished) return;
      finished = true;
      stall.stop();
      client.removeEventListener("abort", onClient);
      this.inProgress--;
    };
    try {
      if (client.aborted) throw client.reason;
      const upstream = await this.answerFor(path, cut.signal, requestId);
      if (!upstream.body) {
        finish();
        return upstream;
      }
      stall.reset();
      const { readable, writable } = new TransformStream({
        transform(chunk, stream) {
          stall.reset();
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
  private async answerFor(path: string, cut: AbortSignal, requestId?: string): Promise<Response> {
    const limits: SignedLimits = { timeoutMs: String(this.config.admission.requestTimeoutMs) };
    for (;;) {
      const decoder = await this.calls.reachableDecoder(cut, requestId);
      const headers = await signedHeaders(this.config.decoderSecret, "GET", path, limits, requestId);
      const upstream = await fetch(decoder.url + path, { headers, signal: cut }).catch((err) => {
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

/** Calls `onIdle` once `ms` pass without a reset. */
class Watchdog {
  private timer: ReturnType<typeof setTimeout> | null = null;
  constructor(
    private readonly ms: number,
    private readonly onIdle: () => void,
  ) {
    this.reset();
  }
  reset(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(this.onIdle, this.ms);
  }
  stop(): void {
    clearTimeout(this.timer);
  }
}
