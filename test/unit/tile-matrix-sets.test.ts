// The two OGC tile matrix sets against the standard's own figures (OGC 17-083r4, Annex D):
// scale denominators, cell sizes, matrix sizes, and the bounds of tiles clients ask for.
import { describe, expect, it } from "vitest";
import { tileBounds, tileMatrixSet } from "../../shared/maps/tile-matrix-sets";
import { HttpError } from "../../shared/errors";

const HALF_EARTH = 20037508.3427892;
const close = (actual: number[], expected: number[]) =>
  expected.forEach((e, i) => expect(actual[i], `[${i}]`).toBeCloseTo(e, 6));

describe("WebMercatorQuad", () => {
  const tms = tileMatrixSet("WebMercatorQuad");
  it("has the standard's zoom 0 and halves per zoom down to 24", () => {
    expect(tms.crs).toBe("http://www.opengis.net/def/crs/EPSG/0/3857");
    expect(tms.tileMatrices).toHaveLength(25);
    expect(tms.tileMatrices[0]).toMatchObject({ id: "0", scaleDenominator: 559082264.0287178, cellSize: 156543.03392804097, matrixWidth: 1, matrixHeight: 1, tileWidth: 256 });
    expect(tms.tileMatrices[18].scaleDenominator).toBeCloseTo(2132.7295838497840, 9);
    expect(tms.tileMatrices[24]).toMatchObject({ matrixWidth: 2 ** 24, matrixHeight: 2 ** 24 });
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
    expect(tms.orderedAxes).toEqual(["Lon", "Lat"]);
    expect(tms.tileMatrices[0]).toMatchObject({ scaleDenominator: 279541132.0143589, cellSize: 0.703125, matrixWidth: 2, matrixHeight: 1 });
    close(tileBounds(tms, 0, 1, 0), [0, -90, 180, 90]);
    close(tileBounds(tms, 2, 0, 3), [-180, -90, -135, -45]);
  });
});

describe("requests outside the sets", () => {
  it("are 400 for tiles outside a matrix and 404 for an unknown set, naming what is known", () => {
    const tms = tileMatrixSet("WebMercatorQuad");
    for (const [z, x, y] of [[25, 0, 0], [-1, 0, 0], [1, 2, 0], [1, 0, -1], [2, 1.5, 0]]) {
      const err = (() => { try { tileBounds(tms, z, x, y); } catch (e) { return e; } })() as HttpError;
      expect(err.status, `${z}/${x}/${y}`).toBe(400);
    }
    const unknown = (() => { try { tileMatrixSet("GoogleMapsCompatible"); } catch (e) { return e; } })() as HttpError;
    expect(unknown.status).toBe(404);
    expect(unknown.message).toContain("WebMercatorQuad, WorldCRS84Quad");
  });
});
