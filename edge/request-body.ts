// Request bodies of the edge's POST routes (heartbeats, admin calls, map features): bounded by
// the route's limit (413 past it), and read within BODY_READ_TIMEOUT, so a client that trickles
// its body is cut off with 408.
import { HttpError } from "../shared/errors";

/** A heartbeat or an admin call is a few hundred bytes; anything far larger is not one. */
const MAX_BODY_BYTES = 16 * 1024;

/** The request body as text, or 408 if it has not fully arrived within `timeoutMs`, 413 past `maxBytes`. */
export async function readBodyWithin(req: Request, timeoutMs: number, maxBytes = MAX_BODY_BYTES): Promise<string> {
  if (!req.body) return "";
  const declared = Number(req.headers.get("content-length") ?? 0);
  if (declared > maxBytes) throw new HttpError("too_large", `request body exceeds ${maxBytes} bytes`);
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  const deadline = new HttpError("deadline", "request body not received within BODY_READ_TIMEOUT");
  let rejectLate: (e: HttpError) => void = () => {};
  const timedOut = new Promise<never>((_, reject) => (rejectLate = reject));
  const timer = setTimeout(() => rejectLate(deadline), timeoutMs);
  try {
    for (;;) {
      const { done, value } = await Promise.race([reader.read(), timedOut]);
      if (done) break;
      size += value.byteLength;
      if (size > maxBytes) throw new HttpError("too_large", `request body exceeds ${maxBytes} bytes`);
      chunks.push(value);
    }
  } catch (err) {
    reader.cancel().catch(() => {});
    throw err;
  } finally {
    clearTimeout(timer);
  }
  const all = new Uint8Array(size);
  let offset = 0;
  for (const c of chunks) {
    all.set(c, offset);
    offset += c.byteLength;
  }
  return new TextDecoder().decode(all);
}
