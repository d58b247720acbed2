// HTTP(S) assets as Sources, under RequireValidator: opening learns the object's size and its
// strong ETag, and every later read is a ranged GET with If-Match on that ETag, so a tile can
// never mix bytes of two versions. Any answer that is not exactly the asked range of that
// version (a 412, a 200, another Content-Range or ETag, a body of another length) is a 502
// "source changed". Redirects are never followed: the access policy checked this host, not the
// redirect's. The reader has its own connection pool and timeouts, apart from the store's, so a
// slow web server cannot hold the connections the catalog needs.
//
// Opening is one ranged GET of the first bytes rather than a HEAD: the COG reader needs those
// bytes (the TIFF header) next anyway, so the open costs no extra round trip, and a URL signed
// for GET (a presigned S3 URL) answers a HEAD with 403.

import type { LookupFunction } from "node:net";
import { Agent, request, type Dispatcher } from "undici";
import { badGateway, HttpError } from "../../shared/errors";
import { AddressRefused, refusal } from "./access-policy";
import { parseContentRange } from "./content-range";
import { Slots } from "./slots";
import { sourceFault, type Source } from "./source";

export interface HttpReaderOptions {
  /** Connections open at once over all hosts. */
  connections: number;
  /** Connections open at once to one host (at most `connections`). */
  connectionsPerHost?: number;
  connectTimeoutMs?: number;
  /** Longest wait for an answer's headers. */
  headersTimeoutMs?: number;
  /** Longest pause inside an answer's body. */
  bodyTimeoutMs?: number;
  /** Resolves host names for connections (the access policy's checked lookup). */
  lookup?: LookupFunction;
}

export interface HttpOpenOptions {
  signal?: AbortSignal;
  /** Bytes read by the opening request and then served from memory. */
  openBytes?: number;
  /** Serve an object without a strong ETag, trusting that it never changes. */
  assumeImmutable?: boolean;
}

export const DEFAULT_OPEN_BYTES = 16 * 1024;
const DEFAULT_PER_HOST = 8;
const DEFAULT_CONNECT_TIMEOUT_MS = 3000;
const DEFAULT_TIMEOUT_MS = 10_000;

const TIMEOUT_CODES = new Set(["UND_ERR_CONNECT_TIMEOUT", "UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT"]);

const ignore = () => {};
/** A 502 about the asset: `what` it did, its label (the URL) for the log alone. */
const assetFault = (label: string, what: string) => sourceFault(label, `a mosaic asset ${what}`);
const changed = (label: string, what: string) => sourceFault(label, `source changed: a mosaic asset ${what}`);

/** Where the reader sends, and the label the log names it by. */
interface Target {
  url: URL;
  label: string;
}

/** One opened object: its size, the version its reads must be, and the ETag they send as If-Match. */
interface Snapshot extends Target {
  size: number;
  version: string;
  /** Undefined when the object was opened without a strong ETag (assumed immutable). */
  pin?: string;
}

export class HttpReader {
  private readonly agent: Agent;
  private readonly slots: Slots;

  constructor(options: HttpReaderOptions) {
    this.slots = new Slots(options.connections);
    this.agent = new Agent({
      connections: Math.min(options.connectionsPerHost ?? DEFAULT_PER_HOST, options.connections),
      connect: { timeout: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS, lookup: options.lookup },
      headersTimeout: options.headersTimeoutMs ?? DEFAULT_TIMEOUT_MS,
      bodyTimeout: options.bodyTimeoutMs ?? DEFAULT_TIMEOUT_MS,
    });
  }

  /** The object at `url` as a Source pinned to its current ETag, or a 502 (`label` naming it in the log). */
  async open(url: URL, label: string, options: HttpOpenOptions = {}): Promise<Source> {
    const { signal, openBytes = DEFAULT_OPEN_BYTES, assumeImmutable = false } = options;
    if (!Number.isSafeInteger(openBytes) || openBytes < 1) throw new RangeError("openBytes must be a whole number ≥ 1");
    const target = { url, label };
    return this.exchange(target, { range: `bytes=0-${openBytes - 1}` }, signal, async (res) => {
      const status = res.statusCode;
      if (status === 200) throw assetFault(label, "does not answer byte ranges (200, not 206)");
      if (status !== 206) throw redirected(label, status) ?? assetFault(label, `answered ${status}`);
      const sent = header(res, "content-range");
      const range = parseContentRange(sent);
      if (!range || range.first !== 0 || range.last !== Math.min(openBytes, range.total) - 1) {
        throw assetFault(label, `answered bytes=0-${openBytes - 1} with Content-Range ${sent ?? "(none)"}`);
      }
      const etag = header(res, "etag");
      const strong = etag !== undefined && !etag.startsWith("W/");
      if (!strong && !assumeImmutable) {
        throw assetFault(label, `has ${etag ? "only a weak ETag" : "no ETag"}, and without a strong one a changed object cannot be told from the one opened`);
      }
      const head = await readExactly(res.body, range.last + 1, label, signal);
      const version = etag ?? `unvalidated:${range.total}`;
      return new HttpSource(this, { ...target, size: range.total, version, pin: strong ? etag : undefined }, head);
    });
  }

  /** Bytes first..last of `snapshot`, or a 502 "source changed" if the answer is not exactly those. */
  async readRange(snapshot: Snapshot, first: number, last: number, signal?: AbortSignal): Promise<Uint8Array> {
    const { label, size, version, pin } = snapshot;
    const headers: Record<string, string> = { range: `bytes=${first}-${last}` };
    if (pin !== undefined) headers["if-match"] = pin;
    return this.exchange(snapshot, headers, signal, async (res) => {
      if (res.statusCode === 412) throw changed(label, `version ${version} is gone`);
      if (res.statusCode !== 206) throw redirected(label, res.statusCode) ?? changed(label, `answered ${res.statusCode}, not 206`);
      const want = `bytes ${first}-${last}/${size}`;
      const sent = header(res, "content-range");
      if (sent !== want) throw changed(label, `sent Content-Range ${sent ?? "(none)"}, not ${want}`);
      const etag = header(res, "etag");
      if (etag !== undefined && etag !== version) throw changed(label, `sent ETag ${etag}, not ${version}`);
      return readExactly(res.body, last - first + 1, label, signal);
    });
  }

  async close(): Promise<void> {
    await this.agent.close();
  }

  /**
   * One GET holding a connection slot until `answer` is done with the response; whatever body
   * it leaves unread is dropped (never drained: it may be a whole object).
   */
  private async exchange<T>(target: Target, headers: Record<string, string>, signal: AbortSignal | undefined, answer: (res: Dispatcher.ResponseData) => Promise<T>): Promise<T> {
    const release = await this.slots.acquire(signal);
    let res: Dispatcher.ResponseData | undefined;
    try {
      res = await request(target.url, { dispatcher: this.agent, method: "GET", headers, signal });
      return await answer(res);
    } catch (e) {
      throw failure(e, target.label, signal);
    } finally {
      if (res && !res.body.readableEnded) res.body.on("error", ignore).destroy();
      release();
    }
  }
}

class HttpSource implements Source {
  readonly label: string;
  readonly size: number;
  readonly version: string;

  constructor(
    private readonly reader: HttpReader,
    private readonly snapshot: Snapshot,
    /** The first bytes, read by the open. */
    private readonly head: Uint8Array,
  ) {
    this.label = snapshot.label;
    this.size = snapshot.size;
    this.version = snapshot.version;
  }

  async read(offset: number, length: number, signal?: AbortSignal): Promise<Uint8Array> {
    // Checked before any request: a range past the end comes from a broken header, not from I/O.
    const valid = Number.isSafeInteger(offset) && Number.isSafeInteger(length);
    if (!valid || offset < 0 || length < 0 || offset + length > this.size) {
      throw sourceFault(this.label, `read ${offset}+${length} is outside the mosaic asset (${this.size} bytes)`);
    }
    signal?.throwIfAborted();
    if (offset + length <= this.head.length) return this.head.slice(offset, offset + length);
    return this.reader.readRange(this.snapshot, offset, offset + length - 1, signal);
  }

  async close(): Promise<void> {
    // Nothing to release: the connections belong to the reader.
  }
}

/** The refusal of a redirect, which says why it is not followed; undefined for other statuses. */
function redirected(label: string, status: number): HttpError | undefined {
  if (status < 300 || status >= 400) return undefined;
  return assetFault(label, `answered a redirect (${status}), which is not followed: the access policy checked this host, not the redirect's`);
}

/** A single-valued response header (a repeated one counts as absent). */
function header(res: Dispatcher.ResponseData, name: string): string | undefined {
  const value = res.headers[name];
  return typeof value === "string" ? value : undefined;
}

/** The body as one buffer; anything but exactly `length` bytes is a 502. */
async function readExactly(body: Dispatcher.ResponseData["body"], length: number, label: string, signal?: AbortSignal): Promise<Uint8Array> {
  const buf = new Uint8Array(length);
  let got = 0;
  for await (const chunk of body as AsyncIterable<Uint8Array>) {
    if (got + chunk.byteLength > length) throw changed(label, `sent more than the ${length} bytes asked`);
    buf.set(chunk, got);
    got += chunk.byteLength;
  }
  signal?.throwIfAborted();
  if (got !== length) throw changed(label, `sent ${got} of the ${length} bytes asked`);
  return buf;
}

/**
 * What a failed exchange is to the caller: the signal's reason when it aborted, the asset's
 * refusal when the checked lookup refused an address, 504 for a timeout, else a 502. Details
 * name the label and the transport's code only (its own text may hold the URL); messages neither.
 */
function failure(e: unknown, label: string, signal?: AbortSignal): unknown {
  if (signal?.aborted) return signal.reason ?? e;
  if (e instanceof HttpError) return e;
  const refused = causes(e).find((c) => c instanceof AddressRefused);
  if (refused) return refusal(label, refused.why);
  const code = causes(e).map((c) => (c as { code?: unknown }).code).find((c) => typeof c === "string");
  if (code !== undefined && TIMEOUT_CODES.has(code)) {
    return new HttpError("gateway_timeout", "a mosaic asset did not answer in time", undefined, `${label}: a mosaic asset did not answer in time (${code})`);
  }
  return badGateway("a mosaic asset could not be read", `${label}: a mosaic asset could not be read: ${code ?? (e as Error)?.name ?? "error"}`);
}

/** An error and its chain of causes. */
function causes(e: unknown): unknown[] {
  const chain: unknown[] = [];
  for (let c = e; c !== undefined && c !== null && chain.length < 8; c = (c as { cause?: unknown }).cause) chain.push(c);
  return chain;
}
