// `npm run bench:cold`: the first view of a source nobody has opened, from a store far away.
// The local RGW sits behind a fake remote region (test/support/remote-region.ts) that delays each
// request by TESSERA_BENCH_DELAY_MS (20); a second decoder reads the same store without the
// delay, in the same rounds, so the share of the wait that is store latency shows. Each round puts
// the sample COG under fresh source ids (cold: nothing open) and asks each decoder for a tile
// first, and for info.json then that tile at the version it named (as the edge asks).
//
// Reported per case: sequential store round trips (the longest chain of requests each sent after
// the one before had answered), total store requests, and the median time to the tile's last
// byte. The last line is the summary; cold_info_round_trips counts info.json's and the tile's.
//
// Fixture: a 4096² RGB JPEG COG with 512² blocks and overviews, as GDAL's COG driver writes
// it (made once under BENCH_DIR; needs gdal-bin), or the COG at TESSERA_BENCH_COG.
// TESSERA_BENCH_ROUNDS (9) rounds.
import { readFileSync } from "node:fs";
import path from "node:path";
import { ensureVersionedBucket, makeS3Client, startLocalS3 } from "../infra/local/s3";
import { infoThenTile, startColdDecoder, tileFirst, type ColdDecoder, type ColdStep } from "../test/support/cold-open";
import { patternCog } from "../test/support/pattern-cog";

const DELAY_MS = Number(process.env.TESSERA_BENCH_DELAY_MS ?? 20);
const ROUNDS = Number(process.env.TESSERA_BENCH_ROUNDS ?? 9);
const DIR = process.env.BENCH_DIR ?? "/tmp/tessera-bench";
const SIZE = 4096;
const TILE = 512;

/** What one case cost in one round: the steps' round trips and requests add up, as does their time. */
interface Cost {
  roundTrips: number;
  requests: number;
  ms: number;
}

const log = (msg: string) => process.stdout.write(`${msg}\n`);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function cost(...steps: ColdStep[]): Cost {
  for (const s of steps) if (s.status !== 200) throw new Error(`the decoder answered ${s.status}: ${s.body.toString().slice(0, 200)}`);
  return {
    roundTrips: steps.reduce((n, s) => n + s.roundTrips, 0),
    requests: steps.reduce((n, s) => n + s.requests.length, 0),
    ms: steps.reduce((n, s) => n + s.ms, 0),
  };
}

/** Medians over the rounds (the counts are the same every round; the median shows if not). */
function summary(costs: Cost[]): Cost {
  return { roundTrips: median(costs.map((c) => c.roundTrips)), requests: median(costs.map((c) => c.requests)), ms: median(costs.map((c) => c.ms)) };
}

async function main(): Promise<void> {
  const file = process.env.TESSERA_BENCH_COG ?? patternCog(path.join(DIR, `pattern-${SIZE}.tif`), SIZE);
  const cog = readFileSync(file);
  const s3 = await startLocalS3();
  const client = makeS3Client(s3);
  const bucket = `cold-bench-${Date.now().toString(36)}`;
  await ensureVersionedBucket(client, bucket);
  const remote = await startColdDecoder(s3, bucket, DELAY_MS);
  const near = await startColdDecoder(s3, bucket, 0);
  const runs = new Map<string, Cost[]>();
  const note = (name: string, c: Cost) => runs.set(name, [...(runs.get(name) ?? []), c]);
  let fresh = 0;
  const unopened = async (d: ColdDecoder) => {
    const id = `pattern-${++fresh}`;
    await d.put(id, cog);
    return id;
  };
  try {
    for (let round = 0; round < ROUNDS; round++) {
      for (const [name, d] of [["remote", remote], ["near", near]] as const) {
        note(`${name} tile first`, cost(await tileFirst(d, await unopened(d), TILE)));
        const { info, tile } = await infoThenTile(d, await unopened(d), TILE);
        note(`${name} info.json`, cost(info));
        note(`${name} info.json then tile`, cost(info, tile));
      }
    }
  } finally {
    await Promise.all([remote.close(), near.close()]);
    client.destroy();
    await s3.stop();
  }
  log(`${ROUNDS} rounds, ${path.basename(file)} (${cog.length} bytes), a ${TILE}² tile; remote = ${DELAY_MS} ms a store request, near = none`);
  const figures = new Map([...runs].map(([name, costs]) => [name, summary(costs)]));
  for (const [name, c] of figures) {
    log(`${name.padEnd(28)} ${c.roundTrips} round trips, ${c.requests} requests, ${c.ms.toFixed(1)} ms (median)`);
  }
  for (const what of ["tile first", "info.json then tile"]) {
    const far = figures.get(`remote ${what}`)!;
    const close = figures.get(`near ${what}`)!;
    log(`${what}: ${((far.ms - close.ms) / far.ms * 100).toFixed(0)}% of the remote wait is store latency (${(far.ms / close.ms).toFixed(1)}× the near time)`);
  }
  const tile = figures.get("remote tile first")!;
  const info = figures.get("remote info.json then tile")!;
  log(
    `cold_tile_round_trips=${tile.roundTrips} cold_tile_ms=${tile.ms.toFixed(1)} ` +
      `cold_info_round_trips=${info.roundTrips} cold_info_then_tile_ms=${info.ms.toFixed(1)} delay_ms=${DELAY_MS}`,
  );
}

await main();
