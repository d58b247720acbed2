// The regional decoder's HTTP service (node:http). Routes are the DECODER paths of
// shared/protocol.ts; every /v1 request must carry the edge's HMAC signature.
//
//   GET /health                                  → { ok, capacity }            (unauthenticated)
//   GET /v1/info/{id}?version=V                  → SourceInfo JSON
//   GET /v1/styles/{name}                        → a stored Raster Style document (style-handler.ts)
//   GET /v1/image/{id}/{region}/{size}/{rotation}/{quality}.{format}?version=V → image bytes
//   GET /v1/tiles/{id}/{tileMatrixSet}/{z}/{x}/{y}[@2x].{ext}?{query}&version=V → a map tile (tile-handler.ts)
//
// The runtime limits wrap every /v1 request here: a request-limiter permit (or 503 at
// once), a deadline covering opening, budget waits, I/O and encoding (408), and one
// AbortSignal that fires on the client's disconnect or the deadline and reaches every Source
// read and every stage boundary. Images and tiles reserve their estimated work memory from the
// work budget before any pixel I/O (one exclusive retry when the allowance is taken; 413 when
// the request alone exceeds it). While the decoder drains (drain.ts), new requests are refused
// before any of that, and every answer carries the request's id (shared/request-id.ts).

import { createHmac, randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { Readable } from "node:stream";
import { finished, pipeline } from "node:stream/promises";
import { Registry } from "prom-client";
import { badRequest, errorResponse, HttpError, notFound } from "../../shared/errors";
import { ADMISSION_DEFAULTS } from "../../shared/admission-config";
import { parseImageRequest } from "../../shared/iiif/image-request";
import { resolveImageRequest, type ResolvedImageRequest } from "../../shared/iiif/resolve";
import { classify, ESTIMATE_HEADER, GrantExceeded, NEEDED_HEADER, type Partition } from "../../shared/cost";
import {
  DECODER,
  GRANT_HEADER,
  GRANTED_PARTITION_HEADER,
  limitsFrom,
  REQUEST_ID_HEADER,
  SIGNATURE_HEADER,
  TIMEOUT_HEADER,
  VERSION_HEADER,
  verifyRequest,
  type SignedLimits,
} from "../../shared/protocol";
import { MAX_DEADLINE_MS, withDeadline } from "../runtime/deadlines";
import { Drain, drainingAnswer } from "../runtime/drain";
import { isValidRequestId, X_REQUEST_ID } from "../../shared/request-id";
import { CogCache, type Opened } from "../cog/cog-cache";
import { DecodedBlockCache } from "../cog/block-cache";
import { Cog } from "../cog/cog";
import { Mosaic, type MosaicAssets } from "../mosaic/mosaic";
import { mosaicIsMapOnly } from "../../shared/maps/mosaic-json";
import { DEFAULT_MOSAIC_MAX_ASSETS, withMosaicTile, type MosaicTileOptions } from "../mosaic/mosaic-tile";
import { assetCatalog } from "../source/asset-catalog";
import { readAssetConfig } from "../source/access-policy";
import { AssetSources } from "../source/assets";
import { registry, requestSeconds, requestsTotal, routeOf } from "../runtime/metrics";
import { passthroughTile, storedTile } from "../render/passthrough";
import { configureSharp, render } from "../render/render";
import { DEFAULT_MAX_FILE_TRANSFERS, DEFAULT_MAX_IN_FLIGHT, RequestLimiter } from "../runtime/request-limiter";
import { runtimeMetrics } from "../runtime/server-metrics";
import { isValidSourceId } from "../source/source-id";
import { sourceChunks } from "../source/chunks";
import type { SourceCatalog } from "../source/source";
import { admitWork, WorkBudget, type Reservation } from "../runtime/work-budget";
import type { PreparedDecode } from "../render/prepared-decode";
import { prepareTile } from "../handlers/tile";
import { readStyle } from "../handlers/style";
import { parseTileRequest, type TilePathParams } from "../../shared/maps/tile-request";
import { renderCost } from "../render/work-estimate";

export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

export interface DecoderOptions {
  catalog: SourceCatalog;
  /** Shared HMAC secret of the edge and its decoders. */
  secret: string;
  /** How many decodes this process runs well at once; reported to the admission DO. */
  capacity: number;
  /** How many opened snapshots to keep (default 64). */
  cogCacheSize?: number;
  /** Work allowance shared by this server's requests (default: WorkBudget.global(), 512 MiB). */
  budget?: WorkBudget;
  /** Public requests admitted at once (default 64); inject one to share it between servers. */
  limiter?: RequestLimiter;
  /** /file transfers streaming at once, beside the limiter's requests (default 16). */
  maxFileTransfers?: number;
  /** Default request deadline in ms (30 s), overridable per request with TIMEOUT_HEADER. */
  requestTimeoutMs?: number;
  /** Decoded-block cache (default: 256 MiB of its own). */
  blockCache?: DecodedBlockCache;
  /** Header blocks kept per snapshot and tile-table prefetch (0 = none; default 8). */
  prefetchRing?: number;
  /** Bound on work shared by many requests: a source open, header and tile-table reads (default 10 s). */
  sharedWorkTimeoutMs?: number;
  /** Where mosaics' assets come from, under the access policy (default: any store key of `catalog`, no web hosts). */
  assets?: AssetSources;
  /** Most assets a mosaic tile may paint (default 32); more is 413. */
  mosaicMaxAssets?: number;
  /** The graceful drain, started on SIGTERM (default: one that never starts). */
  drain?: Drain;
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
  /** Bytes of a whole body sent before `body` (shared by many answers, never copied). */
  head?: Buffer;
  /** A whole body, or a stream of chunks whose content-length is in `headers`. */
  body: Buffer | AsyncIterable<Uint8Array>;
  /** Frees what the answer holds, once its last byte is written or its client is gone. */
  done?: () => void;
}

/** What the admission DO granted a request: its peak memory, and the partition it counts in. */
interface Grant {
  bytes: number;
  partition?: Partition;
}

/** Creates (does not start) the decoder's HTTP server. */
export function createDecoderServer(options: DecoderOptions): Server {
  configureSharp();
  const log = options.log ?? jsonLog;
  const budget = options.budget ?? WorkBudget.global();
  const limiter = options.limiter ?? new RequestLimiter(DEFAULT_MAX_IN_FLIGHT);
  const transfers = new RequestLimiter(options.maxFileTransfers ?? DEFAULT_MAX_FILE_TRANSFERS, "file transfers");
  const blockCache = options.blockCache ?? new DecodedBlockCache();
  const defaultTimeout = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  const runtime = runtimeMetrics(budget, limiter, transfers, blockCache, () => cogs.size);
  const drain = options.drain ?? new Drain();
  const metricsRegistry = Registry.merge([registry, runtime.registry, drain.registry]);
  const cogOptions = { cache: blockCache, budget, prefetchRing: options.prefetchRing, sharedWorkTimeoutMs: options.sharedWorkTimeoutMs };
  // A mosaic's members: opened through the access policy, with zero prefetch (a tile reads a
  // small window of each of many files), each kept at one snapshot while cached.
  const assets = options.assets ?? new AssetSources(readAssetConfig({}), (key, signal) => options.catalog.openKey(key, signal));
  const mosaicTiles: MosaicTileOptions = {
    members: new CogCache<Cog>(assetCatalog(assets), (source) => Cog.open(source, { ...cogOptions, prefetchRing: 0 }), options.cogCacheSize, {
      ...cogOptions,
      rememberVersions: true,
    }),
    maxAssets: options.mosaicMaxAssets ?? DEFAULT_MOSAIC_MAX_ASSETS,
  };
  const mosaicAssets: MosaicAssets = {
    open: (asset, signal) => assets.open(asset, signal),
    georeference: (asset, signal) => mosaicTiles.members.use(asset, undefined, signal, async (cog) => cog.geo?.info),
  };
  const cogs = new CogCache<Cog | Mosaic>(
    options.catalog,
    (source) => (source.document ? Mosaic.open(source, mosaicAssets) : Cog.open(source, cogOptions)),
    options.cogCacheSize,
    cogOptions,
  );

  /** Requests that named themselves with REQUEST_ID_HEADER, for the DO's cancel. */
  const cancellable = new Map<string, AbortController>();

  const server = createServer((req, res) => {
    const started = performance.now();
    const controller = new AbortController();
    const held = drain.hold(controller);
    // The edge's id for the client's request; a request without a valid one (no edge in front) gets its own.
    const sent = headerValue(req.headers[X_REQUEST_ID]);
    const requestId = isValidRequestId(sent) ? sent : randomUUID();
    // 'close' before the answer finished means the client went away: stop the work.
    res.on("close", () => {
      if (!res.writableFinished) controller.abort(new DOMException("client disconnected", "AbortError"));
    });
    // Only the path and query are ours to read; an unparsable target is answered like any 400.
    const url = URL.canParse(req.url ?? "/", "http://decoder")
      ? new URL(req.url ?? "/", "http://decoder")
      : new URL("http://decoder/");
    handle(req, url, controller, requestId)
      .catch((err) => failure(err, req, url, controller.signal, requestId))
      .then(async (answer) => {
        // While draining, no connection is kept open for a next request that would be refused.
        if (drain.draining) res.setHeader("connection", "close");
        res.setHeader(X_REQUEST_ID, requestId);
        try {
          await send(res, answer);
        } finally {
          answer.done?.();
        }
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
          request: headerValue(req.headers[REQUEST_ID_HEADER]) ?? undefined,
          requestId,
          status,
          ms: Math.round(performance.now() - started),
        });
      })
      .catch((err) => {
        // Last resort (a failing log sink, a broken socket): never an unhandled rejection.
        process.stderr.write(`${JSON.stringify({ level: "error", msg: "response failed", error: String(err), requestId })}\n`);
        res.destroy();
      })
      .finally(held);
  });
  server.on("connection", () => runtime.connections.inc());
  server.on("close", () => {
    cogs.closeAll();
    mosaicTiles.members.closeAll();
    void assets.close();
  });
  return server;

  async function handle(req: IncomingMessage, url: URL, controller: AbortController, requestId: string): Promise<Answer> {
    if (!URL.canParse(req.url ?? "/", "http://decoder")) throw badRequest("unparsable request target");
    if (drain.refuses(url.pathname)) return drainingAnswer(requestId);
    if (url.pathname === DECODER.health) {
      requireMethod(req, "GET");
      return json(200, { ok: true, capacity: options.capacity });
    }
    if (url.pathname === "/metrics") {
      requireMethod(req, "GET");
      const body = Buffer.from(await metricsRegistry.metrics());
      return { status: 200, headers: { "content-type": metricsRegistry.contentType }, body };
    }
    const segments = url.pathname.split("/").slice(1);
    if (segments[0] !== "v1") throw notFound(`no route ${url.pathname}`);
    const limits = limitsFrom((name) => headerValue(req.headers[name]));
    await verifyRequest(
      options.secret,
      req.method ?? "GET",
      req.url ?? "",
      headerValue(req.headers[SIGNATURE_HEADER]),
      Date.now(),
      nodeHmac,
      limits,
    );
    const parts = segments.slice(1).map(decodeSegment);
    if (parts[0] === "cancel" && parts.length === 2) {
      requireMethod(req, "POST");
      return cancel(parts[1]);
    }
    if (parts[0] === "invalidate" && parts.length === 2) {
      requireMethod(req, "POST");
      // invalidate_source(mosaic, member): the member's next lookup opens a fresh snapshot.
      const member = url.searchParams.get("member");
      if (member !== null) return json(200, { id: parts[1], member, dropped: mosaicTiles.members.invalidate(member) });
      return json(200, { id: parts[1], dropped: cogs.invalidate(parts[1]) });
    }
    requireMethod(req, "GET");
    const version = url.searchParams.get("version") ?? undefined;
    // One id rule for every catalog (S3 keys included), before any I/O.
    if (parts.length >= 2 && !isValidSourceId(parts[1])) throw notFound(`unknown source "${parts[1]}"`);
    const [kind, id, region, size, rotation, qualityFormat] = parts;
    const grant = grantOf(limits);
    const tileQuery = new URLSearchParams(url.searchParams);
    tileQuery.delete("version");
    // Each route: its segment count, the limiter it runs under, and its handler, given the
    // request's deadline signal. /file decodes nothing: it has a cap of its own, and its stream
    // ends with its client, not its deadline (which bounds the open, before the headers).
    const routes: Record<string, [number, RequestLimiter, (s: AbortSignal) => Promise<Answer>]> = {
      info: [2, limiter, (s) => info(id, version, s)],
      styles: [2, limiter, (s) => style(id, s)],
      file: [2, transfers, (s) => file(id, version, s, controller.signal)],
      image: [6, limiter, (s) => image(id, { region, size, rotation, qualityFormat }, version, s, grant)],
      tiles: [6, limiter, (s) => tile(id, { tileMatrixSet: region, z: size, x: rotation, y: qualityFormat }, tileQuery, version, s, grant)],
    };
    const [length, routeLimiter, route] = Object.hasOwn(routes, kind) ? routes[kind] : [];
    if (!route || !routeLimiter || parts.length !== length) throw notFound(`no route ${url.pathname}`);
    // The admission DO's grant replaces this decoder's defaults; without one (no edge in
    // front) the decoder's own deadline and work budget apply.
    const timeout = wholeNumber(limits.timeoutMs, TIMEOUT_HEADER, 1, MAX_DEADLINE_MS) ?? defaultTimeout;
    // The permit is held until the answer's last byte is written, as the DO holds its own.
    const release = routeLimiter.acquire();
    const forget = trackCancellable(limits.requestId, controller);
    const deadline = withDeadline(controller.signal, timeout);
    try {
      const answer = await route(deadline.signal);
      return { ...answer, done: () => (answer.done?.(), forget(), release()) };
    } catch (err) {
      forget();
      release();
      throw err;
    } finally {
      deadline.done();
    }
  }

  /** Registers a request the DO may cancel by id; the returned function forgets it. */
  function trackCancellable(requestId: string | null | undefined, controller: AbortController): () => void {
    if (!requestId) return () => {};
    if (cancellable.has(requestId)) throw badRequest(`request id ${requestId} is already in use`);
    cancellable.set(requestId, controller);
    return () => cancellable.delete(requestId);
  }

  /**
   * The DO's client went away: stop this request's I/O at its next read or stage boundary. Work
   * already inside libvips finishes first; the request's own answer, sent when it has stopped,
   * is what tells the DO its permit and memory are free again.
   */
  function cancel(requestId: string): Answer {
    cancellable.get(requestId)?.abort(new DOMException("cancelled: the client went away", "AbortError"));
    return { status: 204, headers: {}, body: Buffer.alloc(0) };
  }

  async function info(id: string, version: string | undefined, signal: AbortSignal): Promise<Answer> {
    return withCog(id, version, signal, async (opened) => {
      const body = opened.info(id);
      return json(200, body, { [VERSION_HEADER]: body.version });
    });
  }

  async function style(name: string, signal: AbortSignal): Promise<Answer> {
    const { text, version } = await readStyle(options.catalog, name, signal);
    return { status: 200, headers: { "content-type": "application/json; charset=utf-8", [VERSION_HEADER]: version }, body: Buffer.from(text) };
  }

  /**
   * The stored bytes of the pinned snapshot, streamed; no header parse, no decode. `deadline`
   * bounds the open; the stream runs until `client` goes away (each store read has its own
   * timeouts), so a long transfer is never cut short once its headers are out.
   */
  async function file(id: string, version: string | undefined, deadline: AbortSignal, client: AbortSignal): Promise<Answer> {
    const source = await options.catalog.open(id, version, deadline);
    if (source.document) {
      await source.close();
      throw mosaicIsMapOnly(id);
    }
    return {
      status: 200,
      headers: {
        "content-type": "image/tiff",
        "content-length": String(source.size),
        [VERSION_HEADER]: source.version,
      },
      body: sourceChunks(source, client),
    };
  }

  async function image(
    id: string,
    parts: Parameters<typeof parseImageRequest>[0],
    version: string | undefined,
    signal: AbortSignal,
    grant: Grant | undefined,
  ): Promise<Answer> {
    // Syntax first: a malformed request costs no I/O.
    const parsed = parseImageRequest(parts, 3);
    return withCog(id, version, signal, async (cog) => {
      if (cog instanceof Mosaic) throw mosaicIsMapOnly(id);
      // Sources of other than 8-bit samples are map tiles only.
      if (cog.imageRefusal) throw cog.imageRefusal;
      // `max` resolves within what this decoder can render; explicit sizes are the edge's to
      // hold to the declared limits (400) and the work budget's to refuse (413).
      const resolved = resolveImageRequest(parsed, parsed.size.kind === "max" ? cog.limits : cog);
      const prepared: PreparedDecode = {
        cost: renderCost(cog, resolved),
        what: `${id} ${parts.region}/${parts.size}`,
        render: (s, work) => renderImage(cog, resolved, s, work),
      };
      return decode(cog, prepared, signal, grant);
    });
  }

  async function tile(id: string, path: TilePathParams, query: URLSearchParams, version: string | undefined, signal: AbortSignal, grant: Grant | undefined): Promise<Answer> {
    // Syntax first: a malformed request costs no I/O.
    const req = parseTileRequest(path, query);
    return withCog(id, version, signal, async (opened) =>
      opened instanceof Mosaic
        ? withMosaicTile(opened, id, req, mosaicTiles, signal, (prepared) => decode(opened, prepared, signal, grant))
        : decode(opened, prepareTile(opened, id, req), signal, grant),
    );
  }

  /**
   * Runs a costed decode as every decode runs: within the DO's grant its work is reserved at
   * once (above it the DO must re-admit it: GrantExceeded); without a grant, from this
   * decoder's work budget (one exclusive retry, 413 when it can never fit). The answer carries
   * the precise estimate, and its encoded bytes stay reserved until the last one is written.
   */
  async function decode(opened: Opened, prepared: PreparedDecode, signal: AbortSignal, grant: Grant | undefined): Promise<Answer> {
    const { cost, what } = prepared;
    if (grant && cost > grant.bytes) throw new GrantExceeded(cost);
    const work = grant ? budget.takeGranted(cost) : await admitWork(budget, cost, what, signal, () => runtime.budgetRetries.inc());
    const stopped = runtime.decodes.start(grant?.partition ?? classify(cost, ADMISSION_DEFAULTS.LARGE_DECODE_THRESHOLD_BYTES));
    try {
      const out = await prepared.render(signal, work);
      // The encoded answer (its estimate's encode stage) stays reserved until its last byte is
      // written: a pooled answer holds its whole buffer, not only the body's bytes.
      const held = work.carve(out.done ? out.body.buffer.byteLength : out.body.length);
      return {
        status: 200,
        headers: {
          "content-type": out.contentType,
          [VERSION_HEADER]: opened.source.version,
          // The precise peak-memory estimate, for the DO's classifier-disagreement count.
          [ESTIMATE_HEADER]: String(cost),
        },
        head: out.head,
        body: out.body,
        done: () => (out.done?.(), held.release()),
      };
    } finally {
      stopped();
      work.release();
    }
  }

  /** Cheapest first: the stored tile itself, else render.ts (a TurboJPEG encode of cached pixels, libvips). */
  async function renderImage(cog: Cog, resolved: ResolvedImageRequest, signal: AbortSignal, work: Reservation) {
    const tile = passthroughTile(cog, resolved);
    if (!tile) return render(cog, resolved, signal, work);
    runtime.passthrough.inc();
    return storedTile(cog, tile, signal);
  }

  /** Runs `fn` on the pinned COG; a store or decode failure drops the snapshot from the cache. */
  async function withCog(
    id: string,
    version: string | undefined,
    signal: AbortSignal,
    fn: (opened: Cog | Mosaic) => Promise<Answer>,
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

  async function failure(err: unknown, req: IncomingMessage, url: URL, signal: AbortSignal, requestId: string): Promise<Answer> {
    if (!(err instanceof HttpError) && !signal.aborted) {
      log({
        level: "error",
        msg: "unexpected failure",
        method: req.method,
        path: url.pathname,
        requestId,
        error: err instanceof Error ? err.message : String(err),
        stack: err instanceof Error ? err.stack : undefined,
      });
    }
    if (err instanceof HttpError && REJECTIONS[err.kind]) runtime.rejected.inc({ reason: REJECTIONS[err.kind] });
    else if (signal.aborted) runtime.rejected.inc({ reason: "cancelled" });
    // The one error table; anything not an HttpError is a generic 502, no detail on the wire.
    const response = errorResponse(err, {}, requestId);
    const headers: Record<string, string> = {};
    response.headers.forEach((v, k) => (headers[k] = v));
    if (err instanceof GrantExceeded) headers[NEEDED_HEADER] = String(err.neededBytes);
    return { status: response.status, headers, body: Buffer.from(await response.arrayBuffer()) };
  }
}

/**
 * Writes an answer and resolves once its last byte is written or the client is gone. A stream
 * that fails midway cuts the body short, never mixes versions.
 */
async function send(res: ServerResponse, answer: Answer): Promise<void> {
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

/** The edge's signature, computed with node:crypto: synchronous, no WebCrypto job per request. */
const nodeHmac = (secret: string, message: string) => createHmac("sha256", secret).update(message).digest("hex");

/** Error kinds that are the runtime limits at work, as labels of tessera_decoder_rejected_total. */
const REJECTIONS: Partial<Record<HttpError["kind"], string>> = {
  overloaded: "overloaded",
  deadline: "deadline",
  too_large: "too_large",
};

/** The DO's grant, when the request carries one. */
function grantOf(limits: SignedLimits): Grant | undefined {
  const bytes = wholeNumber(limits.grantBytes, GRANT_HEADER, 0, Number.MAX_SAFE_INTEGER);
  if (bytes === undefined) return undefined;
  const partition = limits.partition ?? undefined;
  if (partition !== undefined && partition !== "tile" && partition !== "full") {
    throw badRequest(`${GRANTED_PARTITION_HEADER} must be tile or full`);
  }
  return { bytes, partition };
}

/** A signed limit header's value, within bounds; undefined when absent. */
function wholeNumber(raw: string | null | undefined, header: string, min: number, max: number): number | undefined {
  if (raw === null || raw === undefined) return undefined;
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || n < min || n > max) throw badRequest(`${header} must be a whole number from ${min} to ${max}`);
  return n;
}

/**
 * Failures that may mean the snapshot (or our copy of its headers) is unusable: the source and
 * TIFF layers report those as 502/504. Anything else (an encoder refusing the request) leaves the
 * snapshot open, so repeating one URL cannot force a full re-open on every request.
 */
function isStoreFailure(e: unknown): boolean {
  return e instanceof HttpError && (e.kind === "bad_gateway" || e.kind === "gateway_timeout");
}

function requireMethod(req: IncomingMessage, method: "GET" | "POST"): void {
  if (req.method !== method) throw badRequest(`method ${req.method} is not allowed; use ${method}`);
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
