// The terrain page a user opens after `npm start`: the bundled DEM sample (samples/jacksboro-dem.tif,
// USGS elevation) on the map page in 3D, MapLibre's raster-dem from the edge's Terrarium tiles and
// a hillshade layer over it, in Chromium over the real stack. It checks what a user would notice:
// the terrain loads, and the heights MapLibre itself reads off it (queryTerrainElevation, at a zoom
// where it samples the DEM tiles' own pixels) are GDAL's: the DEM warped by gdalwarp to the same
// tile, read at the same place, within the encoding's step (measured: 0.0014–0.0020 m); and no
// tile fails, no error is logged.
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tileBounds, tileMatrixSet } from "../../shared/maps/tile-matrix-sets";
import { gdalWarpTile } from "../support/gdal-reference";
import { settled, startMapSite, type MapSite } from "../support/map-page";

declare const window: { map: any };

const DEM = fileURLToPath(new URL("../../samples/jacksboro-dem.tif", import.meta.url));
/** Terrarium's step: 1/256 m. */
const TOLERANCE = 1 / 256;
/** Places inside the sample, on ridges, slopes and valleys. */
const PLACES: [number, number][] = [
  [-84.3, 36.6],
  [-84.2, 36.5],
  [-84.15, 36.65],
  [-84.35, 36.52],
  [-84.25, 36.7],
];

let m: MapSite;
beforeAll(async () => {
  m = await startMapSite();
});
afterAll(() => m?.close());

/** Where (lon, lat) falls on WebMercatorQuad at zoom z: its tile, and its position in the tile's pixels. */
function onTile(z: number, [lon, lat]: [number, number]): { x: number; y: number; px: number; py: number } {
  const n = 2 ** z;
  const rad = (lat * Math.PI) / 180;
  const wx = ((lon + 180) / 360) * n;
  const wy = ((1 - Math.log(Math.tan(rad) + 1 / Math.cos(rad)) / Math.PI) / 2) * n;
  const [x, y] = [Math.floor(wx), Math.floor(wy)];
  return { x, y, px: (wx - x) * 256, py: (wy - y) * 256 };
}

/** GDAL's height at (lon, lat): the DEM warped by gdalwarp (bilinear) to the zoom-z tile holding it, read bilinearly between pixel centres, as MapLibre reads a DEM tile. */
async function gdalHeight(z: number, place: [number, number]): Promise<number> {
  const tms = tileMatrixSet("WebMercatorQuad");
  const { x, y, px, py } = onTile(z, place);
  const tile = await gdalWarpTile(DEM, tms, tileBounds(tms, z, x, y), 256, "bilinear");
  const h = (i: number, j: number) => tile.bands[0][Math.min(255, Math.max(0, j)) * 256 + Math.min(255, Math.max(0, i))];
  const [fx, fy] = [px - 0.5, py - 0.5];
  const [i, j] = [Math.floor(fx), Math.floor(fy)];
  const [tx, ty] = [fx - i, fy - j];
  return (h(i, j) * (1 - tx) + h(i + 1, j) * tx) * (1 - ty) + (h(i, j + 1) * (1 - tx) + h(i + 1, j + 1) * tx) * ty;
}

describe("the terrain page on the DEM sample", () => {
  it("loads the terrain and its hillshade with every tile answered and no error", async () => {
    await m.page.goto(`${m.site.url}map.html?id=jacksboro-dem&terrain=1&rescale=230,1080&colormap_name=greys`);
    await settled(m.page);
    expect(await m.page.evaluate(() => window.map.getTerrain())).toEqual({ source: "dem", exaggeration: 1 });
    expect(await m.page.locator("#status").getAttribute("class")).not.toBe("error");
    const of = (algorithm: string) => m.tiles.filter((t) => t.url.includes(`algorithm=${algorithm}`));
    expect(of("terrarium").length).toBeGreaterThan(0);
    expect(of("hillshade").length).toBeGreaterThan(0);
    expect(m.tiles.filter((t) => t.status !== 200)).toEqual([]);
    expect(m.pageErrors).toEqual([]);
  });

  it("gives MapLibre the DEM's heights: queryTerrainElevation against gdalwarp's tile, within the encoding's step", async () => {
    const maxzoom: number = await m.page.evaluate(() => window.map.getSource("dem").maxzoom);
    // Three zooms past the DEM's tiles, MapLibre draws them overzoomed and samples their own pixels.
    const heights: { place: [number, number]; maplibre: number; gdal: number }[] = [];
    for (const place of PLACES) {
      await m.page.evaluate(([c, z]) => window.map.jumpTo({ center: c, zoom: z, pitch: 0 }), [place, maxzoom + 3] as const);
      await settled(m.page);
      heights.push({ place, maplibre: await m.page.evaluate((p) => window.map.queryTerrainElevation(p), place), gdal: await gdalHeight(maxzoom, place) });
    }
    const off = heights.filter((h) => !(Math.abs(h.maplibre - h.gdal) <= TOLERANCE));
    expect(off).toEqual([]);
    // The places differ by hundreds of metres: a flat or shifted terrain would not pass.
    const values = heights.map((h) => h.gdal);
    expect(Math.max(...values) - Math.min(...values)).toBeGreaterThan(100);
    expect(m.tiles.filter((t) => t.status !== 200)).toEqual([]);
    expect(m.pageErrors).toEqual([]);
  });
});
