// WMTS capabilities on every tile matrix set, read by GDAL's WMTS driver (as QGIS adds a layer):
// for each set, a map fixture that lies on it, its capabilities as the edge writes them, and what
// GDAL makes of them: the set's CRS, a pixel of the finest matrix's cell size (so the scale
// denominators and tile sizes say the right thing), and an extent around the source's data on
// the set (so the top-left corners are read in the right axis order: EPSG:3035 and EPSG:2193 are
// northing first). The EPSG-style names ArcMap wants (use_epsg) are read the same.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { Cog } from "../../regional/cog/cog";
import { LocalCatalog } from "../../regional/source/local";
import { TILE_MATRIX_SETS, tileMatrix, type TileMatrixSet } from "../../shared/maps/tile-matrix-sets";
import { wmtsCapabilities } from "../../shared/maps/wmts-capabilities";
import type { Georeference } from "../../shared/protocol";
import { gdalInfo } from "../support/gdal-reference";
import { MAP_FIXTURE_DIR, MAP_FIXTURES, mapFixture, SET_FIXTURES } from "../support/map-fixtures";
import { WORLD_EDGE_FIXTURES, worldEdgeFixtures } from "../support/world-edge-fixtures";

const FIXTURES = [...Object.values(MAP_FIXTURES), ...Object.values(SET_FIXTURES)];
const georeferences: { id: string; georeference: Georeference }[] = [];
const folder = mkdtempSync(path.join(tmpdir(), "wmts-"));

beforeAll(async () => {
  worldEdgeFixtures();
  const catalog = new LocalCatalog(MAP_FIXTURE_DIR);
  for (const fixture of [...FIXTURES, WORLD_EDGE_FIXTURES.lonLatAcross]) {
    mapFixture(fixture);
    const cog = await Cog.open(await catalog.open(fixture.id, undefined));
    georeferences.push({ id: fixture.id, georeference: cog.info(fixture.id).georeference! });
    await cog.close();
  }
});

interface GdalReport {
  geoTransform: number[];
  size: [number, number];
  coordinateSystem: { wkt: string };
}

/** GDAL's report of `tms`'s capabilities for the first fixture on it (written to a file GDAL opens). */
async function readByGdal(tms: TileMatrixSet, epsgNames = false, source = georeferences.find((g) => g.georeference.tiling[tms.id])!) {
  const { id, georeference } = source;
  const tiling = georeference.tiling[tms.id];
  const xml = wmtsCapabilities({
    id,
    lonLatBounds: georeference.lonLatBounds,
    tiling,
    tms,
    format: "image/png",
    scale: 1,
    template: `http://127.0.0.1:9/tiles/${id}/${tms.id}/{TileMatrix}/{TileCol}/{TileRow}.png`,
    self: `http://127.0.0.1:9/tiles/${id}/${tms.id}/WMTSCapabilities.xml`,
    epsgNames,
  });
  const file = path.join(folder, `${id}-${tms.id}${epsgNames ? "-epsg" : ""}.xml`);
  writeFileSync(file, xml);
  // The extent from the finest matrix's limits and corner, not the layer's lon/lat box: a corner
  // read in the wrong axis order then puts it elsewhere.
  return { tiling, report: (await gdalInfo(`WMTS:${file}`, ["EXTENT_METHOD=MOST_PRECISE_TILE_MATRIX"])) as unknown as GdalReport };
}

function expectRead(tms: TileMatrixSet, { tiling, report }: Awaited<ReturnType<typeof readByGdal>>, epsgNames = false): void {
  // GDAL names CRS84 by OGC's code, unless the document says EPSG:4326.
  const id = /CRS84$/.test(tms.crs) && !epsgNames ? '"OGC","CRS84"' : `"EPSG",${tms.crsName.slice("EPSG:".length)}`;
  expect(report.coordinateSystem.wkt, "GDAL's CRS").toMatch(new RegExp(`ID\\[${id}\\]\\]$`));
  const cell = tileMatrix(tms, tiling.maxZoom)!.cellSize;
  expect(Math.abs(report.geoTransform[1] / cell - 1), `pixel ${report.geoTransform[1]} vs the finest cell ${cell}`).toBeLessThan(1e-6);
  // The data's centre, x first, lies in the extent GDAL gives the layer.
  const [x0, y0, x1, y1] = tiling.bounds;
  const [left, width, , top, , height] = report.geoTransform;
  const [x, y] = [(x0 + x1) / 2, (y0 + y1) / 2];
  expect(left <= x && x <= left + report.size[0] * width, `x ${x} in ${left} + ${report.size[0]} px`).toBe(true);
  expect(top + report.size[1] * height <= y && y <= top, `y ${y} in ${top} − ${report.size[1]} px`).toBe(true);
}

describe("every set's WMTS capabilities, as GDAL reads them", () => {
  it.each([...TILE_MATRIX_SETS.values()].map((tms) => ({ tms, name: tms.id })))("$name", async ({ tms }) => {
    expectRead(tms, await readByGdal(tms));
  });

  it.each(["EuropeanETRS89_LAEAQuad", "NZTM2000Quad", "CanadianNAD83_LCC", "WorldCRS84Quad"].map((id) => ({ tms: TILE_MATRIX_SETS.get(id)!, name: id })))(
    "$name with use_epsg's EPSG:{code}",
    async ({ tms }) => {
      expectRead(tms, await readByGdal(tms, true), true);
    },
  );
});

describe("a source across 180°, as GDAL reads its capabilities", () => {
  it.each(["WebMercatorQuad", "WorldCRS84Quad"])("%s: every column, so a client asks for the tiles on both sides", async (id) => {
    const tms = TILE_MATRIX_SETS.get(id)!;
    const across = georeferences.find((g) => g.id === WORLD_EDGE_FIXTURES.lonLatAcross.id)!;
    const { tiling, report } = await readByGdal(tms, false, across);
    expect(tiling.bounds[2], "the bounds run past the set's east edge").toBeGreaterThan(tms.extent[2]);
    const [left, width] = report.geoTransform;
    // The layer spans the set from edge to edge: its part east of 180° lies at the far west.
    expect(left).toBeCloseTo(tms.extent[0], 0);
    expect(left + report.size[0] * width).toBeCloseTo(tms.extent[2], 0);
  });
});
