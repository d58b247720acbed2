// `npm run bench:maps`: Tessera's warped map tiles per second against GDAL's own warper making the
// same tiles in its own process, on the same core, in the same run.
//
// Source: the map tests' UTM RGB fixture (a 2048² JPEG COG in EPSG:32633, 10 m pixels, overviews
// 1024, 512 and 256 px; made once with GDAL, git-ignored). Tiles: every WebMercatorQuad tile of
// zooms 10 to 14 that the data touches (z14 is its full resolution, lower zooms read overviews),
// resampling nearest, bilinear and cubic in turn: a fixed list, the same for both.
//   Tessera  renderTile in this process: the blocks read and decoded, the tile warped, made
//            8-bit RGBA with alpha where there is data, encoded as PNG (sharp).
//   GDAL     bench/gdal-warp-tiles.py (Debian's python3-gdal): gdal.Warp to an in-memory RGBA
//            tile with the same bounds, size and resampling (GDAL's overview choice and error
//            threshold), then PNG-encoded in memory by GDAL's PNG driver.
// Both open the source once and keep its decoded blocks cached (Tessera's block cache, GDAL's
// block cache), and each side first runs the list once untimed. The npm script runs this under
// `taskset -c 1`, and the GDAL process inherits it: both on core 1, never at the same time. The
// list runs ROUNDS times on each, alternately, so other load on the machine falls on both alike.
// The warp alone (Tessera's warpTile, GDAL without the PNG) is timed the same way, to show where
// the time goes. Then the terrain algorithms on the map tests' UTM float DEM (1024 × 1536, 10 m),
// its tiles of the same zooms: hillshade (Tessera's algorithm=hillshade against gdaldem hillshade
// on the tile warped one pixel larger, cropped, PNG by GDAL) and terrarium (against the warped
// tile encoded by NumPy, PNG by GDAL). The last line is the summary.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { Cog } from "../regional/cog/cog";
import { renderTile } from "../regional/maps/compose-tile";
import { warpTile } from "../regional/maps/warp";
import { LocalCatalog } from "../regional/source/local";
import { tileBounds, tileMatrix, tileMatrixSet } from "../shared/maps/tile-matrix-sets";
import { parseTileRequest, RESAMPLINGS, tileSide, type TileRequest } from "../shared/maps/tile-request";
import { GDAL_PYTHON, GDAL_RESAMPLING } from "../test/support/gdal-reference";
import { MAP_FIXTURE_DIR, MAP_FIXTURES, mapFixture } from "../test/support/map-fixtures";

const FIXTURE = MAP_FIXTURES.utmRgb;
const DEM = MAP_FIXTURES.utmDem;
const SET = "WebMercatorQuad";
const ZOOMS = [10, 11, 12, 13, 14];
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const GDAL_SIDE = fileURLToPath(new URL("./gdal-warp-tiles.py", import.meta.url));

/** What a run makes: RGB tiles as PNG, or warped only; DEM tiles hillshaded or Terrarium-encoded, as PNG. */
type Mode = "png" | "warp" | "hillshade" | "terrarium";
const MODES: Mode[] = ["png", "warp", "hillshade", "terrarium"];

interface Timing {
  seconds: number;
  cpuSeconds: number;
  bytes: number;
}

const log = (msg: string) => process.stdout.write(`${msg}\n`);

/** Every tile of ZOOMS the data's bounds on the set touch, row by row, resamplings in turn. */
function tileList(bounds: [number, number, number, number], query: Record<string, string> = {}): TileRequest[] {
  const tms = tileMatrixSet(SET);
  const tiles: TileRequest[] = [];
  for (const z of ZOOMS) {
    const matrix = tileMatrix(tms, z)!;
    const span = matrix.cellSize * matrix.tileWidth;
    const [left, top] = matrix.origin;
    const [x0, x1] = [Math.floor((bounds[0] - left) / span), Math.floor((bounds[2] - left) / span)];
    const [y0, y1] = [Math.floor((top - bounds[3]) / span), Math.floor((top - bounds[1]) / span)];
    for (let y = y0; y <= y1; y++) {
      for (let x = x0; x <= x1; x++) {
        const resampling = RESAMPLINGS[tiles.length % RESAMPLINGS.length];
        tiles.push(parseTileRequest({ tileMatrixSet: SET, z: String(z), x: String(x), y: `${y}.png` }, new URLSearchParams({ resampling, ...query })));
      }
    }
  }
  return tiles;
}

/** GDAL's process, given the sources and their lists; each `run` makes every tile of its list once. */
function gdalSide(file: string, tiles: TileRequest[], demFile: string, demTiles: TileRequest[]) {
  const child = spawn(GDAL_PYTHON, [GDAL_SIDE], { stdio: ["pipe", "pipe", "inherit"] });
  const answers = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const tms = tileMatrixSet(SET);
  const list = (of: TileRequest[]) => of.map((t) => ({ bounds: tileBounds(tms, t.z, t.x, t.y), side: tileSide(t), resampling: GDAL_RESAMPLING[t.resampling] }));
  child.stdin.write(`${JSON.stringify({ file, demFile, crs: tms.crs, tiles: list(tiles), demTiles: list(demTiles) })}\n`);
  return {
    async run(what: Mode): Promise<Timing> {
      child.stdin.write(`${what}\n`);
      const { value, done } = await answers.next();
      if (done) throw new Error("gdal-warp-tiles.py ended early");
      return JSON.parse(value) as Timing;
    },
    close: () => child.stdin.end(),
  };
}

/** Tessera's side: every tile once, rendered to PNG (its algorithm applied) or warped only. */
async function tesseraSide(cog: Cog, tiles: TileRequest[], what: Mode): Promise<Timing> {
  const wall = performance.now();
  const cpu = process.cpuUsage();
  let bytes = 0;
  for (const req of tiles) {
    if (what === "warp") await warpTile(cog, req);
    else bytes += (await renderTile(cog, req)).body.length;
  }
  const used = process.cpuUsage(cpu);
  return { seconds: (performance.now() - wall) / 1000, cpuSeconds: (used.user + used.system) / 1e6, bytes };
}

const sum = (timings: Timing[]): Timing =>
  timings.reduce((a, t) => ({ seconds: a.seconds + t.seconds, cpuSeconds: a.cpuSeconds + t.cpuSeconds, bytes: a.bytes + t.bytes }), { seconds: 0, cpuSeconds: 0, bytes: 0 });

async function main(): Promise<void> {
  const cores = /^Cpus_allowed_list:\s*(\S+)$/m.exec(readFileSync("/proc/self/status", "utf8"))?.[1];
  if (cores !== "1") log(`warning: running on cores ${cores}, not pinned to core 1 (run it as npm run bench:maps)`);
  const [file, demFile] = [mapFixture(FIXTURE), mapFixture(DEM)];
  const catalog = new LocalCatalog(MAP_FIXTURE_DIR);
  const cog = await Cog.open(await catalog.open(FIXTURE.id, undefined));
  const demCog = await Cog.open(await catalog.open(DEM.id, undefined));
  const tiles = tileList(tilingOf(cog, FIXTURE.id));
  const demBounds = tilingOf(demCog, DEM.id);
  const lists: Record<Mode, TileRequest[]> = { png: tiles, warp: tiles, hillshade: tileList(demBounds, { algorithm: "hillshade" }), terrarium: tileList(demBounds, { algorithm: "terrarium" }) };
  const cogs: Record<Mode, Cog> = { png: cog, warp: cog, hillshade: demCog, terrarium: demCog };
  const perZoom = (list: TileRequest[]) => ZOOMS.map((z) => `z${z} ${list.filter((t) => t.z === z).length}`).join(", ");
  log(`${file}: ${tiles.length} ${SET} tiles (${perZoom(tiles)}); ${demFile}: ${lists.hillshade.length} (${perZoom(lists.hillshade)}); ${ROUNDS} rounds each side, core ${cores}`);

  const gdal = gdalSide(file, tiles, demFile, lists.hillshade);
  const results = Object.fromEntries(MODES.map((m) => [m, { tessera: [] as Timing[], gdal: [] as Timing[] }])) as Record<Mode, { tessera: Timing[]; gdal: Timing[] }>;
  try {
    for (const what of MODES) {
      // warm-up: caches filled, code compiled
      await tesseraSide(cogs[what], lists[what], what);
      await gdal.run(what);
    }
    for (let round = 0; round < ROUNDS; round++) {
      for (const what of MODES) {
        const ours = await tesseraSide(cogs[what], lists[what], what);
        const theirs = await gdal.run(what);
        results[what].tessera.push(ours);
        results[what].gdal.push(theirs);
        log(`round ${round + 1} ${what}: tessera ${(lists[what].length / ours.seconds).toFixed(1)} tiles/s, gdal ${(lists[what].length / theirs.seconds).toFixed(1)} tiles/s`);
      }
    }
  } finally {
    gdal.close();
    await cog.close();
    await demCog.close();
  }
  report(lists, results);
}

function tilingOf(cog: Cog, id: string): [number, number, number, number] {
  const tiling = cog.info(id).georeference?.tiling[SET];
  if (!tiling) throw new Error(`${id} has no ${SET} tiling`);
  return tiling.bounds;
}

const LABELS: Record<Mode, string> = { png: "warp + PNG", warp: "warp only ", hillshade: "hillshade ", terrarium: "terrarium " };

/** Each mode's rates and ratio, then the summary line. */
function report(lists: Record<Mode, TileRequest[]>, results: Record<Mode, { tessera: Timing[]; gdal: Timing[] }>): void {
  const rate = (what: Mode, t: Timing) => (lists[what].length * ROUNDS) / t.seconds;
  const cpuRate = (what: Mode, t: Timing) => (lists[what].length * ROUNDS) / t.cpuSeconds;
  const ratios = {} as Record<Mode, number>;
  for (const what of MODES) {
    const ours = sum(results[what].tessera);
    const theirs = sum(results[what].gdal);
    ratios[what] = rate(what, ours) / rate(what, theirs);
    const n = lists[what].length * ROUNDS;
    const bytes = what === "warp" ? "" : `; mean PNG ${Math.round(ours.bytes / n)} against ${Math.round(theirs.bytes / n)} bytes`;
    log(
      `${LABELS[what]}: tessera ${rate(what, ours).toFixed(1)} tiles/s (${cpuRate(what, ours).toFixed(1)} per CPU-second), ` +
        `gdal ${rate(what, theirs).toFixed(1)} tiles/s (${cpuRate(what, theirs).toFixed(1)} per CPU-second), ratio ${ratios[what].toFixed(2)}${bytes}`,
    );
  }
  const ours = rate("png", sum(results.png.tessera));
  const theirs = rate("png", sum(results.png.gdal));
  log(`maps_tiles_per_s=${ours.toFixed(1)} gdal_tiles_per_s=${theirs.toFixed(1)} ratio=${(ours / theirs).toFixed(3)} hillshade_ratio=${ratios.hillshade.toFixed(3)} terrarium_ratio=${ratios.terrarium.toFixed(3)}`);
}

await main();
