"""GDAL's side of `npm run bench:maps`: the same map tiles Tessera renders, made by GDAL's own
warper in this one process (Debian's python3-gdal).

The first line on stdin names the source, the target CRS and the tiles (bounds, side,
resampling); the source is opened once, as Tessera's decoder opens it once, so both keep their
decoded blocks cached between tiles. Then each line "png" or "warp" runs the whole list once and
answers one JSON line with the wall and CPU seconds it took:
  warp  gdal.Warp (gdalwarp's library entry point) to an in-memory RGBA tile: the stored level
        gdalwarp chooses, read and decoded, warped with the default error threshold, alpha where
        there is data;
  png   the same, then the tile encoded as PNG (GDAL's PNG driver, zlib level 6) in memory.
"""
import json
import sys
import time

from osgeo import gdal

gdal.UseExceptions()

setup = json.loads(sys.stdin.readline())
source = gdal.Open(setup["file"])
png_driver = gdal.GetDriverByName("PNG")


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


for line in sys.stdin:
    with_png = line.strip() == "png"
    wall, cpu, size = time.perf_counter(), time.process_time(), 0
    for tile in setup["tiles"]:
        warped = warp(tile)
        if with_png:
            size += encode(warped)
    answer = {"seconds": time.perf_counter() - wall, "cpuSeconds": time.process_time() - cpu, "bytes": size}
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()
