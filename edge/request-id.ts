// The edge names each client request (shared/request-id.ts): the client's own id when it is a
// valid one, else Cloudflare's cf-ray, else a random UUID. Every call made for the request
// carries it (ForClient), and the answer gets it on the way out, hits included: the id is set
// as the answer leaves, never stored in the cache with it. The calls carry the request's
// arrival too: its REQUEST_TIMEOUT runs from then, across every admission made for it.
import type { IRequest } from "itty-router";
import { isValidRequestId, X_REQUEST_ID } from "../shared/request-id";

/** What the calls made for a client's request carry: its abort signal, its id and its arrival. */
export interface ForClient {
  signal: AbortSignal;
  requestId: string;
  /** When the request reached the edge, epoch ms. */
  arrivedAt: number;
}

export function requestIdOf(req: Request): string {
  const own = req.headers.get(X_REQUEST_ID);
  if (isValidRequestId(own)) return own;
  const ray = req.headers.get("cf-ray");
  return isValidRequestId(ray) ? ray : crypto.randomUUID();
}

/** Router `before` stage: names the request and notes its arrival. */
export function withRequestId(req: IRequest): void {
  req.requestId = requestIdOf(req);
  req.arrivedAt = Date.now();
}

export const forClient = (req: IRequest): ForClient => ({ signal: req.signal, requestId: req.requestId, arrivedAt: req.arrivedAt });

/**
 * Router `finally` stage: the id on the answer, and in its body when that is a JSON error (a
 * refusal kept in the cache included, which was stored without one).
 */
export async function stampRequestId(res: Response, req: IRequest): Promise<Response> {
  const requestId: string = req.requestId ?? requestIdOf(req);
  let out = res;
  if (res.status >= 400 && res.headers.get("content-type")?.startsWith("application/json")) {
    const body = await res.json<Record<string, unknown>>().catch(() => undefined);
    if (body) {
      const headers = new Headers(res.headers);
      headers.delete("content-length");
      out = new Response(JSON.stringify({ ...body, requestId }), { status: res.status, statusText: res.statusText, headers });
    }
  }
  try {
    out.headers.set(X_REQUEST_ID, requestId);
  } catch {
    // The headers of an answer passed through from fetch() are immutable: copy it.
    out = new Response(out.body, out);
    out.headers.set(X_REQUEST_ID, requestId);
  }
  return out;
}
