"""GDAL for the map tests, in one long-lived process (Debian's python3-gdal): the command-line
tools pay ~0.4 s each to start, which a suite of many tiles cannot afford. Each operation runs the
library entry point its tool runs, with the tool's own arguments: gdal.Warp is gdalwarp,
gdal.Info is gdalinfo. One JSON request a line on stdin, one JSON answer a line on stdout, in
order; the process ends when stdin closes.
"""
import base64
import json
import sys

from osgeo import gdal, osr

gdal.UseExceptions()


def warp(request):
    """gdalwarp `args` (without the output format) of `src` into memory: the raster, band-sequential."""
    ds = gdal.Warp("", request["src"], options=["-of", "MEM", *request["args"]])
    data = ds.ReadRaster()
    return {
        "width": ds.RasterXSize,
        "height": ds.RasterYSize,
        "bands": ds.RasterCount,
        "type": gdal.GetDataTypeName(ds.GetRasterBand(1).DataType),
        "data": base64.b64encode(data).decode("ascii"),
    }


def suggested_warp_output(request):
    """The grid gdalwarp chooses for `src` in `crs` (GDALSuggestedWarpOutput, as `gdalwarp -t_srs crs`)."""
    ds = gdal.Warp("", request["src"], options=["-of", "VRT", "-t_srs", request["crs"]])
    return {"geoTransform": list(ds.GetGeoTransform()), "width": ds.RasterXSize, "height": ds.RasterYSize}


def info(request):
    """gdalinfo -json."""
    return gdal.Info(request["file"], format="json")


def transform(request):
    """Points from one CRS to another, x (easting, longitude) first, as gdaltransform does."""
    def srs(text):
        s = osr.SpatialReference()
        s.SetFromUserInput(text)
        s.SetAxisMappingStrategy(osr.OAMS_TRADITIONAL_GIS_ORDER)
        return s

    ct = osr.CoordinateTransformation(srs(request["from"]), srs(request["to"]))
    return {"points": [list(ct.TransformPoint(x, y)[:2]) for x, y in request["points"]]}


OPERATIONS = {"warp": warp, "suggestedWarpOutput": suggested_warp_output, "info": info, "transform": transform}

for line in sys.stdin:
    request = json.loads(line)
    try:
        answer = {"ok": OPERATIONS[request["op"]](request)}
    except Exception as e:  # the caller throws it, with GDAL's message
        answer = {"error": f"{request['op']}: {e}"}
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()
