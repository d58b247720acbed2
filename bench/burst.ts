// npm run bench:burst — how many decodes does a burst of viewers opening the same map cost?
//
// The local stack (infra/local/stack.ts) with one decoder over the bundled UTM sample. CLIENTS
// clients open the same first screen of a map viewer at once: the same 12 web-map tiles (4 × 3 at
// zoom 12), each client asking for them in parallel, once the viewer has read the TileJSON (one
// request, so the source's metadata is at the edge and the burst's misses are its pixels). Every
// round is cold: a fresh copy of the source under a new id, so no tile is in the edge's cache. The same rounds run with coalescing
// on, then on a second stack with COALESCE=false for reference. Figures per round: the decodes
// the decoder ran (its own request count, tiles route) and the time from the first request to
// the last tile answered, and the answers other than 200 (sheds); the medians are printed. The last line is the summary.
//
//   npm run bench:burst    (TESSERA_BENCH_ROUNDS, TESSERA_BENCH_CLIENTS)
import { copyFile, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { ROOT } from "../infra/root";
import { startStack, type Stack } from "../infra/local/stack";
import { decoderTiles } from "./decoder-requests";

const ROUNDS = Number(process.env.TESSERA_BENCH_ROUNDS ?? 5);
const CLIENTS = Number(process.env.TESSERA_BENCH_CLIENTS ?? 20);
/** The sample's tiles at zoom 12 that hold data: a viewer's first screen. */
const SCREEN = [1426, 1427, 1428].flatMap((y) => [2218, 2219, 2220, 2221].map((x) => `12/${x}/${y}.png`));

interface Round {
  decodes: number;
  ms: number;
  failed: number;
}

/** CLIENTS viewers open the screen of source `id` at once. */
async function round(stack: Stack, id: string): Promise<Round> {
  const tileJson = await fetch(`${stack.url}/tiles/${id}/WebMercatorQuad/tilejson.json`);
  if (!tileJson.ok) throw new Error(`TileJSON of ${id}: ${tileJson.status}`);
  await tileJson.arrayBuffer();
  const before = await decoderTiles(stack);
  const started = performance.now();
  let failed = 0;
  const viewer = () =>
    Promise.all(
      SCREEN.map(async (tile) => {
        const res = await fetch(`${stack.url}/tiles/${id}/WebMercatorQuad/${tile}`);
        await res.arrayBuffer();
        if (res.status !== 200) failed++;
      }),
    );
  await Promise.all(Array.from({ length: CLIENTS }, viewer));
  const ms = performance.now() - started;
  return { decodes: (await decoderTiles(stack)) - before, ms, failed };
}

async function run(dir: string, label: string, vars: Record<string, string>): Promise<Round> {
  const stack = await startStack({ decoderEnv: { TESSERA_DATA_DIR: dir }, vars });
  try {
    await round(stack, "warm-up"); // the decoder's first decode pays for its modules
    const rounds: Round[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const id = `${label}-${i}`;
      await copyFile(path.join(ROOT, "samples/utm-quadrants.tif"), path.join(dir, `${id}.tif`));
      rounds.push(await round(stack, id));
    }
    const result = {
      decodes: median(rounds.map((r) => r.decodes)),
      ms: median(rounds.map((r) => r.ms)),
      failed: median(rounds.map((r) => r.failed)),
    };
    console.log(
      `${label}: ${result.decodes} decodes for ${SCREEN.length} tiles × ${CLIENTS} clients, last tile after ` +
        `${result.ms.toFixed(0)} ms, ${result.failed} answers not 200 (medians of ${ROUNDS})`,
    );
    return result;
  } finally {
    await stack.stop();
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

const dir = await mkdtemp(path.join(tmpdir(), "tessera-burst-"));
try {
  await copyFile(path.join(ROOT, "samples/utm-quadrants.tif"), path.join(dir, "warm-up.tif"));
  const on = await run(dir, "coalesced", {});
  const off = await run(dir, "uncoalesced", { COALESCE: "false" });
  console.log(`burst_decodes=${on.decodes} burst_decodes_uncoalesced=${off.decodes} burst_ms=${on.ms.toFixed(0)} burst_ms_uncoalesced=${off.ms.toFixed(0)}`);
} finally {
  await rm(dir, { recursive: true, force: true });
}
