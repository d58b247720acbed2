// What a handler returns, and how it goes on the wire: a whole body in one write, or a stream
// of chunks; what the answer holds is freed once its last byte is written or its client is gone.

import type { ServerResponse } from "node:http";
import { Readable } from "node:stream";
import { finished, pipeline } from "node:stream/promises";
import { errorResponse } from "../../shared/errors";

export interface Answer {
  status: number;
  headers: Record<string, string>;
  /** Bytes of a whole body sent before `body` (shared by many answers, never copied). */
  head?: Buffer;
  /** A whole body, or a stream of chunks whose content-length is in `headers`. */
  body: Buffer | AsyncIterable<Uint8Array>;
  /** Frees what the answer holds, once its last byte is written or its client is gone. */
  done?: () => void;
}

export function json(status: number, body: unknown, headers: Record<string, string> = {}): Answer {
  return {
    status,
    headers: { "content-type": "application/json; charset=utf-8", ...headers },
    body: Buffer.from(JSON.stringify(body)),
  };
}

/** An error from the one error table, as an answer; anything not an HttpError is a generic 502. */
export async function errorAnswer(err: unknown, requestId: string, extra: Record<string, string> = {}): Promise<Answer> {
  const response = errorResponse(err, {}, requestId);
  const headers: Record<string, string> = { ...extra };
  response.headers.forEach((v, k) => (headers[k] = v));
  return { status: response.status, headers, body: Buffer.from(await response.arrayBuffer()) };
}

/**
 * Writes an answer and resolves once its last byte is written or the client is gone. A stream
 * that fails midway cuts the body short, never mixes versions.
 */
export async function send(res: ServerResponse, answer: Answer): Promise<void> {
  if (res.destroyed) {
    // The client is gone: a stream that will never be read still releases what it holds.
    if (!Buffer.isBuffer(answer.body)) await answer.body[Symbol.asyncIterator]().return?.();
    return;
  }
  if (Buffer.isBuffer(answer.body)) {
    const { head, body } = answer;
    res.writeHead(answer.status, { ...answer.headers, "content-length": String((head?.length ?? 0) + body.length) });
    // Headers, head and body leave in one write (Node gathers what is written before end()).
    if (head) res.write(head);
    res.end(body);
    await finished(res).catch(() => {});
    return;
  }
  res.writeHead(answer.status, answer.headers);
  await pipeline(Readable.from(answer.body), res).catch(() => res.destroy());
}
