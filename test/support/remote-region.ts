// A fake remote region for tests and benches: an HTTP proxy in front of the local S3 that holds
// every request for a fixed delay before passing it on, and records each one (method, path,
// Range, start and end). The local store answers in microseconds, so counting round trips is
// the only honest measure of a first view from a store far away; the delay makes them felt.
//
// Requests are forwarded byte for byte, Host header included, so SigV4 signatures made for the
// proxy's address still verify at the store.
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface StoreRequest {
  method: string;
  /** Path and query, e.g. `/bucket/key.tif?versionId=…`. */
  path: string;
  range?: string;
  status: number;
  /** performance.now() when the request reached the proxy, and when its answer was sent in full. */
  start: number;
  end: number;
}

export interface RemoteRegion {
  /** The endpoint to give the S3 client instead of the store's. */
  endpoint: string;
  /** Every request so far, in the order they ended. */
  readonly requests: StoreRequest[];
  close(): Promise<void>;
}

/** Starts a proxy to `target` (an http:// endpoint) that delays each request by `delayMs`. */
export async function startRemoteRegion(target: string, delayMs: number): Promise<RemoteRegion> {
  const upstream = new URL(target);
  const requests: StoreRequest[] = [];
  const server: Server = createServer((req, res) => {
    const start = performance.now();
    const forward = () => pass(req, res, upstream, (status) => {
      requests.push({ method: req.method ?? "GET", path: req.url ?? "/", range: req.headers.range, status, start, end: performance.now() });
    });
    if (delayMs > 0) setTimeout(forward, delayMs);
    else forward();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** Forwards one request to the store and its answer back; `done` once, when the answer is sent or fails. */
function pass(req: IncomingMessage, res: ServerResponse, upstream: URL, done: (status: number) => void): void {
  let status = 502;
  res.once("close", () => done(status));
  const out = request(
    { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers },
    (answer) => {
      status = answer.statusCode ?? 502;
      res.writeHead(status, answer.headers);
      answer.pipe(res);
    },
  );
  out.once("error", () => res.destroy());
  req.pipe(out);
}

/**
 * The sequential round trips among `requests`: the longest chain in which each request started
 * after the one before it had ended. Requests that overlap count once, as a client feels them.
 */
export function sequentialRoundTrips(requests: readonly StoreRequest[]): number {
  const byEnd = [...requests].sort((a, b) => a.end - b.end);
  const chain: number[] = [];
  for (let i = 0; i < byEnd.length; i++) {
    let before = 0;
    for (let j = 0; j < i; j++) if (byEnd[j].end <= byEnd[i].start) before = Math.max(before, chain[j]);
    chain.push(before + 1);
  }
  return Math.max(0, ...chain);
}

/** One line per request, for a report or a failing test's message. */
export const describeRequests = (requests: readonly StoreRequest[], from = 0): string =>
  [...requests]
    .sort((a, b) => a.start - b.start)
    .map((r) => `${(r.start - from).toFixed(0).padStart(5)}–${(r.end - from).toFixed(0).padStart(5)} ms ${r.method} ${r.path}${r.range ? ` ${r.range}` : ""} → ${r.status}`)
    .join("\n");
