// What the admission DO answers when it or a decoder fails. The details name decoders, buckets
// and keys, so they go to the log in full and the client is told the kind of failure alone.
import { HttpError } from "../../shared/errors";
import { SIGNED_HEADERS_REFUSED_HEADER } from "../../shared/protocol";
import type { Decoder } from "./decoders";

/** Throws the decoder's fault, logged in full, as the kind alone (see isDecoderFault). */
export async function checkAnswer(decoder: Decoder, upstream: Response, requestId?: string): Promise<void> {
  if (!isDecoderFault(upstream)) return;
  logDecoderFailure(decoder.url, `${upstream.status}: ${await upstream.text()}`, requestId);
  throw decoderFault(upstream);
}

/**
 * Answers that are the service's fault, not the client's: a 401 (the decoders hold another
 * DECODER_SECRET, or a clock is skewed), any refusal of the edge's signed headers (a limit this
 * edge signs that the decoder cannot read: versions apart), and decoder or store failures.
 */
const isDecoderFault = ({ status, headers }: Response) =>
  status === 401 || headers.has(SIGNED_HEADERS_REFUSED_HEADER) || (status >= 500 && status !== 501 && status !== 503);

function decoderFault({ status, headers }: Response): HttpError {
  if (status === 401) return new HttpError("bad_gateway", "the decoder refused the edge's credentials");
  if (headers.has(SIGNED_HEADERS_REFUSED_HEADER)) return new HttpError("bad_gateway", "the decoder refused the edge's request");
  if (status === 504) return new HttpError("gateway_timeout", "the image store did not answer in time");
  return new HttpError("bad_gateway", "the decoder or the image store failed");
}

/** A decoder that failed before its answer was whole: logged, and a 502 for the client. */
export function failedWhileAnswering(url: string, why: string, requestId?: string): HttpError {
  logDecoderFailure(url, why, requestId);
  return new HttpError("bad_gateway", "the decoder failed while answering");
}

/** The decoder's address goes to the log only: public answers never name it. */
export function logDecoderFailure(url: string, why: string, requestId?: string): void {
  console.error(JSON.stringify({ level: "error", msg: "decoder failed", decoder: url, why, requestId }));
}

/** An unexpected failure inside the DO is logged and answered as transient: 503, retry. */
export function failing(err: unknown, requestId?: string): HttpError {
  console.error(JSON.stringify({ level: "error", msg: `admission failed: ${String(err)}`, requestId }));
  return new HttpError("overloaded", "admission failed; retry shortly", 1);
}
