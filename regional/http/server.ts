// The decoder's HTTP service (node:http): the plumbing every route shares, around the route table
// (routes.ts). For each request: its id (the edge's, else one of its own), its route, the drain's
// refusal, the edge's signature; for a limited route a permit, a deadline covering opening,
// budget waits, I/O and encoding (408), and one AbortSignal that fires on the client's disconnect,
// the deadline or the DO's cancel and reaches every Source read and every stage boundary; then
// the answer, written, and one metric sample and one log line. Every failure becomes an answer
// from the one error table.

import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { GrantExceeded, NEEDED_HEADER, NEEDED_WORK_HEADER } from "../../shared/cost";
import { badRequest, HttpError, notFound } from "../../shared/errors";
import { BODY_DIGEST_PARAM, DRAINING_HEADER, REQUEST_ID_HEADER, SIGNED_HEADERS_REFUSED_HEADER, type SignedLimits } from "../../shared/protocol";
import { isValidRequestId, X_REQUEST_ID } from "../../shared/request-id";
import { createDecoderContext, type DecoderContext, type DecoderOptions } from "../decoder";
import { withDeadline } from "../runtime/deadlines";
import type { RequestLimiter } from "../runtime/request-limiter";
import { requestSeconds, requestsTotal, routeOf } from "../runtime/metrics";
import { errorAnswer, send, type Answer } from "./answer";
import { signedBody } from "./request-body";
import { findRoute, paramsOf, type Route, type RouteRequest } from "./router";
import { ROUTES } from "./routes";
import { deadlineOf, grantOf, headerValue, SIGNED_PREFIX, SignedHeadersRefused, verifiedLimits } from "./signing";

/** One request as the plumbing sees it. */
interface Exchange {
  req: IncomingMessage;
  /** Its path and query; UNPARSABLE when its target does not parse. */
  url: URL;
  /** Aborts when the client goes away, the DO cancels it or the drain's deadline passes. */
  controller: AbortController;
  requestId: string;
}

/** Creates (does not start) the decoder's HTTP server; its state is built here, once. */
export function createDecoderServer(options: DecoderOptions): Server {
  const decoder = createDecoderContext(options);
  const server = createServer((req, res) => serve(decoder, req, res));
  server.on("connection", () => decoder.metrics.connections.inc());
  server.on("close", () => decoder.close());
  return server;
}

function serve(decoder: DecoderContext, req: IncomingMessage, res: ServerResponse): void {
  const started = performance.now();
  const controller = new AbortController();
  const held = decoder.drain.hold(controller);
  // The edge's id for the client's request; a request without a valid one (no edge in front) gets its own.
  const sent = headerValue(req.headers[X_REQUEST_ID]);
  // Only the path and query are ours to read: parsed once, against a base of our own.
  const url = URL.parse(req.url ?? "/", "http://decoder") ?? UNPARSABLE;
  const exchange: Exchange = { req, url, controller, requestId: isValidRequestId(sent) ? sent : randomUUID() };
  // 'close' before the answer finished means the client went away: stop the work.
  res.on("close", () => {
    if (!res.writableFinished) controller.abort(new DOMException("client disconnected", "AbortError"));
  });
  answer(decoder, exchange)
    .catch((err) => failure(decoder, exchange, err))
    .then(async (answer) => {
      // While draining, no connection is kept open for a next request that would be refused.
      if (decoder.drain.draining) res.setHeader("connection", "close");
      res.setHeader(X_REQUEST_ID, exchange.requestId);
      try {
        await send(res, answer);
      } finally {
        answer.done?.();
      }
      record(decoder, exchange, answer.status, started);
    })
    .catch((err) => {
      // Last resort (a failing log sink, a broken socket): never an unhandled rejection.
      process.stderr.write(`${JSON.stringify({ level: "error", msg: "response failed", error: String(err), requestId: exchange.requestId })}\n`);
      res.destroy();
    })
    .finally(held);
}

/** An unparsable target, answered like any 400 (its log line and metrics name it "/"). */
const UNPARSABLE = new URL("http://decoder/");

async function answer(decoder: DecoderContext, exchange: Exchange): Promise<Answer> {
  const { req, url } = exchange;
  if (url === UNPARSABLE) throw badRequest("unparsable request target");
  const route = findRoute(ROUTES, req.method ?? "GET", url.pathname);
  if (decoder.drain.draining && !route?.whileDraining) return drainingAnswer(exchange.requestId);
  const limits = url.pathname.startsWith(SIGNED_PREFIX) ? await verifiedLimits(req, decoder.secret, decoder.acceptedIds) : {};
  if (!route) throw notFound(`no route ${url.pathname}`);
  const params = paramsOf(route, req.method, url.pathname);
  const query = new URLSearchParams(url.searchParams);
  query.delete("version");
  let body: string | undefined;
  if (route.bodyBytes !== undefined && req.method === "POST") {
    body = await bodyOf(decoder, exchange, route.bodyBytes, limits);
    query.delete(BODY_DIGEST_PARAM);
  }
  const request: RouteRequest<Record<string, string>> = {
    params,
    version: url.searchParams.get("version") ?? undefined,
    query,
    signal: exchange.controller.signal,
    client: exchange.controller.signal,
    grant: undefined,
    body,
    authorization: req.headers.authorization,
    requestId: exchange.requestId,
  };
  if (!route.limiter) return route.handler(request, decoder);
  return limited(decoder, route, decoder.limiters[route.limiter], request, limits, exchange.controller);
}

/** A POST route's body, read within the request's deadline and checked against its signed digest. */
async function bodyOf(decoder: DecoderContext, { req, url, controller }: Exchange, maxBytes: number, limits: SignedLimits): Promise<string> {
  const deadline = withDeadline(controller.signal, deadlineOf(limits, decoder.requestTimeoutMs));
  try {
    return await signedBody(req, maxBytes, url.searchParams.get(BODY_DIGEST_PARAM), deadline.signal);
  } finally {
    deadline.done();
  }
}

/**
 * Runs a limited route: the admission DO's grant and deadline replace this decoder's defaults
 * (without them, no edge in front, the decoder's own deadline and work budget apply). The
 * permit is held until the answer's last byte is written, as the DO holds its own.
 */
async function limited(
  decoder: DecoderContext,
  route: Route,
  limiter: RequestLimiter,
  request: RouteRequest<Record<string, string>>,
  limits: SignedLimits,
  controller: AbortController,
): Promise<Answer> {
  const grant = grantOf(limits);
  const timeout = deadlineOf(limits, decoder.requestTimeoutMs);
  // Tracked before the permit is taken: a refused id (track throws) then holds no permit.
  const forget = decoder.cancellations.track(limits.requestId, controller);
  let release: () => void;
  try {
    release = limiter.acquire();
  } catch (err) {
    forget();
    throw err;
  }
  const deadline = withDeadline(controller.signal, timeout);
  try {
    const answer = await route.handler({ ...request, signal: deadline.signal, grant }, decoder);
    return { ...answer, done: () => (answer.done?.(), forget(), release()) };
  } catch (err) {
    forget();
    release();
    throw err;
  } finally {
    deadline.done();
  }
}

/** The answer to a request that arrives while draining: nothing was done, send it elsewhere. */
function drainingAnswer(requestId: string): Promise<Answer> {
  const refusal = new HttpError("overloaded", "the decoder is shutting down; retry on another", 1);
  return errorAnswer(refusal, requestId, { [DRAINING_HEADER]: "1", connection: "close" });
}

/** Error kinds that are the runtime limits at work, as labels of tessera_decoder_rejected_total. */
const REJECTIONS: Partial<Record<HttpError["kind"], string>> = {
  overloaded: "overloaded",
  deadline: "deadline",
  too_large: "too_large",
};

async function failure(decoder: DecoderContext, { req, url, controller, requestId }: Exchange, err: unknown): Promise<Answer> {
  const aborted = controller.signal.aborted;
  if (!(err instanceof HttpError) && !aborted) {
    decoder.log({
      level: "error",
      msg: "unexpected failure",
      method: req.method,
      path: url.pathname,
      requestId,
      error: err instanceof Error ? err.message : String(err),
      stack: err instanceof Error ? err.stack : undefined,
    });
  }
  // The answer says what is wrong in the client's terms; what it leaves out (the source's
  // label, the store's key, the library's words) is logged here, found by the answer's request id.
  if (err instanceof HttpError && err.detail !== undefined) {
    decoder.log({
      level: err.status >= 500 ? "error" : "info",
      msg: "refused",
      method: req.method,
      path: url.pathname,
      requestId,
      status: err.status,
      message: err.message,
      detail: err.detail,
    });
  }
  if (err instanceof HttpError && REJECTIONS[err.kind]) decoder.metrics.rejected.inc({ reason: REJECTIONS[err.kind] });
  else if (aborted) decoder.metrics.rejected.inc({ reason: "cancelled" });
  // Anything not an HttpError is a generic 502, no detail on the wire.
  return errorAnswer(err, requestId, protocolHeaders(err));
}

/** What the DO reads off a refusal beside its status: the grant a decode needs, or that the signed headers were refused. */
function protocolHeaders(err: unknown): Record<string, string> {
  if (err instanceof GrantExceeded) return { [NEEDED_HEADER]: String(err.needed.bytes), [NEEDED_WORK_HEADER]: String(Math.ceil(err.needed.work)) };
  if (err instanceof SignedHeadersRefused) return { [SIGNED_HEADERS_REFUSED_HEADER]: "1" };
  return {};
}

/** One metric sample and one log line per request, once its answer is written. */
function record(decoder: DecoderContext, { req, url, controller, requestId }: Exchange, answered: number, started: number): void {
  const route = routeOf(url.pathname);
  const status = controller.signal.aborted ? "aborted" : answered;
  requestsTotal.inc({ route, status });
  requestSeconds.observe({ route }, (performance.now() - started) / 1000);
  decoder.log({
    level: "info",
    msg: "request",
    method: req.method,
    path: url.pathname,
    version: url.searchParams.get("version") ?? undefined,
    request: headerValue(req.headers[REQUEST_ID_HEADER]) ?? undefined,
    requestId,
    status,
    ms: Math.round(performance.now() - started),
  });
}
