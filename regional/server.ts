// The regional decoder's HTTP service (node:http). Routes are the DECODER paths of
// shared/protocol.ts; every /v1 request must carry the edge's HMAC signature.
//
//   GET /health                                  → { ok, capacity }            (unauthenticated)
//   GET /v1/info/{id}?version=V                  → SourceInfo JSON
//   GET /v1/image/{id}/{region}/{size}/{rotation}/{quality}.{format}?version=V → image bytes
//
// Each request gets an AbortController that fires when the client goes away; its signal is
// passed down to every Source read. (Seed 003's request limiter, work budget and deadline
// will wrap `handle` here, with the same signal.)

import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { badRequest, errorResponse, HttpError, notFound } from "../shared/errors";
import { parseImageRequest } from "../shared/iiif/image-request";
import { resolveImageRequest } from "../shared/iiif/resolve";
import { DECODER, SIGNATURE_HEADER, VERSION_HEADER, verifyRequest } from "../shared/protocol";
import { ESTIMATE_HEADER } from "../shared/cost";
import { CogCache } from "./cog-cache";
import { preciseEstimate } from "./estimate";
import { registry, requestSeconds, requestsTotal, routeOf } from "./metrics";
import type { Cog } from "./cog/cog";
import { checkSupported, configureSharp, render } from "./render";
import { isValidSourceId } from "./source/source-id";
import { sourceChunks } from "./source/chunks";
import type { SourceCatalog } from "./source/source";

export interface DecoderOptions {
  catalog: SourceCatalog;
  /** Shared HMAC secret of the edge and its decoders. */
  secret: string;
  /** How many decodes this process runs well at once; reported to the admission DO. */
  capacity: number;
  /** How many opened snapshots to keep (default 64). */
  cogCacheSize?: number;
  /** Receives one structured record per line (default: JSON on stdout, errors on stderr). */
  log?: (record: LogRecord) => void;
}

export interface LogRecord {
  level: "info" | "error";
  msg: string;
  [field: string]: unknown;
}

export function jsonLog(record: LogRecord): void {
  const line = JSON.stringify({ time: new Date().toISOString(), ...record }) + "\n";
  (record.level === "error" ? process.stderr : process.stdout).write(line);
}

interface Answer {
  status: number;
  headers: Record<string, string>;
  /** A whole body, or a stream of chunks whose content-length is in `headers`. */
  body: Buffer | AsyncIterable<Uint8Array>;
}

/** Creates (does not start) the decoder's HTTP server. */
export function createDecoderServer(options: DecoderOptions): Server {
  configureSharp();
  const log = options.log ?? jsonLog;
  const cogs = new CogCache(options.catalog, options.cogCacheSize);

  const server = createServer((req, res) => {
    const started = performance.now();
    const controller = new AbortController();
    // 'close' before the answer finished means the client went away: stop the work.
    res.on("close", () => {
      if (!res.writableFinished) controller.abort(new DOMException("client disconnected", "AbortError"));
    });
    // Only the path and query are ours to read; an unparsable target is answered like any 400.
    const url = URL.canParse(req.url ?? "/", "http://decoder")
      ? new URL(req.url ?? "/", "http://decoder")
      : new URL("http://decoder/");
    handle(req, url, controller.signal)
      .catch((err) => failure(err, req, url, controller.signal))
      .then(async (answer) => {
        await send(res, answer);
        const route = routeOf(url.pathname);
        const status = controller.signal.aborted ? "aborted" : answer.status;
        requestsTotal.inc({ route, status });
        requestSeconds.observe({ route }, (performance.now() - started) / 1000);
        log({
          level: "info",
          msg: "request",
          method: req.method,
          path: url.pathname,
          version: url.searchParams.get("version") ?? undefined,
          status,
          ms: Math.round(performance.now() - started),
        });
      })
      .catch((err) => {
        // Last resort (a failing log sink, a broken socket): never an unhandled rejection.
        process.stderr.write(`${JSON.stringify({ level: "error", msg: "response failed", error: String(err) })}\n`);
        res.destroy();
      });
  });
  server.on("close", () => cogs.closeAll());
  return server;

  async function handle(req: IncomingMessage, url: URL, signal: AbortSignal): Promise<Answer> {
    if (!URL.canParse(req.url ?? "/", "http://decoder")) throw badRequest("unparsable request target");
    if (url.pathname === DECODER.health) {
      requireGet(req);
      return json(200, { ok: true, capacity: options.capacity });
    }
    if (url.pathname === "/metrics") {
      requireGet(req);
      const body = Buffer.from(await registry.metrics());
      return { status: 200, headers: { "content-type": registry.contentType }, body };
    }
    const segments = url.pathname.split("/").slice(1);
    if (segments[0] !== "v1") throw notFound(`no route ${url.pathname}`);
    await verifyRequest(
      options.secret,
      req.method ?? "GET",
      req.url ?? "",
      headerValue(req.headers[SIGNATURE_HEADER]),
    );
    requireGet(req);
    const parts = segments.slice(1).map(decodeSegment);
    const version = url.searchParams.get("version") ?? undefined;
    // One id rule for every catalog (S3 keys included), before any I/O.
    if (parts.length >= 2 && !isValidSourceId(parts[1])) throw notFound(`unknown source "${parts[1]}"`);
    if (parts[0] === "info" && parts.length === 2) {
      return info(parts[1], version, signal);
    }
    if (parts[0] === "file" && parts.length === 2) {
      return file(parts[1], version, signal);
    }
    if (parts[0] === "image" && parts.length === 6) {
      const [, id, region, size, rotation, qualityFormat] = parts;
      return image(id, { region, size, rotation, qualityFormat }, version, signal);
    }
    throw notFound(`no route ${url.pathname}`);
  }

  async function info(id: string, version: string | undefined, signal: AbortSignal): Promise<Answer> {
    return withCog(id, version, signal, async (cog) => {
      const body = cog.info(id);
      return json(200, body, { [VERSION_HEADER]: body.version });
    });
  }

  /** The stored bytes of the pinned snapshot, streamed; no header parse, no decode. */
  async function file(id: string, version: string | undefined, signal: AbortSignal): Promise<Answer> {
    const source = await options.catalog.open(id, version, signal);
    return {
      status: 200,
      headers: {
        "content-type": "image/tiff",
        "content-length": String(source.size),
        [VERSION_HEADER]: source.version,
      },
      body: sourceChunks(source, signal),
    };
  }

  async function image(
    id: string,
    parts: Parameters<typeof parseImageRequest>[0],
    version: string | undefined,
    signal: AbortSignal,
  ): Promise<Answer> {
    // Syntax first: a malformed request costs no I/O.
    const parsed = parseImageRequest(parts, 3);
    return withCog(id, version, signal, async (cog) => {
      const resolved = resolveImageRequest(parsed, { width: cog.width, height: cog.height });
      checkSupported(resolved);
      const out = await render(cog, resolved, signal);
      return {
        status: 200,
        headers: {
          "content-type": out.contentType,
          [VERSION_HEADER]: cog.source.version,
          [ESTIMATE_HEADER]: String(preciseEstimate(cog, resolved)),
        },
        body: out.body,
      };
    });
  }

  /** Runs `fn` on the pinned COG; a store or decode failure drops the snapshot from the cache. */
  async function withCog(
    id: string,
    version: string | undefined,
    signal: AbortSignal,
    fn: (cog: Cog) => Promise<Answer>,
  ): Promise<Answer> {
    return cogs.use(id, version, signal, async (cog) => {
      try {
        return await fn(cog);
      } catch (e) {
        if (!signal.aborted && isStoreFailure(e)) cogs.evict(id, cog.source.version);
        throw e;
      }
    });
  }

  async function failure(err: unknown, req: IncomingMessage, url: URL, signal: AbortSignal): Promise<Answer> {
    if (!(err instanceof HttpError) && !signal.aborted) {
      log({
        level: "error",
        msg: "unexpected failure",
        method: req.method,
        path: url.pathname,
        error: err instanceof Error ? err.message : String(err),
        stack: err instanceof Error ? err.stack : undefined,
      });
    }
    // The one error table; anything not an HttpError is a generic 502, no detail on the wire.
    const response = errorResponse(err);
    const headers: Record<string, string> = {};
    response.headers.forEach((v, k) => (headers[k] = v));
    return { status: response.status, headers, body: Buffer.from(await response.arrayBuffer()) };
  }
}

/** Writes an answer; a stream that fails midway cuts the body short, never mixes versions. */
async function send(res: ServerResponse, answer: Answer): Promise<void> {
  if (res.destroyed) return;
  if (Buffer.isBuffer(answer.body)) {
    res.writeHead(answer.status, { ...answer.headers, "content-length": String(answer.body.length) });
    res.end(answer.body);
    return;
  }
  res.writeHead(answer.status, answer.headers);
  await pipeline(Readable.from(answer.body), res).catch(() => res.destroy());
}

/** Failures that may mean the snapshot (or our copy of its headers) is unusable. */
function isStoreFailure(e: unknown): boolean {
  return !(e instanceof HttpError) || e.kind === "bad_gateway" || e.kind === "gateway_timeout";
}

function requireGet(req: IncomingMessage): void {
  if (req.method !== "GET") throw badRequest(`method ${req.method} is not allowed; use GET`);
}

function headerValue(h: string | string[] | undefined): string | null {
  if (Array.isArray(h)) return h[0] ?? null;
  return h ?? null;
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw badRequest(`path segment "${segment}" is not valid percent-encoding`);
  }
}

function json(status: number, body: unknown, headers: Record<string, string> = {}): Answer {
  return {
    status,
    headers: { "content-type": "application/json; charset=utf-8", ...headers },
    body: Buffer.from(JSON.stringify(body)),
  };
}
