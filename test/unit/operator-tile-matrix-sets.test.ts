// An operator's own tile matrix sets. The decoder reads the files TESSERA_TILE_MATRIX_SETS names
// when it starts: a bad one (missing, not JSON, not a valid set, an id taken, a CRS the bundled
// EPSG tables lack) stops the start naming the file and the reason, in readConfig and in the real
// decoder process; a good one is tiled like the registry's. The edge's build file is read by the
// same rules (its entries named in the error); the render pool's threads add the sets too.
import { spawn } from "node:child_process";
import { copyFileSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { Cog } from "../../regional/cog/cog";
import { readConfig } from "../../regional/config";
import { conversion, crsOfName, setCrs } from "../../regional/maps/crs";
import { WorkBudget } from "../../regional/runtime/work-budget";
import { DECODER, GRANT_HEADER, GRANT_WORK_HEADER, GRANTED_PARTITION_HEADER, type SourceInfo } from "../../shared/protocol";
import { expressionBomb } from "../support/expression-bomb";
import { metricValue, SAMPLES, signedGet, startDecoder, type Decoder } from "./regional-helpers";
import { warpTile } from "../../regional/maps/warp";
import { LocalCatalog } from "../../regional/source/local";
import { ConfigError } from "../../shared/config";
import { addTileMatrixSets, documentsIn, TILE_MATRIX_SETS, tileAt, tileBounds, tileMatrix, tileMatrixSet } from "../../shared/maps/tile-matrix-sets";
import { parseTileRequest } from "../../shared/maps/tile-request";
import { gdalWarpTile } from "../support/gdal-reference";
import { MAP_FIXTURE_DIR, mapFixture, SET_FIXTURES, tileHolding } from "../support/map-fixtures";
import { exceeded, tileDifference } from "../support/tile-difference";

const folder = mkdtempSync(path.join(tmpdir(), "operator-sets-"));
const file = (name: string, content: unknown) => {
  const at = path.join(folder, name);
  writeFileSync(at, typeof content === "string" ? content : JSON.stringify(content));
  return at;
};

/** An operator's set: NZTM2000Quad's grid from zoom 0 to 14, under its own id (a LINZ-like variant). */
const operatorSet = (id: string) => {
  const doc = structuredClone(tileMatrixSet("NZTM2000Quad").document) as Record<string, unknown> & { tileMatrices: unknown[] };
  return { ...doc, id, title: `${id}, an operator's`, tileMatrices: doc.tileMatrices.slice(0, 15) };
};

const LOCAL = { TESSERA_DECODER_SECRET: "s" };
function refusal(files: string): string {
  try {
    readConfig({ ...LOCAL, TESSERA_TILE_MATRIX_SETS: files });
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    expect((e as ConfigError).variable).toBe("TESSERA_TILE_MATRIX_SETS");
    return (e as Error).message;
  }
  throw new Error("the configuration was accepted");
}

describe("TESSERA_TILE_MATRIX_SETS", () => {
  it("refuses, naming the file and the reason, a file missing, not JSON, not a set, an id taken or a CRS the tables lack", () => {
    const missing = path.join(folder, "missing.json");
    expect(refusal(missing)).toMatch(new RegExp(`names ${missing}, which cannot be read \\(ENOENT\\)`));
    const broken = file("broken.json", "{ not json");
    expect(refusal(broken)).toContain(`names ${broken}, which is not valid JSON`);
    const noCrs = file("no-crs.json", { ...operatorSet("NoCrs"), crs: undefined });
    expect(refusal(noCrs)).toContain(`${noCrs}: crs must be a CRS URI`);
    const nanScale = operatorSet("Bad");
    (nanScale.tileMatrices[3] as Record<string, unknown>).cellSize = 0;
    const bad = file("array.json", [operatorSet("Fine"), nanScale]);
    expect(refusal(bad)).toContain(`${bad}[1]: tileMatrices[3].cellSize must be a finite number above 0`);
    const taken = file("taken.json", { ...operatorSet("x"), id: "WebMercatorQuad" });
    expect(refusal(taken)).toContain(`${taken}: id "WebMercatorQuad" is already a tile matrix set's`);
    const twice = file("twice.json", operatorSet("Twice"));
    expect(refusal(`${twice},${twice}`)).toContain(`${twice}: id "Twice" is already a tile matrix set's`);
    const unknownCrs = file("unknown-crs.json", { ...operatorSet("Nowhere"), crs: "http://www.opengis.net/def/crs/EPSG/0/999999" });
    expect(refusal(unknownCrs)).toContain(`not in the bundled EPSG tables: ${unknownCrs}: EPSG:999999`);
    expect(TILE_MATRIX_SETS.has("Fine")).toBe(false);
  });

  it("accepts files of one document or an array, comma-separated; none by default", () => {
    const one = file("one.json", operatorSet("OperatorA"));
    const many = file("many.json", [operatorSet("OperatorB"), operatorSet("OperatorC")]);
    expect(readConfig({ ...LOCAL, TESSERA_TILE_MATRIX_SETS: ` ${one}, ${many}` }).tileMatrixSets.map((d) => d.where)).toEqual([one, `${many}[0]`, `${many}[1]`]);
    expect(readConfig(LOCAL).tileMatrixSets).toEqual([]);
  });
});

describe("the decoder's start", () => {
  const MAIN = fileURLToPath(new URL("../../regional/main.ts", import.meta.url));
  const children: ReturnType<typeof spawn>[] = [];
  afterAll(() => children.forEach((c) => c.kill("SIGKILL")));

  /** Runs the decoder with `files`; its exit code and what it wrote to stderr, or "listening" once it listens. */
  function start(files: string): Promise<{ code: number | null; stderr: string } | "listening"> {
    const child = spawn(process.execPath, ["--import", "tsx", MAIN], {
      env: { ...process.env, TESSERA_DECODER_SECRET: "s", TESSERA_DECODER_PORT: "0", TESSERA_TILE_MATRIX_SETS: files, TESSERA_EDGE_URL: "" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    children.push(child);
    let stderr = "";
    child.stderr!.on("data", (chunk) => (stderr += chunk));
    return new Promise((resolve) => {
      child.stdout!.on("data", (chunk) => String(chunk).includes("decoder listening") && (child.kill("SIGTERM"), resolve("listening")));
      child.on("exit", (code) => resolve({ code, stderr }));
    });
  }

  it("stops with exit 1 on a bad document, naming the file and the reason, and starts with a good one", async () => {
    const bad = file("start-bad.json", { ...operatorSet("Bad"), orderedAxes: "EN" });
    const stopped = await start(bad);
    expect(stopped).toMatchObject({ code: 1 });
    expect((stopped as { stderr: string }).stderr).toContain(`tessera decoder: TESSERA_TILE_MATRIX_SETS names a tile matrix set that is not valid: ${bad}: orderedAxes must be two axis names`);
    expect(await start(file("start-good.json", [operatorSet("Good")]))).toBe("listening");
  }, 30_000);
});

describe("an operator's set, once added", () => {
  it("tiles a source as gdalwarp does on the same grid", async () => {
    const [tms] = addTileMatrixSets(documentsIn([operatorSet("OperatorNZTM")], "operator.json"));
    const fixture = SET_FIXTURES.nztm;
    mapFixture(fixture);
    const cog = await Cog.open(await new LocalCatalog(MAP_FIXTURE_DIR).open(fixture.id, undefined));
    try {
      const tiling = cog.info(fixture.id).georeference!.tiling.OperatorNZTM;
      expect(tiling.maxZoom).toBe(11);
      const { x, y } = await tileHolding(fixture, "centre", tms, tiling.maxZoom);
      const req = parseTileRequest({ tileMatrixSet: tms.id, z: String(tiling.maxZoom), x: String(x), y: `${y}.png` }, new URLSearchParams({ resampling: "bilinear" }));
      const gdal = await gdalWarpTile(mapFixture(fixture), tms, tileBounds(tms, req.z, x, y), 256, "bilinear");
      const d = tileDifference(await warpTile(cog, req), gdal);
      expect(d.bothValid).toBeGreaterThan(0.5);
      expect(exceeded(d, { meanAbs: 0.05, p99: 0.5, validityMismatch: 0.001 })).toEqual([]);
    } finally {
      await cog.close();
    }
  });

  it("named in an error by its entry of the edge's build file", () => {
    expect(() => addTileMatrixSets(documentsIn([operatorSet("EdgeA"), { id: "EdgeB" }], "edge/tile-matrix-sets.json"))).toThrow(
      "edge/tile-matrix-sets.json[1]: crs must be a CRS URI",
    );
    expect(TILE_MATRIX_SETS.has("EdgeA")).toBe(false);
  });
});

describe("an operator's set on the render pool's threads", () => {
  let decoder: Decoder;
  let dir: string;
  afterAll(async () => {
    await decoder?.close();
    delete process.env.TESSERA_TILE_MATRIX_SETS;
  });

  it("paints a tile of the full partition there as on the event loop: the threads add the operator's sets too", async () => {
    // As main.ts starts: the variable names the file, the main thread adds its sets, the pool's threads theirs.
    const laea = { ...(structuredClone(tileMatrixSet("EuropeanETRS89_LAEAQuad").document) as object), id: "PoolLAEA" };
    process.env.TESSERA_TILE_MATRIX_SETS = file("pool.json", laea);
    const [tms] = addTileMatrixSets(readConfig({ ...LOCAL, TESSERA_TILE_MATRIX_SETS: process.env.TESSERA_TILE_MATRIX_SETS }).tileMatrixSets);
    dir = mkdtempSync(path.join(tmpdir(), "operator-pool-"));
    copyFileSync(path.join(SAMPLES, "utm-quadrants.tif"), path.join(dir, "utm-quadrants.tif"));
    decoder = await startDecoder(new LocalCatalog(dir), 3, { budget: new WorkBudget() });
    const info = (await (await signedGet(decoder, DECODER.info("utm-quadrants"))).json()) as SourceInfo;
    const z = info.georeference!.tiling.PoolLAEA.maxZoom;
    // The sample's middle: 1024 px of 20 m from (500000, 5300000) in UTM 33N.
    const at = tileAt(tileMatrix(tms, z)!, ...conversion(crsOfName("EPSG:32633")!.definition, setCrs(tms.id).definition)(510240, 5289760))!;
    // An expression at the node cap on a @2x tile: a full (render-pool.test.ts's), so it runs on a pool thread.
    const bomb = `utm-quadrants/PoolLAEA/${z}/${at.x}/${at.y}@2x.png?expression=${encodeURIComponent(expressionBomb())}&rescale=-4,4&version=${encodeURIComponent(info.version)}`;
    const paint = async (grant: Record<string, string> = {}) => {
      const res = await signedGet(decoder, `/v1/tiles/${bomb}`, undefined, grant);
      expect(res.status, await res.clone().text()).toBe(200);
      return Buffer.from(await res.arrayBuffer());
    };
    const renders = await metricValue(decoder, "tessera_decoder_render_pool_renders_total");
    const pooled = await paint();
    expect(await metricValue(decoder, "tessera_decoder_render_pool_renders_total")).toBe(renders + 1);
    const here = await paint({ [GRANT_HEADER]: String(2 ** 30), [GRANT_WORK_HEADER]: "100000", [GRANTED_PARTITION_HEADER]: "tile" });
    expect(pooled.equals(here)).toBe(true);
  }, 60_000);
});
