// The body of a POST decode (a map route's GeoJSON features): the edge sends the canonical body
// and signs a path naming its SHA-256 (`feature=`), so the body is read here under the route's
// size limit and the request's deadline, and taken only when it is the body the path names.
import { createHash } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { badRequest, HttpError } from "../../shared/errors";
import { BODY_DIGEST_PARAM } from "../../shared/protocol";

/** The body as text: 413 past `maxBytes`, 408 when `signal` ends the read, 400 when its SHA-256 is not `digest`. */
export async function signedBody(req: IncomingMessage, maxBytes: number, digest: string | null, signal: AbortSignal): Promise<string> {
  if (digest === null) throw badRequest(`a POST needs ${BODY_DIGEST_PARAM}=<the body's SHA-256> in its path`);
  const body = await readWithin(req, maxBytes, signal);
  if (createHash("sha256").update(body).digest("hex") !== digest) throw badRequest(`the body's SHA-256 is not the ${BODY_DIGEST_PARAM} its path names`);
  return body.toString("utf8");
}

function readWithin(req: IncomingMessage, maxBytes: number, signal: AbortSignal): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const finish = (err?: HttpError) => {
      req.off("data", onData).off("end", onEnd).off("error", onError);
      signal.removeEventListener("abort", onAbort);
      if (!err) return resolve(Buffer.concat(chunks, size));
      req.resume(); // the rest is discarded, and the answer still goes out
      reject(err);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) return finish(new HttpError("too_large", `request body exceeds ${maxBytes} bytes`));
      chunks.push(chunk);
    };
    const onEnd = () => finish();
    const onError = () => finish(new HttpError("deadline", "request body not received"));
    const onAbort = () => finish(new HttpError("deadline", "request body not received within the request's deadline"));
    if (signal.aborted) return onAbort();
    req.on("data", onData).on("end", onEnd).on("error", onError);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
