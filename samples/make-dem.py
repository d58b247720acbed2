"""Writes samples/jacksboro-dem.tif: the Jacksboro fault DEM (USGS elevation, public domain, as
matplotlib ships it in its sample data, jacksboro_fault_dem.npz) as a COG in EPSG:4326.
Usage: make-dem.py <jacksboro_fault_dem.npz> <out.tif>. Needs python3-gdal and numpy."""
import sys

import numpy
from osgeo import gdal, osr

gdal.UseExceptions()
npz, out = sys.argv[1], sys.argv[2]
dem = numpy.load(npz)
heights = dem["elevation"]
# The archive's "ymin" is the north edge (its first row), "ymax" the south: rows run north to south.
north, west, cell = float(dem["ymin"]), float(dem["xmin"]), float(dem["dx"])
rows, cols = heights.shape
src = gdal.GetDriverByName("MEM").Create("", cols, rows, 1, gdal.GDT_Int16)
src.SetGeoTransform([west, cell, 0, north, 0, -cell])
srs = osr.SpatialReference()
srs.ImportFromEPSG(4326)
src.SetProjection(srs.ExportToWkt())
src.GetRasterBand(1).WriteArray(heights)
src.GetRasterBand(1).SetNoDataValue(-32768)
gdal.Translate(out, src, options=["-of", "COG", "-co", "BLOCKSIZE=256", "-co", "OVERVIEWS=AUTO", "-co", "RESAMPLING=AVERAGE", "-co", "COMPRESS=DEFLATE", "-co", "PREDICTOR=2"])
