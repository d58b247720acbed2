// An area's values as a GeoTIFF (/bbox, /feature, /preview with .tif): the warped values
// themselves, not a picture. A source's own bands keep their sample type (an integer band warped
// with bilinear or cubic is rounded and clamped to it, as gdalwarp writes an integer output);
// an expression or a statistic over assets (mean, stdev) is written as 32-bit floats. The grid's
// CRS is written as its EPSG code, or as the source's own GeoKeys when it is the source's
// user-defined CRS; its nodata is the request's or the source's, when the type can hold it.
import type { Cog } from "../cog/cog";
import { sampleType } from "../cog/bands";
import { encodeGeoTiff, type GeoTiffCrs, type SamplePlane } from "../encode/geotiff";
import type { Slices } from "../runtime/slices";
import type { AreaValues } from "./compose-tile";
import type { OutputGrid } from "./warp";

export const GEOTIFF_CONTENT_TYPE = "image/tiff; application=geotiff";

/** The GeoTIFF of `values` painted on `grid` from `first` (the first asset's COG); `float` when the values are no longer the source's own. */
export async function areaTiff(values: AreaValues, grid: OutputGrid, first: Cog, float: boolean, nodataOverride: number | "nan" | undefined, slices: Slices) {
  const image = first.levels[0].image;
  const type = sampleType(image);
  const make = float || type.kind === "float" ? undefined : integerPlane(type.kind, type.bits);
  const bands: SamplePlane[] = [];
  for (const plane of values.bands) {
    if (!make) {
      bands.push(plane);
      continue;
    }
    const out = make.plane(plane.length);
    await slices.each(plane.length, 1, (start, end) => {
      for (let i = start; i < end; i++) out[i] = Math.min(make.max, Math.max(make.min, Math.round(plane[i])));
    });
    bands.push(out);
  }
  const stored = nodataOverride === "nan" ? Number.NaN : (nodataOverride ?? image.getGDALNoData() ?? undefined);
  const nodata = stored !== undefined && (make === undefined || (Number.isInteger(stored) && stored >= make.min && stored <= make.max)) ? stored : undefined;
  const [sx, sy] = grid.crs.unitScale;
  const [t0, t1, t2, t3, t4, t5] = grid.affine;
  const body = encodeGeoTiff({
    width: values.width,
    height: values.height,
    bands,
    valid: values.valid,
    nodata,
    crs: tiffCrs(grid, first),
    // The grid is in proj4's units; the file states the CRS's own (US feet, say).
    affine: [t0 / sx, t1 / sx, t2 / sx, t3 / sy, t4 / sy, t5 / sy],
    bandNames: values.names,
  });
  return { body, contentType: GEOTIFF_CONTENT_TYPE };
}

/** An EPSG code, or the source's own keys for its user-defined CRS. */
function tiffCrs(grid: OutputGrid, first: Cog): GeoTiffCrs {
  const epsg = /^EPSG:(\d+)$/.exec(grid.crs.name);
  if (epsg) return { epsg: Number(epsg[1]) };
  return { geoKeys: first.levels[0].image.getGeoKeys() ?? undefined };
}

function integerPlane(kind: "int" | "uint", bits: number): { plane: (n: number) => SamplePlane; min: number; max: number } | undefined {
  if (kind === "uint" && bits <= 8) return { plane: (n) => new Uint8Array(n), min: 0, max: 255 };
  if (kind === "uint" && bits <= 16) return { plane: (n) => new Uint16Array(n), min: 0, max: 65535 };
  if (kind === "int" && bits <= 16) return { plane: (n) => new Int16Array(n), min: -32768, max: 32767 };
  if (kind === "uint" && bits <= 32) return { plane: (n) => new Uint32Array(n), min: 0, max: 2 ** 32 - 1 };
  if (kind === "int" && bits <= 32) return { plane: (n) => new Int32Array(n), min: -(2 ** 31), max: 2 ** 31 - 1 };
  return undefined;
}
