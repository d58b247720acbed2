// An operator's own tile matrix sets. The decoder reads the files TESSERA_TILE_MATRIX_SETS names
// when it starts: a bad one (missing, not JSON, not a valid set, an id taken, a CRS the bundled
// EPSG tables lack) stops the start naming the file and the reason, in readConfig and in the real
// decoder process; a good one is tiled like the registry's. The edge's build file is read by the
// same rules (its entries named in the error).
import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { Cog } from "../../regional/cog/cog";
import { readConfig } from "../../regional/config";
import { warpTile } from "../../regional/maps/warp";
import { LocalCatalog } from "../../regional/source/local";
import { ConfigError } from "../../shared/config";
import { addTileMatrixSets, documentsIn, TILE_MATRIX_SETS, tileBounds, tileMatrixSet } from "../../shared/maps/tile-matrix-sets";
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
