// The whole stack on one machine, as `npm start`, the end-to-end tests and the benchmarks run
// it: N regional decoder processes (Node), and the edge Worker + admission DO in workerd via
// Miniflare (configured from wrangler.toml, so local and deployed bindings cannot drift).
import { randomBytes } from "node:crypto";
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
}

export interface Stack {
  url: string;
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
    target: "es2022",
    external: ["cloudflare:*"],
    logLevel: "warning",
  });
  return outfile;
}

export async function startStack(opts: StackOptions = {}): Promise<Stack> {
  const secret = randomBytes(32).toString("hex");
  // wrangler hands out Miniflare 4-shaped worker options; Miniflare 5 converts them, as wrangler
  // itself does. Its module rules go: the Worker is one bundled module, and the conversion refuses
  // them. (wrangler types these options as an index signature, hence the cast.)
  const { modulesRules: _, ...workerOptions } = unstable_getMiniflareWorkerOptions(`${ROOT}wrangler.toml`).workerOptions;
  const bindings = workerOptions.bindings as Record<string, unknown>;
  const edge = {
    ...workerOptions,
    name: "tessera",
    modules: true,
    scriptPath: await buildEdge(),
    bindings: { ...bindings, DECODER_SECRET: secret, ...opts.vars },
  };
  const miniflare = new Miniflare(
    convertV4MiniflareOptions({ host: "127.0.0.1", port: opts.port ?? 0, workers: [edge, ...(opts.workers ?? [])] }),
  );
  const decoders: DecoderProcess[] = [];
  const stop = async () => {
    await miniflare.dispose();
    await Promise.all(decoders.map(stopDecoder));
  };
  try {
    const url = (await miniflare.ready).toString().replace(/\/$/, "");
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
    return { url, decoders, miniflare, addDecoder, stop };
  } catch (err) {
    await stop();
    throw err;
  }
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
