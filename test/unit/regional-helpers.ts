// Shared by the regional-*.test.ts files: fixtures, a started decoder, signed requests,
// and pixel comparison against the reference PNG.

import { copyFile, mkdtemp, rm } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import sharp from "sharp";
import { parseFeatureBody } from "../../shared/maps/feature";
import { BODY_DIGEST_PARAM, limitsFrom, SIGNATURE_HEADER, signedHeaders, type SignedLimits } from "../../shared/protocol";
import type { DecoderOptions } from "../../regional/decoder";
import { createDecoderServer } from "../../regional/http/server";
import type { LogRecord } from "../../regional/runtime/log";
import type { Source, SourceCatalog } from "../../regional/source/source";

export const SAMPLES = fileURLToPath(new URL("../../samples/", import.meta.url));
/** The IIIF validator test pattern: 1000×1000, 10×10 px coloured squares. */
export const REFERENCE_PNG = path.join(SAMPLES, "test-pattern.png");

/** A temp directory holding copies of the sample COGs as `jpeg.tif` and `deflate.tif`. */
export async function fixtureDir(): Promise<{ dir: string; remove(): Promise<void> }> {
  const dir = await mkdtemp(path.join(tmpdir(), "tessera-regional-"));
  await copyFile(path.join(SAMPLES, "test-pattern.tif"), path.join(dir, "jpeg.tif"));
  await copyFile(path.join(SAMPLES, "test-pattern-deflate.tif"), path.join(dir, "deflate.tif"));
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

export interface Decoder {
  url: string;
  secret: string;
  logs: LogRecord[];
  close(): Promise<void>;
}

export async function startDecoder(
  catalog: SourceCatalog,
  capacity = 3,
  options: Partial<DecoderOptions> = {},
): Promise<Decoder> {
  const secret = "unit-test-secret";
  const logs: LogRecord[] = [];
  const server = createDecoderServer({
    catalog,
    secret,
    capacity,
    log: (r) => logs.push(r),
    ...options,
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    secret,
    logs,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/**
 * The decoder's "refused" log record of the answer with `requestId` (its x-request-id): its
 * detail is what the answer leaves out (labels, keys, a library's words).
 */
export const refusalLog = (d: Decoder, requestId: string | null) => d.logs.find((r) => r.msg === "refused" && r.requestId === requestId);

/** The value of one sample (no labels, or the given label text) on the decoder's /metrics. */
export async function metricValue(d: Decoder, name: string, labels = ""): Promise<number> {
  const text = await (await fetch(`${d.url}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name}${labels} `));
  return line ? Number(line.split(" ")[1]) : 0;
}

/**
 * GET `pathAndQuery` signed as the edge signs (limit headers signed, a fresh request id unless
 * they name one), or with the given signature header value (null: none) and the headers as given.
 */
export async function signedGet(
  d: Decoder,
  pathAndQuery: string,
  signature?: string | null,
  extraHeaders: Record<string, string> = {},
): Promise<Response> {
  const limits = limitsFrom((name) => extraHeaders[name] ?? null);
  const headers =
    signature === undefined
      ? { ...extraHeaders, ...(await signedHeaders(d.secret, "GET", pathAndQuery, limits)) }
      : { ...extraHeaders, ...(signature !== null && { [SIGNATURE_HEADER]: signature }) };
  return fetch(d.url + pathAndQuery, { headers });
}

/** POST `path` signed as the edge signs. */
export async function signedPost(d: Decoder, path: string): Promise<Response> {
  return fetch(d.url + path, { method: "POST", headers: await signedHeaders(d.secret, "POST", path) });
}

/**
 * POST a GeoJSON body to `path` as the edge sends one: canonical, its digest named in the signed
 * path (`digest` given: that digest, for a body that does not match it, sent as it is).
 */
export async function signedPostBody(d: Decoder, path: string, body: string, digest?: string, limits: SignedLimits = {}): Promise<Response> {
  const sent = digest === undefined ? await parseFeatureBody(body) : { canonical: body, digest };
  const named = `${path}${path.includes("?") ? "&" : "?"}${BODY_DIGEST_PARAM}=${sent.digest}`;
  return fetch(d.url + named, { method: "POST", body: sent.canonical, headers: await signedHeaders(d.secret, "POST", named, limits) });
}

export interface Raster {
  data: Buffer;
  width: number;
  height: number;
}

export async function decodeRgb(input: Buffer | string): Promise<Raster> {
  const { data, info } = await sharp(input).removeAlpha().toColourspace("srgb").raw().toBuffer({ resolveWithObject: true });
  if (info.channels !== 3) throw new Error(`expected 3 channels, got ${info.channels}`);
  return { data, width: info.width, height: info.height };
}

/** The reference pattern's pixels of a full-resolution rect, optionally resized. */
export async function referenceRgb(
  rect: { x: number; y: number; w: number; h: number },
  size?: { width: number; height: number },
): Promise<Raster> {
  let img = sharp(REFERENCE_PNG).removeAlpha().extract({ left: rect.x, top: rect.y, width: rect.w, height: rect.h });
  if (size) {
    // Resize in a second pipeline so the extract happens first.
    img = sharp(await img.png().toBuffer()).resize(size.width, size.height, { fit: "fill" });
  }
  return decodeRgb(await img.png().toBuffer());
}

/** Mean absolute difference per channel value between two same-sized RGB rasters. */
export function meanAbsDiff(a: Raster, b: Raster): number {
  if (a.width !== b.width || a.height !== b.height) {
    throw new Error(`size mismatch: ${a.width}x${a.height} vs ${b.width}x${b.height}`);
  }
  let sum = 0;
  for (let i = 0; i < a.data.length; i++) sum += Math.abs(a.data[i] - b.data[i]);
  return sum / a.data.length;
}

/** A catalog that records every byte range read through the sources it opens. */
export class RecordingCatalog implements SourceCatalog {
  readonly reads: { id: string; offset: number; length: number }[] = [];
  readonly signals: (AbortSignal | undefined)[] = [];
  /** How many times each id was opened. */
  readonly opens = new Map<string, number>();
  constructor(private readonly inner: SourceCatalog) {}
  get description() {
    return `recording ${this.inner.description}`;
  }
  async open(id: string, version: string | undefined, signal?: AbortSignal): Promise<Source> {
    return this.recorded(id, await this.inner.open(id, version, signal));
  }
  /** A mosaic's members are opened by key: recorded under the key. */
  async openKey(key: string, signal?: AbortSignal): Promise<Source> {
    return this.recorded(key, await this.inner.openKey(key, signal));
  }
  private recorded(id: string, src: Source): Source {
    this.opens.set(id, (this.opens.get(id) ?? 0) + 1);
    const read = src.read.bind(src);
    src.read = async (offset, length, sig) => {
      this.reads.push({ id, offset, length });
      this.signals.push(sig);
      return read(offset, length, sig);
    };
    return src;
  }
  bytesRead(): number {
    return this.reads.reduce((n, r) => n + r.length, 0);
  }
}

/**
 * A catalog whose tile reads (the reads that carry a request's signal) wait for `open()` of
 * the gate, so a test can hold requests in flight. Records every tile read and every abort.
 */
export class GatedCatalog implements SourceCatalog {
  readonly description = "gated";
  readonly tileReads: { offset: number; length: number }[] = [];
  readonly aborted: unknown[] = [];
  private gate!: Promise<void>;
  private release!: () => void;
  private waiting: (() => void)[] = [];

  /**
   * noticesAbort false: a held read notices its abort only once let through (a store read under
   * way); `ungated` says which tile reads (by offset) are never held.
   */
  constructor(
    private readonly inner: SourceCatalog,
    private readonly options: { noticesAbort: boolean; ungated?: (offset: number) => boolean } = { noticesAbort: true },
  ) {
    this.close();
  }

  openKey(key: string, signal?: AbortSignal): Promise<Source> {
    return this.inner.openKey(key, signal);
  }

  /** Lets every held and future tile read through. */
  pass(): void {
    this.release();
  }

  /** Holds tile reads from now on. */
  close(): void {
    this.gate = new Promise((r) => (this.release = r));
  }

  /** Resolves once `n` tile reads have started. */
  async readsStarted(n: number): Promise<void> {
    while (this.tileReads.length < n) await new Promise<void>((r) => this.waiting.push(r));
  }

  async open(id: string, version: string | undefined, signal?: AbortSignal): Promise<Source> {
    const src = await this.inner.open(id, version, signal);
    const read = src.read.bind(src);
    src.read = async (offset, length, sig) => {
      if (!sig || this.options.ungated?.(offset)) return read(offset, length, sig);
      this.tileReads.push({ offset, length });
      this.waiting.splice(0).forEach((w) => w());
      await new Promise<void>((resolve, reject) => {
        if (!this.options.noticesAbort) return void this.gate.then(resolve);
        if (sig.aborted) return reject(sig.reason);
        sig.addEventListener("abort", () => {
          this.aborted.push(sig.reason);
          reject(sig.reason);
        });
        void this.gate.then(resolve);
      });
      return read(offset, length, sig);
    };
    return src;
  }
}
