// Where a source lies on the Earth, read from its GeoTIFF tags: the CRS its GeoKeys name by EPSG
// code and the full image's bounds in it (from ModelTiepoint + ModelPixelScale, or
// ModelTransformation). The map routes need it; a source without it (a scan, the IIIF test
// pattern) is an image only.
import type { GeoTIFFImage } from "geotiff";
import type { Georeference } from "../../shared/protocol";

/** GeoKey value meaning "defined by other keys, not an EPSG code": left to reprojection's own reader. */
const USER_DEFINED = 32767;

export function georeference(image: GeoTIFFImage): Georeference | undefined {
  const keys = image.getGeoKeys();
  const code: unknown = keys?.ProjectedCSTypeGeoKey ?? keys?.GeographicTypeGeoKey;
  if (typeof code !== "number" || !Number.isInteger(code) || code <= 0 || code === USER_DEFINED) return undefined;
  let bbox: number[];
  try {
    bbox = image.getBoundingBox(); // throws without a tiepoint or a transformation
  } catch {
    return undefined;
  }
  if (bbox.length !== 4 || !bbox.every(Number.isFinite)) return undefined;
  return { crs: `EPSG:${code}`, bbox: [bbox[0], bbox[1], bbox[2], bbox[3]] };
}
