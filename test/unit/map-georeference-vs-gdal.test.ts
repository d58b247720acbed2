// The facts TileJSON and WMTS are built from, as the decoder reads them from the map fixtures,
// against GDAL's own: the lon/lat bounds against gdalinfo's wgs84Extent, and on each tile
// matrix set the bounds and resolution against the grid gdalwarp suggests for the set's CRS,
// and the zooms that resolution gives by the rule TileJSON's minzoom and maxzoom follow (on every
// set of the registry: the 60 UTM quads too, however far from their zone).
import { beforeAll, describe, expect, it } from "vitest";
import { Cog } from "../../regional/cog/cog";
import { LocalCatalog } from "../../regional/source/local";
import { TILE_MATRIX_SETS, type TileMatrixSet } from "../../shared/maps/tile-matrix-sets";
import type { Georeference } from "../../shared/protocol";
import { gdalInfo, gdalSuggestedWarpOutput } from "../support/gdal-reference";
import { MAP_FIXTURES, mapFixture, mapFixtures, type MapFixture } from "../support/map-fixtures";

/** Degrees, about 1 cm: gdalinfo prints 7 decimals, so its own figures are within 5e-8. */
const LON_LAT_TOLERANCE = 1e-7;

const georeferences = new Map<string, Georeference | undefined>();

beforeAll(async () => {
  const catalog = new LocalCatalog(mapFixtures());
  for (const fixture of Object.values(MAP_FIXTURES)) {
    const cog = await Cog.open(await catalog.open(fixture.id, undefined));
    georeferences.set(fixture.id, cog.info(fixture.id).georeference);
    await cog.close();
  }
});

/**
 * The first zoom whose cell size is at most `resolution` (to a millionth, for a source whose pixels
 * are the set's own cells): the zoom at which a tile shows every pixel of that resolution.
 */
function zoomFor(tms: TileMatrixSet, resolution: number): number {
  const matrices = tms.tileMatrices;
  return (matrices.find((m) => m.cellSize <= resolution * (1 + 1e-6)) ?? matrices[matrices.length - 1]).zoom;
}

const fixtures = Object.values(MAP_FIXTURES).map((f) => ({ ...f, name: f.id }));
const sets = [...TILE_MATRIX_SETS.values()];

describe.each(fixtures)("$name", (fixture: MapFixture) => {
  it("lies within gdalinfo's wgs84Extent, in longitude and latitude", async () => {
    const extent = (await gdalInfo(mapFixture(fixture))).wgs84Extent as { coordinates: [number, number][][] };
    const corners = extent.coordinates[0];
    const expected = [
      Math.min(...corners.map((c) => c[0])),
      Math.min(...corners.map((c) => c[1])),
      Math.max(...corners.map((c) => c[0])),
      Math.max(...corners.map((c) => c[1])),
    ];
    const got = georeferences.get(fixture.id)!.lonLatBounds;
    expected.forEach((e, i) => expect(Math.abs(got[i] - e), `lonLatBounds[${i}] ${got[i]} vs ${e}`).toBeLessThanOrEqual(LON_LAT_TOLERANCE));
  });

  it.each(sets.map((tms) => ({ tms, name: tms.id })))("on $name, has gdalwarp's grid and the zooms it gives", async ({ tms }) => {
    const file = mapFixture(fixture);
    const { geoTransform, width, height } = await gdalSuggestedWarpOutput(file, tms.crs);
    const resolution = geoTransform[1];
    const bounds = [geoTransform[0], geoTransform[3] + height * geoTransform[5], geoTransform[0] + width * resolution, geoTransform[3]];
    const overviews = ((await gdalInfo(file)).bands as { overviews?: { size: [number, number] }[] }[])[0].overviews ?? [];
    const [smallestWidth, smallestHeight] = overviews.length ? overviews[overviews.length - 1].size : [fixture.width, fixture.height];
    // The smallest level's pixel size: the full resolution times its coarser axis's shrink.
    const shrink = Math.max(fixture.width / smallestWidth, fixture.height / smallestHeight);

    const tiling = georeferences.get(fixture.id)!.tiling[tms.id];
    // Outside the set's extent (a European fixture on NZTM2000Quad or the Antarctic one): not on the set.
    const [minX, minY, maxX, maxY] = tms.extent;
    if (!(bounds[0] < maxX && bounds[2] > minX && bounds[1] < maxY && bounds[3] > minY)) return expect(tiling, `tiling.${tms.id}`).toBeUndefined();
    expect(tiling, `tiling.${tms.id}`).toBeDefined();
    expect(Math.abs(tiling.resolution / resolution - 1), `resolution ${tiling.resolution} vs gdalwarp's ${resolution}`).toBeLessThanOrEqual(1e-9);
    // gdalwarp rounds its extent to the nearest whole number of pixels: within half a pixel.
    bounds.forEach((b, i) => expect(Math.abs(tiling.bounds[i] - b), `bounds[${i}] ${tiling.bounds[i]} vs ${b}`).toBeLessThanOrEqual(resolution / 2));
    expect(tiling.maxZoom, "maxZoom: the first zoom as fine as the full resolution").toBe(zoomFor(tms, resolution));
    expect(tiling.minZoom, "minZoom: the same for the smallest overview's resolution").toBe(zoomFor(tms, resolution * shrink));
  });
});
