// Georeferenced fixtures for the map-tile tests, made with GDAL in a temp directory: an RGB
// JPEG COG in UTM with overviews and an internal mask (the pattern reprojected, so its edges
// are masked), a float32 DEM in UTM with nodata, a 4-band uint16 image in EPSG:4326, and one
// already in Web Mercator on the tile grid. And GDAL's own reading and warping of them.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { SAMPLES } from "./regional-helpers";

/** Debian's python3 has the GDAL bindings; the python3 first on a developer's PATH may not. */
const PYTHON = "/usr/bin/python3";

export function python(script: string, ...args: string[]): string {
  return execFileSync(PYTHON, ["-c", script, ...args], { encoding: "utf8" });
}

/** Writes the fixtures into `dir`: rgb-utm, dem, u16, mercator (each `<name>.tif`). */
export function makeMapFixtures(dir: string): void {
  const file = (name: string) => path.join(dir, name);
  execFileSync("gdal_translate", ["-q", "-a_srs", "EPSG:4326", "-a_ullr", "14", "46", "15", "45", path.join(SAMPLES, "test-pattern.tif"), file("lonlat.tif")]);
  execFileSync("gdalwarp", ["-q", "-t_srs", "EPSG:32633", "-dstalpha", "-r", "bilinear", file("lonlat.tif"), file("utm-alpha.tif")]);
  execFileSync("gdal_translate", ["-q", "-of", "COG", "-co", "COMPRESS=JPEG", "-co", "BLOCKSIZE=256", file("utm-alpha.tif"), file("rgb-utm.tif")]);
  python(
    `
import sys
import numpy as np
from osgeo import gdal, osr
out = sys.argv[1]
def make(name, width, height, bands, dtype, transform, epsg, fill, nodata=None, options=()):
    ds = gdal.GetDriverByName('MEM').Create('', width, height, bands, dtype)
    ds.SetGeoTransform(transform)
    srs = osr.SpatialReference(); srs.ImportFromEPSG(epsg); ds.SetProjection(srs.ExportToWkt())
    y, x = np.mgrid[0:height, 0:width]
    for b in range(bands):
        band = ds.GetRasterBand(b + 1)
        band.WriteArray(fill(x, y, b))
        if nodata is not None: band.SetNoDataValue(nodata)
    gdal.Translate(out + '/' + name + '.tif', ds, format='COG', creationOptions=['BLOCKSIZE=256', 'OVERVIEWS=AUTO', *options])
def dem(x, y, b):
    z = (100 + 50 * np.sin(x / 40.0) + 30 * np.cos(y / 25.0) + x * 0.2).astype(np.float32)
    z[100:160, 200:300] = -9999
    z[:, :20] = -9999
    return z
make('dem', 600, 500, 1, gdal.GDT_Float32, [500000, 30, 0, 5000000, 0, -30], 32633, dem, -9999, ['COMPRESS=DEFLATE', 'PREDICTOR=YES'])
make('u16', 400, 300, 4, gdal.GDT_UInt16, [10, 0.001, 0, 50, 0, -0.001], 4326, lambda x, y, b: ((x * (b + 1) * 37 + y * 11) % 65536).astype(np.uint16), None, ['COMPRESS=DEFLATE'])
# On the WebMercatorQuad grid at zoom 12 (cell 38.218 m), origin on a tile corner.
cell = 156543.03392804097 / 2 ** 12
left, top = -20037508.3427892 + 2200 * 256 * cell, 20037508.3427892 - 1400 * 256 * cell
make('mercator', 700, 600, 3, gdal.GDT_Byte, [left, cell, 0, top, 0, -cell], 3857, lambda x, y, b: ((x * (b + 2) + y * (3 - b)) % 256).astype(np.uint8), None, ['COMPRESS=DEFLATE'])
`,
    dir,
  );
}

/** GDAL's own raster of a window of `name`'s level (0 = full resolution): each band, and its mask. */
export function gdalWindow(dir: string, name: string, level: number, window: number[], bands: number[]): { values: Float64Array[]; mask: Uint8Array[] } {
  const [x0, y0, x1, y1] = window;
  const raw = path.join(dir, `${name}-window.raw`);
  python(
    `
import sys
import numpy as np
from osgeo import gdal
ds = gdal.Open(sys.argv[1]); level = int(sys.argv[2]); x0, y0, x1, y1 = map(int, sys.argv[3:7]); bands = map(int, sys.argv[8:])
planes = []
for b in bands:
    band = ds.GetRasterBand(b)
    if level > 0: band = band.GetOverview(level - 1)
    planes.append(band.ReadAsArray(x0, y0, x1 - x0, y1 - y0).astype(np.float64))
    planes.append((band.GetMaskBand().ReadAsArray(x0, y0, x1 - x0, y1 - y0) > 0).astype(np.float64))
np.stack(planes).tofile(sys.argv[7])
`,
    path.join(dir, `${name}.tif`),
    String(level),
    ...[x0, y0, x1, y1].map(String),
    raw,
    ...bands.map(String),
  );
  const all = new Float64Array(Uint8Array.prototype.slice.call(readFileSync(raw)).buffer);
  const n = (x1 - x0) * (y1 - y0);
  return {
    values: bands.map((_, i) => all.subarray(2 * i * n, (2 * i + 1) * n)),
    mask: bands.map((_, i) => Uint8Array.from(all.subarray((2 * i + 1) * n, (2 * i + 2) * n))),
  };
}
