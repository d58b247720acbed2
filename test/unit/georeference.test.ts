// A source's georeference as the decoder reads it (CRS from the GeoKeys, bounds from the
// tiepoint and pixel scale), against gdalinfo's reading of the same files.
import { execFileSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Cog } from "../../regional/cog/cog";
import { LocalCatalog } from "../../regional/source/local";
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

  it("is absent for a picture that is not georeferenced", async () => {
    expect(await decoderReads(new LocalCatalog(SAMPLES), "test-pattern")).toBeUndefined();
  });
});
