"""GDAL's side of `npm run bench:maps`: the same map tiles Tessera renders, made by GDAL's own
warper in this one process (Debian's python3-gdal).

The first line on stdin names the sources (an RGB image and a DEM), the target CRS and the
tiles of each (bounds, side, resampling); each source is opened once, as Tessera's decoder opens
it once, so both keep their decoded blocks cached between tiles. Then each line "png", "warp",
"hillshade" or "terrarium" runs its whole list once and answers one JSON line with the wall and
CPU seconds it took:
  warp       gdal.Warp (gdalwarp's library entry point) to an in-memory RGBA tile: the stored
             level gdalwarp chooses, read and decoded, warped with the default error threshold,
             alpha where there is data;
  png        the same, then the tile encoded as PNG (GDAL's PNG driver, zlib level 6) in memory;
  hillshade  the DEM warped to the tile grown by one pixel a side (Float32), gdaldem hillshade
             (gdal.DEMProcessing, its defaults), the tile cropped out and encoded as PNG;
  terrarium  the DEM warped to the tile (Float32), encoded as Terrarium RGB by NumPy (GDAL has
             no such encoder), and encoded as PNG.
"""
import json
import sys
import time

import numpy
from osgeo import gdal

gdal.UseExceptions()

setup = json.loads(sys.stdin.readline())
source = gdal.Open(setup["file"])
dem = gdal.Open(setup["demFile"])
png_driver = gdal.GetDriverByName("PNG")
mem_driver = gdal.GetDriverByName("MEM")


def warp(tile):
    bounds = [str(v) for v in tile["bounds"]]
    side = str(tile["side"])
    options = ["-of", "MEM", "-t_srs", setup["crs"], "-te", *bounds, "-ts", side, side, "-r", tile["resampling"], "-dstalpha"]
    return gdal.Warp("", source, options=options)


def encode(tile):
    """The PNG's size in bytes."""
    png_driver.CreateCopy("/vsimem/tile.png", tile)
    size = gdal.VSIStatL("/vsimem/tile.png").size
    gdal.Unlink("/vsimem/tile.png")
    return size


def warp_dem(tile, grow):
    """The DEM warped to the tile grown by `grow` pixels a side, Float32, nodata -9999."""
    minx, miny, maxx, maxy = tile["bounds"]
    cell = (maxx - minx) / tile["side"]
    bounds = [str(v) for v in (minx - grow * cell, miny - grow * cell, maxx + grow * cell, maxy + grow * cell)]
    side = str(tile["side"] + 2 * grow)
    options = ["-of", "MEM", "-ot", "Float32", "-dstnodata", "-9999", "-t_srs", setup["crs"], "-te", *bounds, "-ts", side, side, "-r", tile["resampling"]]
    return gdal.Warp("", dem, options=options)


def hillshade(tile):
    shaded = gdal.DEMProcessing("", warp_dem(tile, 1), "hillshade", options=["-of", "MEM"])
    return encode(gdal.Translate("", shaded, options=["-of", "MEM", "-srcwin", "1", "1", str(tile["side"]), str(tile["side"])]))


def terrarium(tile):
    warped = warp_dem(tile, 0)
    h = warped.GetRasterBand(1).ReadAsArray()
    v = numpy.clip(numpy.where(h == -9999, 0, h) + 32768, 0, 65536 - 1 / 256)
    whole = numpy.floor(v)
    rgb = mem_driver.Create("", tile["side"], tile["side"], 3, gdal.GDT_Byte)
    for band, plane in enumerate((whole // 256, whole % 256, numpy.floor((v - whole) * 256))):
        rgb.GetRasterBand(band + 1).WriteArray(plane.astype(numpy.uint8))
    return encode(rgb)


def rgb_tile(tile, with_png):
    warped = warp(tile)
    return encode(warped) if with_png else 0


RUNS = {
    "png": (lambda tile: rgb_tile(tile, True), "tiles"),
    "warp": (lambda tile: rgb_tile(tile, False), "tiles"),
    "hillshade": (hillshade, "demTiles"),
    "terrarium": (terrarium, "demTiles"),
}

for line in sys.stdin:
    make, tiles = RUNS[line.strip()]
    wall, cpu, size = time.perf_counter(), time.process_time(), 0
    for tile in setup[tiles]:
        size += make(tile)
    answer = {"seconds": time.perf_counter() - wall, "cpuSeconds": time.process_time() - cpu, "bytes": size}
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()
