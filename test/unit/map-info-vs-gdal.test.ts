// What the decoder reports of a COG's bands for the map /info route, against `gdalinfo -json` on
// the map fixtures and on a file GDAL gave a scale, an offset and descriptions: each band's type,
// nodata, colour interpretation, scale, offset and description, and what marks pixels invalid
// (rio-tiler's nodata_type: a nodata value, else an alpha band, else a mask).
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { Cog } from "../../regional/cog/cog";
import { LocalCatalog } from "../../regional/source/local";
import type { SourceInfo } from "../../shared/protocol";
import { GDAL_PYTHON } from "../support/gdal-reference";
import { MAP_FIXTURES, mapFixtures } from "../support/map-fixtures";

const scratch = mkdtempSync(path.join(tmpdir(), "tessera-info-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

interface GdalBand {
  type: string;
  noDataValue?: number;
  colorInterpretation: string;
  scale?: number;
  offset?: number;
  description?: string;
  mask?: { flags: string[] };
}

async function infoOf(dir: string, id: string): Promise<SourceInfo> {
  const cog = await Cog.open(await new LocalCatalog(dir).open(id, undefined));
  try {
    return cog.info(id);
  } finally {
    await cog.close();
  }
}

/** The bands as gdalinfo reads them, in the SourceInfo's terms. */
function gdalBands(file: string) {
  const bands = (JSON.parse(execFileSync("gdalinfo", ["-json", file], { encoding: "utf8" })) as { bands: GdalBand[] }).bands;
  return {
    bands: bands.map((b) => ({
      dtype: b.type.toLowerCase().replace(/^byte$/, "uint8"),
      ...(b.noDataValue !== undefined && { nodata: b.noDataValue }),
      scale: b.scale ?? 1,
      offset: b.offset ?? 0,
      colorinterp: b.colorInterpretation.toLowerCase(),
      description: b.description ?? "",
    })),
    nodataType: bands[0].noDataValue !== undefined ? "Nodata" : bands.some((b) => b.colorInterpretation === "Alpha") ? "Alpha" : bands[0].mask?.flags.includes("PER_DATASET") ? "Mask" : "None",
  };
}

describe("a COG's bands as SourceInfo reports them, against gdalinfo", () => {
  const dir = mapFixtures();
  it.each(Object.values(MAP_FIXTURES).map((f) => ({ id: f.id })))("$id", async ({ id }) => {
    const info = await infoOf(dir, id);
    expect({ bands: info.bands, nodataType: info.nodataType }).toEqual(gdalBands(path.join(dir, `${id}.tif`)));
  });

  it("reads scale, offset and descriptions from GDAL's metadata, and an alpha band", async () => {
    const file = path.join(scratch, "described.tif");
    const script = `
from osgeo import gdal
import numpy
ds = gdal.GetDriverByName("MEM").Create("", 64, 64, 2, gdal.GDT_Int16)
ds.SetGeoTransform([500000, 10, 0, 5000000, 0, -10])
ds.SetProjection("EPSG:32633")
ds.GetRasterBand(1).SetScale(0.01); ds.GetRasterBand(1).SetOffset(-5)
ds.GetRasterBand(1).SetDescription("elevation & <depth>")
ds.GetRasterBand(2).SetColorInterpretation(gdal.GCI_AlphaBand)
ds.GetRasterBand(2).WriteArray(numpy.full((64, 64), 255, numpy.int16))
gdal.Translate("${file}", ds, format="COG", creationOptions=["BLOCKSIZE=256"])
`;
    execFileSync(GDAL_PYTHON, ["-c", script]);
    const info = await infoOf(scratch, "described");
    expect({ bands: info.bands, nodataType: info.nodataType }).toEqual(gdalBands(file));
    expect(info.bands![0]).toMatchObject({ dtype: "int16", scale: 0.01, offset: -5, description: "elevation & <depth>" });
    expect(info.nodataType).toBe("Alpha");
  });
});
