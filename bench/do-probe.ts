// What bench:stack and bench:capacity share: a probe Worker in the edge's workerd that sends a
// request straight to an admission DO as the edge does on a miss (or answers alike without it),
// and timed windows of each process's CPU (/proc/<pid>/stat) around a list of requests.
import { ESTIMATE_HEADER, PARTITION_HEADER } from "../shared/cost";
import { closeIdleConnections, cpuSeconds, drive, type Tile } from "./decode";

export const PROBE_HOST = "probe.bench";

/**
 * Sends each request to the admission DO as the edge does on a miss; or answers a body of the
 * same size without it (/baseline), or after a Cache API lookup that misses and a store (/cache);
 * or fetches it from the decoder (DECODER_URL) itself, signed by the caller, as the DO would
 * (/decoder/…): what the DO's call to the decoder costs workerd, apart from the DO's own work.
 */
export const PROBE_WORKER = `
import { DurableObject } from "cloudflare:workers";
const sized = (bytes) => new Response(new Uint8Array(bytes), { headers: { "content-type": "image/jpeg", "cache-control": "max-age=3600" } });
export class Echo extends DurableObject {
  fetch(request) { return sized(Number(new URL(request.url).searchParams.get("bytes"))); }
  answer(bytes) { return sized(bytes); }
}
export default {
  async fetch(request, env, ctx) {
    const url = new URL(request.url);
    const body = () => new Response(new Uint8Array(Number(url.searchParams.get("bytes"))), { headers: { "content-type": "image/jpeg", "cache-control": "max-age=3600" } });
    if (url.pathname === "/baseline") return body();
    if (url.pathname.startsWith("/echo-")) {
      const echo = env.ECHO.get(env.ECHO.idFromName("echo"));
      const bytes = Number(url.searchParams.get("bytes"));
      return url.pathname === "/echo-rpc" ? echo.answer(bytes) : echo.fetch(new Request("https://echo/?bytes=" + bytes, { signal: request.signal }));
    }
    if (url.pathname.startsWith("/decoder/")) {
      const headers = new Headers(request.headers);
      headers.delete("host");
      return fetch(env.DECODER_URL + url.pathname.slice("/decoder".length) + url.search, { headers, signal: request.signal });
    }
    if (url.pathname === "/cache") {
      const key = "https://probe.bench/stored/" + url.searchParams.get("key");
      if (await caches.default.match(key)) throw new Error("every key is new: a hit is a bench bug");
      const res = body();
      ctx.waitUntil(caches.default.put(key, res.clone()));
      return res;
    }
    const stub = env.ADMISSION.get(env.ADMISSION.idFromName("default"));
    return stub.fetch(new Request("https://admission" + url.pathname + url.search, {
      signal: request.signal,
      headers: { "${PARTITION_HEADER}": "tile", "${ESTIMATE_HEADER}": "0" },
    }));
  },
};`;

/** Wall seconds and each process's CPU seconds over a timed window. */
interface Window {
  seconds: number;
  cpu: Record<string, number>;
  bytes: number;
}

async function timed(requests: (() => Promise<number>)[], pids: Record<string, number>): Promise<Window> {
  // A window can last about a keep-alive timeout: each starts on fresh connections (8 accepts).
  closeIdleConnections();
  const before = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, cpuSeconds(pid)]));
  let bytes = 0;
  const started = performance.now();
  await drive(
    requests.map((r) => async () => {
      const n = await r();
      bytes += n;
      return n;
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  return { seconds, bytes, cpu: Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, cpuSeconds(pid) - before[k]])) };
}

function add(total: Window | undefined, w: Window): Window {
  if (!total) return w;
  return {
    seconds: total.seconds + w.seconds,
    bytes: total.bytes + w.bytes,
    cpu: Object.fromEntries(Object.entries(w.cpu).map(([k, v]) => [k, v + (total.cpu[k] ?? 0)])),
  };
}

/** Runs `phases` over `tiles` in `rounds` chunks, each chunk on each phase in turn (the first phase rotating). */
export async function interleaved(
  tiles: Tile[],
  rounds: number,
  phases: Record<string, (t: Tile) => () => Promise<number>>,
  pids: Record<string, number>,
) {
  const names = Object.keys(phases);
  const out: Record<string, Window> = {};
  const chunk = Math.ceil(tiles.length / rounds);
  for (let r = 0; r < rounds; r++) {
    const slice = tiles.slice(r * chunk, (r + 1) * chunk);
    for (const name of [...names.slice(r % names.length), ...names.slice(0, r % names.length)]) {
      out[name] = add(out[name], await timed(slice.map(phases[name]), pids));
    }
  }
  return out;
}

