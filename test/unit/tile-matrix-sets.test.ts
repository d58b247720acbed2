// The OGC tile matrix sets against the standard's own figures (OGC 17-083r4, Annex D, and LINZ's
// NZTM2000Quad): scale denominators, cell sizes, matrix sizes, the bounds of tiles clients ask
// for; axis order turned to x first in one place (the document reader); every set's CRS in the
// bundled EPSG tables; the committed documents as the generator writes them; and documents an
// operator gets wrong, each refused with the field named.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { crsOfName, setCrs } from "../../regional/maps/crs";
import { HttpError } from "../../shared/errors";
import { readTileMatrixSet } from "../../shared/maps/tile-matrix-set-document";
import { addTileMatrixSets, TILE_MATRIX_SETS, tileBounds, tileMatrix, tileMatrixSet } from "../../shared/maps/tile-matrix-sets";

const HALF_EARTH = 20037508.3427892;
const close = (actual: number[], expected: number[], digits = 6) => expected.forEach((e, i) => expect(actual[i], `[${i}]`).toBeCloseTo(e, digits));
const thrown = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    return e as Error;
  }
  throw new Error("did not throw");
};

describe("WebMercatorQuad", () => {
  const tms = tileMatrixSet("WebMercatorQuad");
  it("has the standard's zoom 0 and halves per zoom down to 24", () => {
    expect(tms.crs).toBe("http://www.opengis.net/def/crs/EPSG/0/3857");
    expect(tms.tileMatrices).toHaveLength(25);
    expect(tms.tileMatrices[0]).toMatchObject({ zoom: 0, scaleDenominator: 559082264.0287178, cellSize: 156543.03392804097, matrixWidth: 1, matrixHeight: 1, tileWidth: 256 });
    expect(tileMatrix(tms, 18)!.scaleDenominator).toBeCloseTo(2132.729583849784, 9);
    expect(tileMatrix(tms, 24)).toMatchObject({ matrixWidth: 2 ** 24, matrixHeight: 2 ** 24 });
  });
  it("gives the tiles' bounds as every web map computes them", () => {
    close(tileBounds(tms, 0, 0, 0), [-HALF_EARTH, -HALF_EARTH, HALF_EARTH, HALF_EARTH]);
    close(tileBounds(tms, 1, 0, 0), [-HALF_EARTH, 0, 0, HALF_EARTH]);
    close(tileBounds(tms, 1, 1, 1), [0, -HALF_EARTH, HALF_EARTH, 0]);
    // z 10, the tile holding Paris (2.35° E, 48.86° N): x 518, y 352.
    const [minX, minY, maxX, maxY] = tileBounds(tms, 10, 518, 352);
    expect(minX).toBeLessThan(261600); // 2.35° E in metres ≈ 261,600
    expect(maxX).toBeGreaterThan(261600);
    expect(minY).toBeLessThan(6250000); // 48.86° N ≈ 6,250,000 m
    expect(maxY).toBeGreaterThan(6250000);
  });
});

describe("WorldCRS84Quad", () => {
  const tms = tileMatrixSet("WorldCRS84Quad");
  it("is two tiles wide at zoom 0, in longitude and latitude", () => {
    expect([tms.crsName, tms.northingFirst]).toEqual(["EPSG:4326", false]);
    expect(tms.tileMatrices[0]).toMatchObject({ scaleDenominator: 279541132.0143589, cellSize: 0.703125, matrixWidth: 2, matrixHeight: 1 });
    close(tileBounds(tms, 0, 1, 0), [0, -90, 180, 90]);
    close(tileBounds(tms, 2, 0, 3), [-180, -90, -135, -45]);
  });
});

describe("the rest of the registry, against the standard's tables", () => {
  it("has the 60 UTM quads, north, from zoom 1 (1 × 2 tiles) to 24", () => {
    for (let zone = 1; zone <= 60; zone++) {
      const tms = tileMatrixSet(`UTM${String(zone).padStart(2, "0")}WGS84Quad`);
      expect(tms.crsName).toBe(`EPSG:${32600 + zone}`);
      expect(tms.tileMatrices.map((m) => m.zoom)).toEqual(Array.from({ length: 24 }, (_, i) => i + 1));
    }
    const utm31 = tileMatrixSet("UTM31WGS84Quad");
    expect(tileMatrix(utm31, 1)).toMatchObject({ scaleDenominator: 279072704.500914, cellSize: 78140.3572602559, matrixWidth: 1, matrixHeight: 2, origin: [-9501965.72931276, 20003931.4586255] });
    expect(tileMatrix(utm31, 5)!.scaleDenominator).toBeCloseTo(17442044.0313071, 6);
    expect((thrown(() => tileBounds(utm31, 0, 0, 0)) as HttpError).status).toBe(400);
    close(tileBounds(utm31, 1, 0, 1), [-9501965.72931276, -20003931.4586255, 10501965.7293128, 0], 4);
  });

  it("has CanadianNAD83_LCC's scales, which do not halve, and its matrix sizes zoom by zoom", () => {
    const tms = tileMatrixSet("CanadianNAD83_LCC");
    const sizes = Object.fromEntries(tms.tileMatrices.map((m) => [m.zoom, [m.matrixWidth, m.matrixHeight]]));
    expect(sizes).toMatchObject({ 0: [5, 5], 1: [8, 8], 2: [13, 14], 3: [21, 22], 9: [515, 548], 15: [12344, 13130], 25: [2468768, 2625811] });
    close([tileMatrix(tms, 0)!.cellSize, tileMatrix(tms, 1)!.cellSize, tileMatrix(tms, 25)!.cellSize], [38364.66006, 22489.62831, 0.066145966], 4);
    expect(tileMatrix(tms, 0)!.scaleDenominator).toBeCloseTo(137016643.1, 0);
    // The last column at zoom 2 is 12, the last row 13.
    const [minX, minY, maxX, maxY] = tileBounds(tms, 2, 12, 13);
    expect(maxX).toBeCloseTo(-34655800 + 13 * 256 * tileMatrix(tms, 2)!.cellSize, 3);
    expect(minY).toBeLessThan(-5153821.09213678);
    expect([minX < 7148753.233541353, maxY > -5153821.09213678]).toEqual([true, true]);
    expect((thrown(() => tileBounds(tms, 2, 13, 0)) as HttpError).status).toBe(400);
  });

  it("has the polar UPS quads and World Mercator", () => {
    for (const [id, crs] of [["UPSArcticWGS84Quad", "EPSG:5041"], ["UPSAntarcticWGS84Quad", "EPSG:5042"]]) {
      const tms = tileMatrixSet(id);
      expect(tms.crsName).toBe(crs);
      expect(tms.tileMatrices[0]).toMatchObject({ zoom: 0, cellSize: 128443.4324, origin: [-14440759.350252, 18440759.350252], matrixWidth: 1 });
      expect(tileMatrix(tms, 4)!.cellSize).toBeCloseTo(8027.714526, 5);
      expect(tms.extent).toEqual([-14440759.350252, -14440759.350252, 18440759.350252, 18440759.350252]);
    }
    const mercator = tileMatrixSet("WorldMercatorWGS84Quad");
    expect(mercator.crsName).toBe("EPSG:3395");
    close(tileBounds(mercator, 1, 1, 1), [0, -HALF_EARTH, HALF_EARTH, 0]);
  });

  it("every set's CRS is in the bundled EPSG tables, as the warp takes it", () => {
    expect(TILE_MATRIX_SETS.size).toBeGreaterThanOrEqual(68);
    for (const tms of TILE_MATRIX_SETS.values()) {
      expect(crsOfName(tms.crsName), tms.id).toBeDefined();
      expect(setCrs(tms.id).name, tms.id).toBe(tms.crsName);
    }
  });
});

describe("axis order, turned to x first by the document reader", () => {
  it("EuropeanETRS89_LAEAQuad's origin and box are northing first in its document", () => {
    const tms = tileMatrixSet("EuropeanETRS89_LAEAQuad");
    expect((tms.document.tileMatrices as { pointOfOrigin: number[] }[])[0].pointOfOrigin).toEqual([5500000, 2000000]);
    expect([tms.northingFirst, tms.tileMatrices[0].origin, tms.extent]).toEqual([true, [2000000, 5500000], [2000000, 1000000, 6500000, 5500000]]);
    close(tileBounds(tms, 1, 1, 0), [4250000, 3250000, 6500000, 5500000]);
    expect(tileMatrix(tms, 14)!.cellSize).toBeCloseTo(1.072883606, 8);
  });

  it("NZTM2000Quad's too: its tiles lie over New Zealand's eastings and northings", () => {
    const tms = tileMatrixSet("NZTM2000Quad");
    expect([tms.crsName, tms.northingFirst, tms.tileMatrices[0].origin]).toEqual(["EPSG:2193", true, [-3260586.7284, 10438190.1652]]);
    expect(tms.tileMatrices[0].scaleDenominator).toBeCloseTo(139770566.007179, 5);
    // Wellington (1,748,000 E, 5,428,000 N) is in the zoom-1 tile (0, 1) of a 2 × 2 matrix.
    const [minX, minY, maxX, maxY] = tileBounds(tms, 1, 0, 1);
    expect(minX < 1748000 && 1748000 < maxX && minY < 5428000 && 5428000 < maxY).toBe(true);
  });

  it("an EPSG:4326 set written latitude first has WorldCRS84Quad's tiles", () => {
    const crs84 = tileMatrixSet("WorldCRS84Quad");
    const doc = structuredClone(crs84.document) as Record<string, unknown> & { tileMatrices: { pointOfOrigin: number[] }[] };
    Object.assign(doc, { id: "WGS1984Quad", crs: "http://www.opengis.net/def/crs/EPSG/0/4326", orderedAxes: ["Lat", "Lon"], boundingBox: { lowerLeft: [-90, -180], upperRight: [90, 180] } });
    for (const m of doc.tileMatrices) m.pointOfOrigin = [90, -180];
    const latFirst = readTileMatrixSet(doc);
    expect([latFirst.crsName, latFirst.extent]).toEqual(["EPSG:4326", [-180, -90, 180, 90]]);
    for (const [z, x, y] of [[0, 1, 0], [3, 5, 2], [10, 700, 300]]) expect(tileBounds(latFirst, z, x, y)).toEqual(tileBounds(crs84, z, x, y));
  });
});

describe("requests outside the sets", () => {
  it("are 400 for tiles outside a matrix and 404 for an unknown set", () => {
    const tms = tileMatrixSet("WebMercatorQuad");
    for (const [z, x, y] of [[25, 0, 0], [-1, 0, 0], [1, 2, 0], [1, 0, -1], [2, 1.5, 0], [0.5, 0, 0]]) {
      expect((thrown(() => tileBounds(tms, z, x, y)) as HttpError).status, `${z}/${x}/${y}`).toBe(400);
    }
    const unknown = thrown(() => tileMatrixSet("GoogleMapsCompatible")) as HttpError;
    expect(unknown.status).toBe(404);
    expect(unknown.message).toContain("/tileMatrixSets");
  });
});

describe("the committed documents", () => {
  it("are what infra/build/tile-matrix-sets.ts writes", () => {
    const out = mkdtempSync(path.join(tmpdir(), "tms-"));
    const script = fileURLToPath(new URL("../../infra/build/tile-matrix-sets.ts", import.meta.url));
    execFileSync(process.execPath, ["--import", "tsx", script, out]);
    const committed = fileURLToPath(new URL("../../shared/maps/tile-matrix-sets/", import.meta.url));
    const files = readdirSync(out).sort();
    expect(files).toEqual(readdirSync(committed).sort());
    for (const file of files) expect(readFileSync(path.join(out, file), "utf8"), file).toBe(readFileSync(path.join(committed, file), "utf8"));
  });
});

describe("a document an operator gets wrong", () => {
  const good = () => structuredClone(tileMatrixSet("EuropeanETRS89_LAEAQuad").document) as Record<string, any>;
  /** Each mistake, made to a good document (or, returned, a document of its own). */
  const cases: [string, (d: Record<string, any>) => unknown, RegExp][] = [
    ["not an object", () => [], /must be a JSON object/],
    ["no id", (d) => void (delete d.id), /^id must be a string/],
    ["an id with a slash", (d) => void ((d.id = "my/set")), /id "my\/set" must be 1 to 64 letters/],
    ["no crs", (d) => void (delete d.crs), /crs must be a CRS URI/],
    ["a crs that is no EPSG code", (d) => void ((d.crs = "http://example.org/my-crs")), /crs "http:\/\/example.org\/my-crs" is not an EPSG/],
    ["no orderedAxes", (d) => void (delete d.orderedAxes), /orderedAxes must be two axis names/],
    ["no matrices", (d) => void ((d.tileMatrices = [])), /tileMatrices must be a non-empty array/],
    ["a NaN-like scale", (d) => void ((d.tileMatrices[2].scaleDenominator = "1e400")), /tileMatrices\[2\]\.scaleDenominator must be a finite number above 0/],
    ["a negative cell", (d) => void ((d.tileMatrices[0].cellSize = -1)), /tileMatrices\[0\]\.cellSize must be a finite number above 0/],
    ["no cell size", (d) => void (delete d.tileMatrices[1].cellSize), /tileMatrices\[1\]\.cellSize/],
    ["a zero-wide matrix", (d) => void ((d.tileMatrices[3].matrixWidth = 0)), /tileMatrices\[3\]\.matrixWidth must be a whole number/],
    ["512-pixel tiles", (d) => void ((d.tileMatrices[0].tileWidth = 512)), /tiles must be 256 × 256/],
    ["the bottom-left corner", (d) => void ((d.tileMatrices[0].cornerOfOrigin = "bottomLeft")), /cornerOfOrigin must be "topLeft"/],
    ["a one-number origin", (d) => void ((d.tileMatrices[0].pointOfOrigin = [1])), /pointOfOrigin must be two finite numbers/],
    ["a zoom skipped", (d) => void (d.tileMatrices.splice(2, 1)), /tileMatrices\[2\]\.id must be 2/],
    ["cells that grow", (d) => void ((d.tileMatrices[1].cellSize = 1e9)), /tileMatrices\[1\]\.cellSize must be smaller/],
    ["an upside-down box", (d) => void ((d.boundingBox.lowerLeft = [6e6, 3e6])), /boundingBox\.lowerLeft must be below and left/],
    ["variable widths", (d) => void ((d.variableMatrixWidths = [])), /variableMatrixWidths is not supported/],
  ];
  it.each(cases.map(([what, change, message]) => ({ what, change, message })))("is refused naming the field: $what", ({ change, message }) => {
    const doc = good();
    const replaced = change(doc);
    expect(thrown(() => readTileMatrixSet(replaced ?? doc)).message).toMatch(message);
  });

  it("is refused, with the file named, when its id is a registry set's or another document's, and adds nothing", () => {
    const mine = { ...good(), id: "MyLAEA" };
    expect(thrown(() => addTileMatrixSets([{ document: { ...good() }, where: "/etc/tessera/laea.json" }])).message).toBe(
      '/etc/tessera/laea.json: id "EuropeanETRS89_LAEAQuad" is already a tile matrix set\'s',
    );
    expect(thrown(() => addTileMatrixSets([{ document: mine, where: "a.json" }, { document: mine, where: "b.json" }])).message).toMatch(/^b\.json: id "MyLAEA"/);
    expect(thrown(() => addTileMatrixSets([{ document: { ...mine, crs: 5 }, where: "c.json" }])).message).toMatch(/^c\.json: crs must be/);
    expect(TILE_MATRIX_SETS.has("MyLAEA")).toBe(false);
  });
});
