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
    """gdalinfo -json, with the driver's open options (-oo) if any."""
    return gdal.Info(gdal.OpenEx(request["file"], open_options=request.get("openOptions", [])), format="json")


def transform(request):
    """Points from one CRS to another, x (easting, longitude) first, as gdaltransform does."""
    def srs(text):
        s = osr.SpatialReference()
        s.SetFromUserInput(text)
        s.SetAxisMappingStrategy(osr.OAMS_TRADITIONAL_GIS_ORDER)
        return s

    ct = osr.CoordinateTransformation(srs(request["from"]), srs(request["to"]))
    return {"points": [list(ct.TransformPoint(x, y)[:2]) for x, y in request["points"]]}


def pixel_to_lon_lat(request):
    """Pixel (x, y) positions of `file` to longitude, latitude, as `gdaltransform -t_srs EPSG:4326 file` does."""
    ds = gdal.Open(request["file"])
    t = gdal.Transformer(ds, None, ["DST_SRS=EPSG:4326"])
    return {"points": [list(t.TransformPoint(0, x, y)[1][:2]) for x, y in request["points"]]}


def read(request):
    """A window [x0, y0, x1, y1] of `file`'s `level` (0: full resolution, n: overview n): each band
    of `bands` (from 1) as float64, then its mask band's bytes (0 where GDAL says invalid)."""
    ds = gdal.Open(request["file"])
    x0, y0, x1, y1 = request["window"]
    values, masks = b"", b""
    for b in request["bands"]:
        band = ds.GetRasterBand(b)
        if request["level"] > 0:
            band = band.GetOverview(request["level"] - 1)
        values += band.ReadRaster(x0, y0, x1 - x0, y1 - y0, buf_type=gdal.GDT_Float64)
        masks += band.GetMaskBand().ReadRaster(x0, y0, x1 - x0, y1 - y0, buf_type=gdal.GDT_Byte)
    return {"values": base64.b64encode(values).decode("ascii"), "masks": base64.b64encode(masks).decode("ascii")}


def numpy_statistics(request):
    """rio-tiler's band statistics by NumPy over a window of `file`'s `level` as GDAL reads it
    (GDAL's mask, and `cutline`, base64 bytes of 1 inside, if given), or of `file` warped by
    gdalwarp `warp` arguments: the statistics tests' reference. Percentiles and the median by numpy.percentile's inverted CDF."""
    import numpy
    ds = gdal.Warp("", request["file"], options=["-of", "MEM", *request["warp"]]) if request.get("warp") else gdal.Open(request["file"])
    band = ds.GetRasterBand(request["band"])
    if request["level"] > 0:
        band = band.GetOverview(request["level"] - 1)
    x0, y0, x1, y1 = request["window"]
    data = band.ReadAsArray(x0, y0, x1 - x0, y1 - y0).astype(numpy.float64)
    valid = band.GetMaskBand().ReadAsArray(x0, y0, x1 - x0, y1 - y0) > 0
    if request.get("cutline"):
        valid &= numpy.frombuffer(base64.b64decode(request["cutline"]), dtype=numpy.uint8).reshape(data.shape) > 0
    valid &= numpy.isfinite(data)
    values = data[valid]
    keys, counts = numpy.unique(values, return_counts=True)
    if request.get("categorical"):
        histogram = [counts.tolist(), keys.tolist()]
    else:
        h, edges = numpy.histogram(values, bins=request.get("bins", 10), range=request.get("range"))
        histogram = [h.tolist(), edges.tolist()]
    n = values.size
    q = lambda p: float(numpy.percentile(values, p, method="inverted_cdf")) if n else None
    return {
        "min": float(values.min()) if n else None,
        "max": float(values.max()) if n else None,
        "mean": float(values.mean()) if n else None,
        "count": n,
        "sum": float(values.sum()),
        "std": float(values.std(ddof=0)) if n else None,
        "median": q(50),
        "majority": float(keys[numpy.argmax(counts)]) if n else None,
        "minority": float(keys[numpy.argmin(counts)]) if n else None,
        "unique": int(keys.size),
        "histogram": histogram,
        "valid_percent": round(n / data.size * 100, 2),
        "masked_pixels": int(data.size - n),
        "valid_pixels": n,
        "percentiles": {str(p): q(p) for p in request.get("percentiles", [2, 98])},
    }


def rasterize(request):
    """gdal_rasterize of a GeoJSON `geometry` (longitude, latitude) onto a grid of `crs`,
    `geoTransform`, `width` × `height`: 1 inside by GDAL's default rule (pixel centres), else 0."""
    vector = "/vsimem/feature.geojson"
    gdal.FileFromMemBuffer(vector, json.dumps({"type": "Feature", "properties": {}, "geometry": request["geometry"]}))
    dst = gdal.GetDriverByName("MEM").Create("", request["width"], request["height"], 1, gdal.GDT_Byte)
    dst.SetGeoTransform(request["geoTransform"])
    srs = osr.SpatialReference()
    srs.SetFromUserInput(request["crs"])
    dst.SetProjection(srs.ExportToWkt())
    gdal.Rasterize(dst, vector, burnValues=[1])
    gdal.Unlink(vector)
    return {"mask": base64.b64encode(dst.ReadRaster()).decode("ascii")}


def dem(request):
    """gdaldem `processing` (hillshade, slope) with its `options` on a grid of float32 `data`
    (base64, `width` × `height`, `nodata` where a value is missing) placed by `geoTransform` in
    `crs`: the output as float32, NaN where gdaldem writes its nodata."""
    import numpy
    src = gdal.GetDriverByName("MEM").Create("", request["width"], request["height"], 1, gdal.GDT_Float32)
    src.SetGeoTransform(request["geoTransform"])
    srs = osr.SpatialReference()
    srs.SetFromUserInput(request["crs"])
    src.SetProjection(srs.ExportToWkt())
    band = src.GetRasterBand(1)
    band.SetNoDataValue(request["nodata"])
    band.WriteRaster(0, 0, request["width"], request["height"], base64.b64decode(request["data"]))
    out = gdal.DEMProcessing("", src, request["processing"], options=["-of", "MEM", *request["options"]])
    result = out.GetRasterBand(1)
    values = result.ReadAsArray().astype(numpy.float32)
    nodata = result.GetNoDataValue()
    if nodata is not None:
        values[values == numpy.float32(nodata)] = numpy.nan
    return {"data": base64.b64encode(values.tobytes()).decode("ascii")}


OPERATIONS = {"dem": dem, "read": read, "warp": warp, "suggestedWarpOutput": suggested_warp_output, "info": info, "transform": transform, "pixelToLonLat": pixel_to_lon_lat, "numpyStatistics": numpy_statistics, "rasterize": rasterize}

for line in sys.stdin:
    request = json.loads(line)
    try:
        answer = {"ok": OPERATIONS[request["op"]](request)}
    except Exception as e:  # the caller throws it, with GDAL's message
        answer = {"error": f"{request['op']}: {e}"}
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()
