// The whole stack on one machine, as `npm start`, the end-to-end tests and the benchmarks run
// it: N regional decoder processes (Node), and the edge Worker + admission DO in workerd via
// Miniflare (configured from wrangler.toml, so local and deployed bindings cannot drift).
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { build } from "esbuild";
import { convertV4MiniflareOptions, Miniflare, type V4WorkerOptions } from "miniflare";
import { unstable_getMiniflareWorkerOptions } from "wrangler";
import { ROOT } from "../root";
import { startDecoder, stopDecoder, type DecoderProcess } from "./decoders";

export interface StackOptions {
  /** Edge port; 0 picks a free one. */
  port?: number;
  /** First decoder port (the others follow it); 0 picks free ones. */
  decoderPort?: number;
  /** How many decoder processes (default 1); each registers with the edge by heartbeat. */
  decoders?: number;
  /** Decoder environment beyond the secret and port (source kind, data dir, S3 settings). */
  decoderEnv?: Record<string, string>;
  /** Worker vars overriding wrangler.toml's. */
  vars?: Record<string, string>;
  /** Forward the decoders' logs to this process's stderr. */
  verbose?: boolean;
  /** More Workers in the same workerd, reached by their `routes` (the edge takes every other request). */
  workers?: V4WorkerOptions[];
  /**
   * Edge locations (default 1). Each one more is the same Worker in a workerd of its own, with
   * its own cache and CPU, calling the first location's admission DO through Miniflare's dev
   * registry: Cloudflare's other locations, faked on this machine.
   */
  locations?: number;
  /** workerd's V8 inspector on this port (the first location), for profiling the Worker and the DO. */
  inspectorPort?: number;
}

export interface Stack {
  url: string;
  /** Every edge location's URL, `url` first (the one whose workerd runs the admission DO). */
  locations: string[];
  decoders: DecoderProcess[];
  miniflare: Miniflare;
  /** Starts one more decoder, as the others were (a rolling deploy's new one); it registers by heartbeat. */
  addDecoder(): Promise<DecoderProcess>;
  stop(): Promise<void>;
}

/** Bundles the Worker exactly as wrangler would deploy it. */
export async function buildEdge(): Promise<string> {
  const outfile = `${ROOT}dist/edge/index.js`;
  await build({
    entryPoints: [`${ROOT}edge/index.ts`],
    outfile,
    bundle: true,
    format: "esm",
    platform: "neutral",
    // Packages resolved as wrangler resolves them for workerd (ipaddr.js has only a "main").
    conditions: ["workerd", "worker", "browser"],
    mainFields: ["browser", "module", "main"],
    target: "es2022",
    external: ["cloudflare:*"],
    logLevel: "warning",
  });
  return outfile;
}

export async function startStack(opts: StackOptions = {}): Promise<Stack> {
  const secret = randomBytes(32).toString("hex");
  const edge = await edgeWorker({ DECODER_SECRET: secret, ...opts.vars });
  const registry = (opts.locations ?? 1) > 1 ? mkdtempSync(path.join(tmpdir(), "tessera-locations-")) : undefined;
  const sharing = registry ? { unsafeDevRegistryPath: registry } : {};
  const miniflares = [new Miniflare(convertV4MiniflareOptions({ host: "127.0.0.1", port: opts.port ?? 0, inspectorPort: opts.inspectorPort, ...sharing, workers: [edge, ...(opts.workers ?? [])] }))];
  for (let i = 1; i < (opts.locations ?? 1); i++) {
    // The same Worker under a name of its own, its ADMISSION binding the first location's DO.
    const elsewhere: V4WorkerOptions = { ...edge, name: `tessera-location-${i}`, durableObjects: { ADMISSION: { className: "AdmissionDO", scriptName: edge.name } } };
    miniflares.push(new Miniflare(convertV4MiniflareOptions({ host: "127.0.0.1", port: 0, ...sharing, workers: [elsewhere] })));
  }
  const [miniflare] = miniflares;
  const decoders: DecoderProcess[] = [];
  const stop = async () => {
    await Promise.all(miniflares.map((m) => m.dispose()));
    await Promise.all(decoders.map(stopDecoder));
    if (registry) rmSync(registry, { recursive: true, force: true });
  };
  try {
    const locations = await Promise.all(miniflares.map(async (m) => (await m.ready).toString().replace(/\/$/, "")));
    const url = locations[0];
    const addDecoder = async () => {
      const port = opts.decoderPort ? opts.decoderPort + decoders.length : 0;
      const env = { TESSERA_DECODER_SECRET: secret, TESSERA_DECODER_PORT: String(port), TESSERA_EDGE_URL: url, ...opts.decoderEnv };
      const decoder = await startDecoder(env, opts.verbose);
      decoders.push(decoder);
      return decoder;
    };
    const count = opts.decoders ?? 1;
    for (let i = 0; i < count; i++) await addDecoder();
    await untilRegistered(url, count);
    return { url, locations, decoders, miniflare, addDecoder, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** The edge Worker as wrangler.toml configures it, bundled as deployed, with `vars` over its bindings. */
async function edgeWorker(vars: Record<string, string>): Promise<V4WorkerOptions & { name: string }> {
  // wrangler hands out Miniflare 4-shaped worker options; Miniflare 5 converts them, as wrangler
  // itself does. Its module rules go: the Worker is one bundled module, and the conversion refuses
  // them. (wrangler types these options as an index signature, hence the cast.)
  const { modulesRules: _, ...workerOptions } = unstable_getMiniflareWorkerOptions(`${ROOT}wrangler.toml`).workerOptions;
  const bindings = workerOptions.bindings as Record<string, string>;
  return { ...workerOptions, name: "tessera", modules: true, scriptPath: await buildEdge(), bindings: { ...bindings, ...vars } };
}

/** Waits until the admission DO counts `count` live decoders (their first heartbeats). */
export async function untilRegistered(url: string, count: number, timeoutMs = 10_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const text = await (await fetch(`${url}/metrics`)).text();
    // With regions or shards, every shard of a region counts its decoders: shard 0 of each, summed.
    const live = [...text.matchAll(/^tessera_admission_decoders_live(?:\{region="[^"]+",shard="0"\})? (\d+)$/gm)];
    if (live.reduce((n, m) => n + Number(m[1]), 0) === count) return;
    if (Date.now() > until) throw new Error(`${count} decoders did not register within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
