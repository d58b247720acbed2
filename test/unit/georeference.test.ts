// A source's georeference as the decoder reads it (CRS from the GeoKeys, bounds from the
// tiepoint and pixel scale), against GDAL's reading of the same files: gdalinfo's CRS and
// corners, osr's densified TransformBounds for the lon/lat and tile-matrix-set bounds, and the
// pixel size gdalwarp picks when it reprojects the whole file.
import { execFileSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Cog } from "../../regional/cog/cog";
import { LocalCatalog } from "../../regional/source/local";
import { tileMatrixSet } from "../../shared/maps/tile-matrix-sets";
import { SAMPLES } from "./regional-helpers";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "tessera-georef-"));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

/** The pattern written as a COG in `srs`, its corners at `ullr` (upper-left x y, lower-right x y). */
function fixture(name: string, srs: string, ullr: number[]): string {
  const file = path.join(dir, `${name}.tif`);
  execFileSync("gdal_translate", ["-q", "-of", "COG", "-a_srs", srs, "-a_ullr", ...ullr.map(String), path.join(SAMPLES, "test-pattern.tif"), file]);
  return name;
}

/** GDAL's reading: the EPSG code and [minX, minY, maxX, maxY]. */
function gdal(name: string): { epsg: number; bbox: number[] } {
  const info = JSON.parse(execFileSync("gdalinfo", ["-json", path.join(dir, `${name}.tif`)], { encoding: "utf8" }));
  const { lowerLeft, upperRight } = info.cornerCoordinates as Record<string, [number, number]>;
  return { epsg: info.stac["proj:epsg"], bbox: [lowerLeft[0], lowerLeft[1], upperRight[0], upperRight[1]] };
}

/** GDAL's bounds of the file in `srs`, its edges densified with 21 points (osr's TransformBounds). */
function gdalBounds(name: string, srs: string): number[] {
  const script = `
import json, sys
from osgeo import gdal, osr
ds = gdal.Open(sys.argv[1])
src = ds.GetSpatialRef(); src.SetAxisMappingStrategy(osr.OAMS_TRADITIONAL_GIS_ORDER)
dst = osr.SpatialReference(); dst.SetFromUserInput(sys.argv[2]); dst.SetAxisMappingStrategy(osr.OAMS_TRADITIONAL_GIS_ORDER)
t = ds.GetGeoTransform(); w, h = ds.RasterXSize, ds.RasterYSize
xs = [t[0], t[0] + w * t[1]]; ys = [t[3], t[3] + h * t[5]]
print(json.dumps(osr.CoordinateTransformation(src, dst).TransformBounds(min(xs), min(ys), max(xs), max(ys), 21)))`;
  // Debian's python3 has the GDAL bindings; the python3 first on a developer's PATH may not.
  return JSON.parse(execFileSync("/usr/bin/python3", ["-c", script, path.join(dir, `${name}.tif`), srs], { encoding: "utf8" }));
}

/** The pixel size gdalwarp chooses for the whole file reprojected to `srs`. */
function gdalwarpResolution(name: string, srs: string): number {
  const out = path.join(dir, `${name}-${srs.replace(":", "")}.tif`);
  execFileSync("gdalwarp", ["-q", "-overwrite", "-t_srs", srs, path.join(dir, `${name}.tif`), out]);
  return JSON.parse(execFileSync("gdalinfo", ["-json", out], { encoding: "utf8" })).geoTransform[1];
}

async function decoderReads(catalog: LocalCatalog, id: string) {
  const cog = await Cog.open(await catalog.open(id, undefined));
  try {
    return cog.info(id).georeference;
  } finally {
    await cog.close();
  }
}

describe("a source's georeference", () => {
  it("is read as gdalinfo reads it, for projected and geographic CRSs", async () => {
    const utm = fixture("utm", "EPSG:32633", [500000, 5000000, 510000, 4990000]);
    const wgs84 = fixture("wgs84", "EPSG:4326", [10, 50, 11, 49]);
    const catalog = new LocalCatalog(dir);
    for (const id of [utm, wgs84]) {
      const expected = gdal(id);
      const got = await decoderReads(catalog, id);
      expect(got?.crs, id).toBe(`EPSG:${expected.epsg}`);
      got!.bbox.forEach((v, i) => expect(v, `${id} bbox[${i}]`).toBeCloseTo(expected.bbox[i], 6));
    }
  });

  it("has the lon/lat bounds and each set's bounds GDAL computes along densified edges", async () => {
    // A large UTM image: its edges curve in lon/lat, so the corners alone would be wrong.
    const id = fixture("utm-wide", "EPSG:32633", [200000, 6000000, 800000, 5400000]);
    const got = (await decoderReads(new LocalCatalog(dir), id))!;
    gdalBounds(id, "EPSG:4326").forEach((v, i) => expect(got.lonLatBounds[i], `lonLatBounds[${i}]`).toBeCloseTo(v, 7));
    gdalBounds(id, "EPSG:3857").forEach((v, i) => expect(got.tiling.WebMercatorQuad.bounds[i], `WebMercatorQuad bounds[${i}]`).toBeCloseTo(v, 2));
    gdalBounds(id, "EPSG:4326").forEach((v, i) => expect(got.tiling.WorldCRS84Quad.bounds[i], `WorldCRS84Quad bounds[${i}]`).toBeCloseTo(v, 7));
  });

  it("reads a user-defined projected CRS from its GeoKeys, offline, as a PROJ string", async () => {
    const lcc = "+proj=lcc +lat_1=49 +lat_2=44 +lat_0=46.5 +lon_0=3 +x_0=700000 +y_0=6600000 +ellps=GRS80 +units=m +no_defs";
    const id = fixture("lcc", lcc, [700000, 6600000, 800000, 6500000]);
    const got = (await decoderReads(new LocalCatalog(dir), id))!;
    expect(got.crs).toMatch(/^\+proj=lcc /);
    gdalBounds(id, "EPSG:4326").forEach((v, i) => expect(got.lonLatBounds[i], `lonLatBounds[${i}]`).toBeCloseTo(v, 7));
  });

  it("has gdalwarp's resolution on each set, and the zooms whose cells first reach it and the smallest level's", async () => {
    const id = fixture("utm-zooms", "EPSG:32633", [500000, 5000000, 510000, 4990000]); // 10 m pixels, levels 1000, 500, 250
    const got = (await decoderReads(new LocalCatalog(dir), id))!;
    for (const [set, srs] of [["WebMercatorQuad", "EPSG:3857"], ["WorldCRS84Quad", "EPSG:4326"]]) {
      const tiling = got.tiling[set];
      expect(tiling.resolution / gdalwarpResolution(id, srs), set).toBeCloseTo(1, 9);
      const cell = (z: number) => tileMatrixSet(set).tileMatrices[z].cellSize;
      // maxZoom: the first zoom whose cell is no larger than a source pixel.
      expect(cell(tiling.maxZoom)).toBeLessThanOrEqual(tiling.resolution);
      expect(cell(tiling.maxZoom - 1)).toBeGreaterThan(tiling.resolution);
      // minZoom: the same for the 250-pixel level, four times coarser.
      expect(cell(tiling.minZoom)).toBeLessThanOrEqual(4 * tiling.resolution);
      expect(cell(tiling.minZoom - 1)).toBeGreaterThan(4 * tiling.resolution);
    }
    // At 45°N, 10 m is 14.1 m of Web Mercator: zoom 14 (9.55 m cells); 40 m is 56.5 m: zoom 12 (38.2 m).
    expect([got.tiling.WebMercatorQuad.minZoom, got.tiling.WebMercatorQuad.maxZoom]).toEqual([12, 14]);
  });

  it("is absent for a picture that is not georeferenced", async () => {
    expect(await decoderReads(new LocalCatalog(SAMPLES), "test-pattern")).toBeUndefined();
  });
});
