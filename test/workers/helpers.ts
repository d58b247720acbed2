// Shared by the workerd tests: requests through the real Worker, its metrics, and decoder
// registration through the real heartbeat route (the tests speak for the frozen decoder,
// which cannot heartbeat while SIGSTOPped).
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import worker from "../../edge/index";
import type { Env } from "../../edge/env";
import { decoderLabel, signRequest, SIGNATURE_HEADER, type SourceInfo } from "../../shared/protocol";
import { heartbeatTarget, type Heartbeat } from "../../shared/registration";
import { tileBounds, tileMatrixSet } from "../../shared/maps/tile-matrix-sets";
import { infoKey } from "../../edge/source-info";

export const BASE = "http://tessera.test";

/** An edge that enforces access (restricted sources), with a login at login.example.org and a reading room at 192.0.2.0/24. */
export const ACCESS_VARS = {
  AUTH_SECRET: "s".repeat(40),
  AUTH_LOGIN_URL: "https://login.example.org/start?realm=reading",
  AUTH_LOGIN_KEY: "k".repeat(40),
  AUTH_KIOSK_ADDRESSES: "192.0.2.0/24",
  AUTH_INSTITUTION: "Example Library",
} satisfies Partial<Env>;
export const get = (path: string, init?: RequestInit) => exports.default.fetch(new Request(BASE + path, init));

export const bytes = async (res: Response) => new Uint8Array(await res.arrayBuffer());

/** Width and height from a PNG's IHDR chunk. */
export const pngSize = (png: Uint8Array) => {
  const view = new DataView(png.buffer, png.byteOffset);
  return [view.getUint32(16), view.getUint32(20)];
};

/**
 * The real Worker's answer to `path` with `vars` over the test bindings, read whole, once the
 * request's cache writes are done (so the next request sees them).
 */
export async function getWith(path: string, vars: Partial<Env> = {}, init?: RequestInit): Promise<Response> {
  const ctx = createExecutionContext();
  const res = await worker.fetch(new Request(BASE + path, init), { ...env, ...vars } as Env, ctx);
  const body = await res.arrayBuffer();
  await waitOnExecutionContext(ctx);
  return new Response(res.status === 304 ? null : body, res);
}

export async function metric(name: string): Promise<number> {
  const text = await (await get("/metrics")).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name} `) || l.startsWith(`tessera_admission_${name} `));
  // A metric that is not there is a test's mistake, never NaN: NaN + 1 would equal NaN.
  if (line === undefined) throw new Error(`no metric ${name} on /metrics`);
  return Number(line.split(" ")[1]);
}

/**
 * Waits until no lease is held. A request the frozen decoder took keeps its admission after its
 * client got 408 (the decoder's work has not stopped) until the lease's alarm ends it,
 * LEASE_GRACE (1 s in these tests) after the deadline: tests start from no permit in use.
 */
export async function settled(timeoutMs = 5000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while ((await metric("permits_in_use")) > 0) {
    if (Date.now() > until) throw new Error(`permits still in use after ${timeoutMs} ms`);
    await scheduler.wait(100);
  }
}

/** The label /metrics names the decoder at `url` by. */
export const labelOf = (url: string) => decoderLabel(env.DECODER_SECRET, url);

export async function heartbeat(report: Partial<Heartbeat> = {}, secret = env.DECODER_SECRET): Promise<Response> {
  const body = JSON.stringify({ url: env.TEST_DECODER_URL, capacity: 16, memoryBytes: 80 * 1000 * 1000, ...report });
  const target = await heartbeatTarget(body);
  return get(target, { method: "POST", body, headers: { [SIGNATURE_HEADER]: await signRequest(secret, "POST", target) } });
}

/** Metadata of a square RGB source with 256 px tiles and these level sizes, full size first. */
export function squareSource(id: string, sizes: number[]): SourceInfo {
  return {
    id,
    version: "v1",
    width: sizes[0],
    height: sizes[0],
    tileWidth: 256,
    tileHeight: 256,
    levels: sizes.map((size) => ({ width: size, height: size })),
    bytes: 1234,
  };
}

/**
 * Metadata of a 1024² RGB source in EPSG:3857 that covers exactly WebMercatorQuad tile 2/2/1
 * (lon 0° to 90°, lat 0° to 66.5°), with overviews of 512 and 256: WebMercatorQuad tiles 8..11 ×
 * 4..7 at zoom 4 hold its data, at its native resolution.
 */
export function georeferencedSource(id: string): SourceInfo {
  const mercator = tileBounds(tileMatrixSet("WebMercatorQuad"), 2, 2, 1);
  const north = 66.51326044311186;
  return {
    ...squareSource(id, [1024, 512, 256]),
    georeference: {
      crs: "EPSG:3857",
      bbox: mercator,
      lonLatBounds: [0, 0, 90, north],
      tiling: {
        WebMercatorQuad: { bounds: mercator, minZoom: 2, maxZoom: 4, resolution: (mercator[2] - mercator[0]) / 1024 },
        WorldCRS84Quad: { bounds: [0, 0, 90, north], minZoom: 1, maxZoom: 3, resolution: 90 / 1024 },
      },
    },
  };
}

/** Puts a source's metadata in the edge's cache, as a decoder's answer would have. */
export const cacheSourceInfo = (info: SourceInfo, version?: string) =>
  caches.default.put(infoKey({ id: info.id, version }), Response.json(info, { headers: { "cache-control": "max-age=3600" } }));
