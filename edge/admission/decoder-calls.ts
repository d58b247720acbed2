// Reaching a decoder and calling it: the least loaded live decoder that accepts a connection,
// the admitted request sent under its grant, and the answer read whole or passed on as a stream
// (answers.ts) so that the lease ends only with its last byte, when the decoder's work is over.
// A request that has reached a decoder is never sent again, except from a decoder that answered
// it is draining, which did nothing.
import { connect } from "cloudflare:sockets";
import type { AdmissionConfig } from "../../shared/admission-config";
import { untilAborted } from "../../shared/abort";
import { thresholdsOf } from "../../shared/admission-config";
import { classify, ESTIMATE_HEADER, ESTIMATE_WORK_HEADER, GrantExceeded, NEEDED_HEADER, NEEDED_WORK_HEADER, type Partition } from "../../shared/cost";
import { HttpError } from "../../shared/errors";
import { DECODER, signedHeaders, type SignedLimits } from "../../shared/protocol";
import { X_REQUEST_ID } from "../../shared/request-id";
import { declaredLength, lengthPipe, relay, streamedBody, type DecodedAnswer } from "./answers";
import { ANSWER_VOUCHES_MS, type Decoder, type DecoderRegistry } from "./decoders";
import { isContainerUrl, type DecoderFetch } from "./decoder-link";
import { DecoderDraining, isDrainingAnswer } from "./draining";
import { checkAnswer, failedWhileAnswering, failing, logDecoderFailure } from "./faults";
import type { Lease } from "./leases";
import type { DoStats } from "./metrics";

/** What calling decoders takes from the DO. */
export interface CallHost {
  decoderSecret: string;
  fetchDecoder: DecoderFetch;
  admission: Pick<AdmissionConfig, "leaseGraceMs" | "largeDecodeThresholdBytes" | "largeDecodeThresholdWork">;
  decoders: DecoderRegistry;
  /** Answers of at least this many bytes (or of no declared length) are streamed, not read whole. */
  streamAnswerBytes: number;
  stats: Pick<DoStats, "decoderRetries" | "drainingResends" | "disagreements">;
  /** Sizes the model to the live decoders once one is forgotten. */
  resize(): void;
  waitUntil(promise: Promise<unknown>): void;
}

/** The decoder to try next, after `failed` when one could not be reached. */
type Destination = (failed?: Decoder) => Decoder | undefined;

/** One admitted request on one decoder: what the steps of its call share. */
interface OnDecoder {
  decoder: Decoder;
  lease: Lease;
  /** The id the decoder knows this call by, to cancel it: each call's own, as a decoder takes an id once. */
  cancelId: string;
  requestId?: string;
  /** The decoder's part is over; the lease ends with it unless the request goes elsewhere. */
  finish(keepLease?: boolean): void;
}

export class DecoderCalls {
  /** How a decoder is reached, by HTTP or through its container's DO: transfers reach them alike. */
  readonly fetchDecoder: DecoderFetch;

  constructor(private readonly host: CallHost) {
    this.fetchDecoder = host.fetchDecoder;
  }

  /**
   * Forwards one admitted decode to the least loaded live decoder that accepts a connection (a
   * full: to the one its bytes are held on). The lease is released when the decoder's part is
   * over: at once on a failure before the call, else as `call` says. A decoder that answers it is
   * draining did nothing: it is forgotten and the request goes to the next one, under the same
   * lease (a full's bytes move with it). A `body` makes the call a POST carrying it.
   */
  async forward(path: string, lease: Lease, requestId?: string, body?: string): Promise<DecodedAnswer> {
    let moved = false;
    for (;;) {
      let decoder: Decoder;
      try {
        decoder = await this.reachableDecoder(lease.signal, requestId, this.destination(lease, moved));
      } catch (err) {
        lease.release();
        throw err;
      }
      try {
        return await this.call(decoder, path, lease, requestId, body);
      } catch (err) {
        if (!(err instanceof DecoderDraining)) throw err;
        this.resendFromDraining(decoder, requestId);
        moved = true;
      }
    }
  }

  /**
   * Where a lease's request goes: a tile to the least loaded decoder; a full to the one its bytes
   * are held on, or once that one is gone (`moved`, or it failed) wherever they can be held anew.
   */
  private destination(lease: Lease, moved: boolean): Destination | undefined {
    const { grant } = lease;
    if (grant.partition === "tile") return undefined;
    return (failed) => (failed || moved ? grant.moveOn() : grant.decoder);
  }

  /** A decoder answered that it is draining: it leaves routing now, and its request goes on. */
  resendFromDraining(decoder: Decoder, requestId?: string): void {
    console.log(JSON.stringify({ level: "info", msg: "decoder draining; sending the request to another", decoder: decoder.url, requestId }));
    this.host.decoders.forget(decoder.url);
    this.host.resize();
    this.host.stats.drainingResends++;
  }

  /**
   * The least loaded live decoder that opens a connection now. Only a decoder that cannot be
   * connected to is forgotten and another tried: once a request has reached a decoder it is
   * never sent again, so a request that kills its decoder cannot go on to kill the next one.
   * A decoder that answered within ANSWER_VOUCHES_MS is taken without that trial connection
   * (a TCP handshake per miss, on both sides); if it fails meanwhile, the request it was sent
   * is a 502 like any that reached it, and the next one tries a connection first. `next` says
   * which decoder to try, after `failed` if one was.
   */
  async reachableDecoder(signal: AbortSignal, requestId?: string, next: Destination = (failed) => this.host.decoders.pick(Date.now(), failed?.url)): Promise<Decoder> {
    let failed: Decoder | undefined;
    for (;;) {
      const decoder = next(failed);
      if (!decoder) {
        if (failed) throw new HttpError("bad_gateway", "no decoder could be reached");
        throw new HttpError("overloaded", "no decoder is registered; retry shortly", 1);
      }
      if (failed) this.host.stats.decoderRetries++;
      if (Date.now() - decoder.answeredAt < ANSWER_VOUCHES_MS || (await connectable(decoder.url, signal))) return decoder;
      if (signal.aborted) throw signal.reason;
      logDecoderFailure(decoder.url, "connection refused or timed out", requestId);
      this.host.decoders.forget(decoder.url);
      failed = decoder;
    }
  }

  /**
   * Sends an admitted request to `decoder`, which runs it under the grant, and owns the lease
   * from then on. Admission ends when the decoder's work does: a client that leaves (for a
   * coalesced decode, the last one waiting for it) or a deadline that passes before the answer
   * gets its answer at once, a client that left has the decoder told to stop its I/O, and the
   * permit and memory stay held until the decoder's own answer says the work has stopped (a
   * render inside libvips finishes first), or the lease's alarm ends a decoder that never
   * answers. The lease is released with the answer's last byte, read whole (wholeAnswer) or
   * streamed through (streamedAnswer).
   */
  private async call(decoder: Decoder, path: string, lease: Lease, requestId?: string, body?: string): Promise<DecodedAnswer> {
    const on: OnDecoder = { decoder, lease, cancelId: crypto.randomUUID(), requestId, finish: occupy(decoder, lease) };
    let answer: Promise<Response>;
    try {
      // The decoder runs under what was granted here, not under its own defaults.
      const limits: SignedLimits = {
        timeoutMs: String(Math.max(1, lease.deadlineAt - Date.now())),
        grantBytes: String(lease.grantedBytes),
        grantWork: String(lease.grantedWork),
        partition: lease.grant.partition,
        requestId: on.cancelId,
      };
      const method = body === undefined ? "GET" : "POST";
      const headers = await decoderHeaders(this.host.decoderSecret, method, path, limits, requestId);
      // Not tied to the client: only the decoder's answer says when its work is over. A
      // decoder that never answers is cut off when the alarm ends the lease.
      answer = this.host.fetchDecoder(decoder.url, path, { method, headers, body, signal: lease.ended });
    } catch (err) {
      on.finish();
      throw failing(err, requestId);
    }
    const upstream = await this.headersOf(on, answer);
    await this.throwIfRefused(on, upstream);
    this.countDisagreement(lease.grant.partition, upstream.headers);
    const stream = streamedBody(upstream, this.host.streamAnswerBytes);
    return stream ? this.streamedAnswer(on, upstream, stream) : await this.wholeAnswer(on, upstream);
  }

  /**
   * The decoder's answer, its body yet unread, unless the lease's signal ends the wait first (the
   * permit then stays held until the answer arrives, or the alarm ends the lease) or the decoder
   * fails (502).
   */
  private async headersOf(on: OnDecoder, answer: Promise<Response>): Promise<Response> {
    const { decoder, lease } = on;
    let upstream: Response;
    try {
      upstream = await untilAborted(answer, lease.signal);
    } catch (err) {
      if (lease.ended.aborted) throw lease.ended.reason; // the alarm ended it (finish has run)
      if (lease.signal.aborted) {
        if (lease.client.aborted) this.cancel(on);
        this.host.waitUntil(answer.then((late) => late.body?.cancel(), () => {}).finally(on.finish));
        throw lease.signal.reason;
      }
      on.finish();
      decoder.answeredAt = 0; // the next forward tries a connection first
      throw failedWhileAnswering(decoder.url, String(err), on.requestId);
    }
    decoder.answeredAt = Date.now();
    return upstream;
  }

  /** Throws when the answer is no decode: the decoder is draining, needs a larger grant, or failed. */
  private async throwIfRefused(on: OnDecoder, upstream: Response): Promise<void> {
    try {
      if (isDrainingAnswer(upstream)) {
        await upstream.body?.cancel();
        on.finish(true);
        throw new DecoderDraining(on.decoder.url);
      }
      const needed = upstream.headers.get(NEEDED_HEADER);
      if (needed !== null) {
        await upstream.body?.cancel();
        throw new GrantExceeded({ bytes: Number(needed), work: Number(upstream.headers.get(NEEDED_WORK_HEADER)) || 0 });
      }
      await checkAnswer(on.decoder, upstream, on.requestId);
    } catch (err) {
      on.finish();
      throw err;
    }
  }

  /**
   * A small answer read whole; the decoder's part ends with its last byte, whoever still waits.
   * A client or deadline that ends the wait for those bytes gets its answer at once; a decoder
   * dying before the last is a 502.
   */
  private async wholeAnswer({ decoder, lease, finish, requestId }: OnDecoder, upstream: Response): Promise<DecodedAnswer> {
    const body = upstream.arrayBuffer();
    this.host.waitUntil(body.catch(() => {}).finally(finish));
    try {
      return { status: upstream.status, headers: upstream.headers, body: await untilAborted(body, lease.signal) };
    } catch (err) {
      if (lease.signal.aborted) throw lease.signal.reason;
      throw failedWhileAnswering(decoder.url, `answer cut short: ${String(err)}`, requestId);
    }
  }

  /**
   * A large answer passed on as it comes: its headers at once, its bytes as the decoder sends
   * them and the reader takes them. The decoder's part ends with the last byte, or when the
   * stream stops: its reader gone, the deadline or the client (the stream is cut, and errors),
   * the decoder dying (logged; the stream errors short of its declared length).
   */
  private streamedAnswer(on: OnDecoder, upstream: Response, body: ReadableStream<Uint8Array>): DecodedAnswer {
    const { decoder, lease, finish, requestId } = on;
    const pipe = lengthPipe(declaredLength(upstream.headers));
    const flowed = relay(body, [pipe.writable.getWriter()], lease.signal).catch((err) => {
      if (!lease.signal.aborted) logDecoderFailure(decoder.url, `answer cut short: ${String(err)}`, requestId);
    });
    this.host.waitUntil(flowed.finally(finish));
    return { status: upstream.status, headers: upstream.headers, body: pipe.readable };
  }

  /**
   * Asks the decoder to stop a request's I/O. Best effort: whether it arrives or not, the
   * request's own answer (or its lease's end) is what frees the admission.
   */
  private cancel({ decoder, cancelId, requestId }: OnDecoder): void {
    const path = DECODER.cancel(cancelId);
    const sent = decoderHeaders(this.host.decoderSecret, "POST", path, undefined, requestId).then((headers) =>
      this.host.fetchDecoder(decoder.url, path, { method: "POST", headers, signal: AbortSignal.timeout(this.host.admission.leaseGraceMs) }),
    );
    this.host.waitUntil(sent.then((res) => res.body?.cancel(), () => {}));
  }

  /** The decoder's precise estimate (bytes and work) against the partition the edge's coarse one chose. */
  private countDisagreement(edgeVerdict: Partition, answer: Headers): void {
    const bytes = answer.get(ESTIMATE_HEADER);
    if (bytes === null) return;
    const precise = { bytes: Number(bytes), work: Number(answer.get(ESTIMATE_WORK_HEADER)) || 0 };
    if (classify(precise, thresholdsOf(this.host.admission)) !== edgeVerdict) this.host.stats.disagreements++;
  }
}

/** The headers of one call to a decoder: signed, with an id of its own, and the client's request id for the logs. */
export async function decoderHeaders(secret: string, method: string, path: string, limits?: SignedLimits, requestId?: string): Promise<Record<string, string>> {
  return { ...(await signedHeaders(secret, method, path, limits)), ...(requestId && { [X_REQUEST_ID]: requestId }) };
}

/** Counts a call on `decoder` until the returned `finish`, which runs once. */
function occupy(decoder: Decoder, lease: Lease): OnDecoder["finish"] {
  const fulls = lease.grant.partition === "full" ? 1 : 0;
  decoder.inFlight++;
  decoder.fullsInFlight += fulls;
  let finished = false;
  return (keepLease = false) => {
    if (finished) return;
    finished = true;
    decoder.inFlight--;
    decoder.fullsInFlight -= fulls;
    if (!keepLease) lease.release();
  };
}

/**
 * Whether a TCP connection to the decoder opens now; nothing is sent on it. fetch() reports a
 * refused connection and a reset mid-answer alike, so this is how the DO knows that a retry
 * cannot repeat a request a decoder has already received. A container's DO makes that check
 * itself: while its container is not ready it answers as a draining decoder, having done nothing.
 */
async function connectable(decoderUrl: string, signal: AbortSignal): Promise<boolean> {
  if (isContainerUrl(decoderUrl)) return true;
  const { hostname, port, protocol } = new URL(decoderUrl);
  const socket = connect({ hostname, port: Number(port) || (protocol === "https:" ? 443 : 80) });
  const giveUp = () => void socket.close().catch(() => {});
  signal.addEventListener("abort", giveUp, { once: true });
  try {
    await socket.opened;
    return true;
  } catch {
    return false;
  } finally {
    signal.removeEventListener("abort", giveUp);
    giveUp();
  }
}
