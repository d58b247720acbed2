// `npm run bench:map-stages`: what each stage of a map tile costs on this machine, beside the
// coefficient shared/work.ts uses for it (on core 1, under `taskset -c 1`; best on a quiet
// machine). Each stage runs as the decoder runs it (in slices, runtime/slices.ts) over a @2x
// tile's 512² pixels of synthetic planes (5 % of pixels invalid), ROUNDS times; the figure is
// the median of the CPU time a run takes (process.cpuUsage: every thread, the collector's too),
// per megapixel of output and per unit of what the stage grows with:
//   expression       per node, from the slope between 16 and 256 nodes (bands and operators),
//                    and the fixed part of an evaluation
//   pixel selection  per component per asset (a 3-component tuple), from the slope between 4 and 32 assets
//   warp             per band, nearest / bilinear / cubic at scale 1 and 0.5 (the kernel widens)
//   plan             per asset: the approximate transformer and the footprint (UTM to Web Mercator)
//   colour           per tile: rescale of 1 and 3 channels, gamma, a named ramp, an explicit map,
//                    and interval maps of 8 and 256 intervals
//   algorithm        per tile, each algorithm= over its buffered input
import { expressionEvaluation, expressionNodes, parseExpressions, type BandPlane } from "../shared/maps/expression";
import { parseTileRequest, type Resampling } from "../shared/maps/tile-request";
import { PIXEL_SELECTIONS } from "../shared/maps/style";
import { ALGORITHM_NAMES, ALGORITHMS } from "../shared/maps/algorithms";
import { applyAlgorithm } from "../regional/maps/algorithms";
import { colorize } from "../regional/maps/colorize";
import { conversion, setCrs } from "../regional/maps/crs";
import { resample } from "../regional/maps/kernels";
import { pixelSelection, type AssetTuple } from "../regional/maps/pixel-selection";
import { sourceCoordinates } from "../regional/maps/transformer";
import { Slices } from "../regional/runtime/slices";
import { expressionBomb } from "../test/support/expression-bomb";
import { WORK_PER_MEGASAMPLE } from "../shared/work";
import { cpuMs } from "./cpu-time";

const SIDE = 512;
const PIXELS = SIDE * SIDE;
const MEGAPIXELS = PIXELS / 1e6;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const cpuMsOf = (run: () => Promise<unknown> | unknown) => cpuMs(run, ROUNDS);

const log = (msg: string) => process.stdout.write(`${msg}\n`);
const slices = () => new Slices(new AbortController().signal);

/** A deterministic plane of `pixels` values in [1, 256), 5 % invalid. */
function plane(seed: number, pixels = PIXELS): BandPlane {
  let s = seed * 2654435761;
  const next = () => ((s = (s * 1103515245 + 12345) >>> 0) % 100_000) / 100_000;
  const values = Float32Array.from({ length: pixels }, () => 1 + 255 * next());
  const valid = Uint8Array.from({ length: pixels }, () => (next() < 0.05 ? 0 : 1));
  return { values, valid };
}

const perMp = (ms: number) => ms / MEGAPIXELS;
/** A measured figure beside the code's coefficient for it. */
const row = (stage: string, unit: string, measured: number, code: number) => log(`| ${stage} | ${unit} | ${measured.toFixed(2)} | ${code.toFixed(2)} |`);

async function expressionCost(): Promise<void> {
  const bands = new Map([["b1", plane(1)], ["b2", plane(2)], ["b3", plane(3)]]);
  const time = async (nodes: number) => {
    const program = parseExpressions(expressionBomb(nodes), ["b1", "b2", "b3"]);
    const ms = await cpuMsOf(() => {
      const evaluation = expressionEvaluation(program, bands, PIXELS);
      return slices().each(PIXELS, expressionNodes(program), evaluation.evaluate);
    });
    return { nodes: expressionNodes(program), ms };
  };
  const [small, large] = [await time(17), await time(255)];
  const perNode = (large.ms - small.ms) / (large.nodes - small.nodes);
  row("expression", "ms / MP / node", perMp(perNode), WORK_PER_MEGASAMPLE.expression.node);
  row("expression", "ms / MP, each evaluation (loads, stores)", perMp(small.ms - small.nodes * perNode), WORK_PER_MEGASAMPLE.expression.evaluation);
}

async function selectionCost(): Promise<void> {
  const tuples = Array.from({ length: 32 }, (_, a): AssetTuple => {
    const planes = [0, 1, 2].map((c) => plane(10 + 3 * a + c));
    return { bands: planes.map((p) => p.values), valid: planes.map((p) => p.valid) };
  });
  const components = 3;
  for (const mode of PIXEL_SELECTIONS) {
    const time = (assets: number) =>
      cpuMsOf(async () => {
        const reducer = pixelSelection({ mode, components, pixels: PIXELS, rankChannel: mode === "highest" || mode === "lowest" ? 2 : undefined }, slices());
        for (const t of tuples.slice(0, assets)) await reducer.add(t);
        return reducer.result();
      });
    // `first` stops reading once every pixel is filled (after about six of these assets): its cost an asset read.
    const perAsset = mode === "first" ? (await time(4)) / 4 : ((await time(32)) - (await time(4))) / 28;
    row(`pixel_selection=${mode}`, "ms / MS / asset (a sample a component)", perMp(perAsset) / components, WORK_PER_MEGASAMPLE.pixelSelection[mode]);
  }
}

/** A window a little larger than the tile's footprint, and positions turned by 10° across it at `scale`. */
function sampling(resampling: Resampling, scale: number) {
  const span = Math.ceil(SIDE / scale);
  const width = span + 2 * span * 0.2 + 16;
  const xs = new Float64Array(PIXELS);
  const ys = new Float64Array(PIXELS);
  const [cos, sin] = [Math.cos(0.17), Math.sin(0.17)];
  for (let y = 0; y < SIDE; y++) {
    for (let x = 0; x < SIDE; x++) {
      const [u, v] = [(x + 0.5) / scale, (y + 0.5) / scale];
      xs[y * SIDE + x] = 8 + span * 0.2 + u * cos - v * sin + span * 0.2;
      ys[y * SIDE + x] = 8 + u * sin + v * cos;
    }
  }
  return { window: Math.ceil(width), sampling: { xs, ys, covered: new Uint8Array(PIXELS).fill(1), resampling, scaleX: scale, scaleY: scale } };
}

async function warpCost(): Promise<void> {
  for (const scale of [1, 0.5]) {
    for (const resampling of ["nearest", "bilinear", "cubic"] as const) {
      const { window, sampling: at } = sampling(resampling, scale);
      const planes = [0, 1, 2].map((b) => ({ width: window, height: window, ...plane(50 + b, window * window) }));
      const ms = await cpuMsOf(() => {
        const values = planes.map(() => new Float32Array(PIXELS));
        const valid = planes.map(() => new Uint8Array(PIXELS));
        return resample(planes, at, values, valid, slices());
      });
      // The code's figure includes the transformer's share (the plan row) and widens the kernel as readWork does.
      const spread = resampling === "nearest" ? 1 : 1 / scale ** 2;
      row(`warp ${resampling}, scale ${scale}`, "ms / MS (a sample a band)", perMp(ms / planes.length), WORK_PER_MEGASAMPLE.warp[resampling] * spread);
    }
  }
}

async function planCost(): Promise<void> {
  // A z12 tile of the UTM sample's neighbourhood: the projection the map tests warp most.
  const toUtm = conversion(setCrs("WebMercatorQuad").definition, "+proj=utm +zone=33 +datum=WGS84 +units=m +no_defs");
  const [left, top, cell] = [1_685_000, 6_070_000, 9.55 / 2];
  const exact = (x: number, y: number): [number, number] => {
    const [e, n] = toUtm(left + x * cell, top - y * cell);
    return [(e - 500_000) / 20, (5_300_000 - n) / 20];
  };
  // Counted in each band's warp: no coefficient of its own.
  row("plan (transformer)", "ms / MP / asset", perMp(await cpuMsOf(() => sourceCoordinates(exact, SIDE, SIDE, slices()))), 0);
}

async function colourCost(): Promise<void> {
  const channels = (n: number) => {
    const planes = Array.from({ length: n }, (_, c) => plane(90 + c));
    return { width: SIDE, height: SIDE, bands: planes.map((p) => p.values), valid: planes.map((p) => p.valid) };
  };
  const intervals = (n: number) => JSON.stringify(Array.from({ length: n }, (_, i) => [[i * (256 / n), (i + 1) * (256 / n)], [i % 256, 0, 255 - (i % 256), 255]]));
  const explicit = JSON.stringify(Object.fromEntries(Array.from({ length: 256 }, (_, i) => [String(i), [i, 0, 0]])));
  const cases: [string, number, Record<string, string>][] = [
    ["rescale, 1 channel", 1, { rescale: "0,256" }],
    ["rescale, 3 channels", 3, { rescale: "0,256" }],
    ["rescale + gamma, 3 channels", 3, { rescale: "0,256", gamma: "1.5" }],
    ["colormap_name (a ramp)", 1, { rescale: "0,256", colormap_name: "viridis" }],
    ["colormap, explicit of 256", 1, { rescale: "0,256", colormap: explicit }],
    ["colormap, 8 intervals", 1, { colormap: intervals(8) }],
    ["colormap, 256 intervals", 1, { colormap: intervals(256) }],
  ];
  for (const [what, n, query] of cases) {
    const req = parseTileRequest({ tileMatrixSet: "WebMercatorQuad", z: "12", x: "0", y: "0@2x.png" }, new URLSearchParams(query));
    const ranges = query.rescale ? Array.from({ length: n }, (): [number, number] => [0, 256]) : undefined;
    const tile = channels(n);
    row(`colour: ${what}`, "ms / MP", perMp(await cpuMsOf(() => colorize(tile, req, ranges, true, slices()))), WORK_PER_MEGASAMPLE.colorize);
  }
}

async function algorithmCost(): Promise<void> {
  for (const name of ALGORITHM_NAMES) {
    const buffer = ALGORITHMS[name].buffer;
    const grown = (SIDE + 2 * buffer) ** 2;
    const planes = Array.from({ length: ALGORITHMS[name].inputs }, (_, c) => plane(70 + c, grown));
    const input = { bands: planes.map((p) => p.values), valid: planes.map((p) => p.valid) };
    const cells = { xSize: 10, ySize: -10, geographic: false };
    const ms = await cpuMsOf(() => applyAlgorithm(name, undefined, input, { width: SIDE, height: SIDE }, cells, slices()));
    row(`algorithm=${name}`, "ms / MP", perMp(ms), WORK_PER_MEGASAMPLE.algorithm[name]);
  }
}

log(`map stages over ${SIDE}² pixels, median CPU time of ${ROUNDS} runs, Node ${process.version}`);
log("| stage | unit | measured | code |");
log("|---|---|---|---|");
await expressionCost();
await selectionCost();
await warpCost();
await planCost();
await colourCost();
await algorithmCost();
