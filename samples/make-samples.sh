#!/usr/bin/env bash
# Rebuilds the bundled sample COGs: the IIIF validator test pattern (CC0, see README.md) and a
# small georeferenced map drawn here.
# Outputs are committed; rerun only when the recipe changes. Needs gdal-bin (GDAL >= 3.1 for
# the COG driver; made with 3.6.2). Usage: samples/make-samples.sh [path/to/source.png]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=${1:-$HERE/../../shared/fixtures/iiif-test-pattern/67352ccc-d1b0-11e1-89ae-279075081939.png}
[ -f "$SRC" ] || { echo "make-samples: source PNG not found: $SRC" >&2; exit 1; }

# Keep RGB only: an alpha band would change JPEG compression and every pixel check.
BANDS=(-b 1 -b 2 -b 3)
# 256 px tiles on a 1000 px image give partial edge tiles (exercised on purpose);
# OVERVIEWS=AUTO halves until the level fits one tile: 500 and 250 px wide overviews.
COG=(-of COG -co BLOCKSIZE=256 -co OVERVIEWS=AUTO -co RESAMPLING=AVERAGE)

gdal_translate -q "${BANDS[@]}" "${COG[@]}" -co COMPRESS=JPEG -co QUALITY=90 \
  "$SRC" "$HERE/test-pattern.tif"
# Lossless twin for exact pixel comparisons.
gdal_translate -q "${BANDS[@]}" "${COG[@]}" -co COMPRESS=DEFLATE -co PREDICTOR=2 \
  "$SRC" "$HERE/test-pattern-deflate.tif"
# The source itself, as an RGB PNG, for reference pixels in tests.
gdal_translate -q "${BANDS[@]}" -of PNG "$SRC" "$HERE/test-pattern.png"
rm -f "$HERE"/*.aux.xml

# A small map: RGB in UTM zone 33N (EPSG:32633), 1024×1024 at 20 m, its four 512 px quadrants flat
# colours (north-west red, north-east green, south-west blue, south-east yellow) and a sharp
# feature, a white 64 px square in the north-east quadrant (x 896–960, y 64–128), each laid down
# by gdal_create, mosaicked in that order (later on top) and written as a lossless COG.
MAP=$(mktemp -d)
trap 'rm -rf "$MAP"' EXIT
X0=500000 Y0=5300000 PX=20
piece() { # name, column, row, size in pixels, R G B
  local x=$((X0 + $2 * PX)) y=$((Y0 - $3 * PX))
  gdal_create -q -of GTiff -ot Byte -outsize "$4" "$4" -bands 3 -burn "$5" -burn "$6" -burn "$7" \
    -a_srs EPSG:32633 -a_ullr "$x" "$y" $((x + $4 * PX)) $((y - $4 * PX)) "$MAP/$1.tif"
}
piece nw 0 0 512 200 30 30
piece ne 512 0 512 30 160 60
piece sw 0 512 512 30 70 200
piece se 512 512 512 240 200 30
piece square 896 64 64 255 255 255
gdalbuildvrt -q "$MAP/map.vrt" "$MAP"/{nw,ne,sw,se,square}.tif
gdal_translate -q "${COG[@]}" -co COMPRESS=DEFLATE -co PREDICTOR=2 "$MAP/map.vrt" "$HERE/utm-quadrants.tif"
rm -f "$HERE"/*.aux.xml

for f in test-pattern.tif test-pattern-deflate.tif; do
  ov=$(gdalinfo "$HERE/$f" | grep -m1 'Overviews:' | sed 's/^ *//')
  [ "$ov" = "Overviews: 500x500, 250x250" ] || { echo "make-samples: $f: unexpected '$ov'" >&2; exit 1; }
  gdalinfo "$HERE/$f" | grep -q 'LAYOUT=COG' || { echo "make-samples: $f is not a COG" >&2; exit 1; }
done
gdalinfo "$HERE/utm-quadrants.tif" | grep -q 'Overviews: 512x512, 256x256' || { echo "make-samples: utm-quadrants.tif: unexpected overviews" >&2; exit 1; }
ls -l "$HERE"/test-pattern* "$HERE"/utm-quadrants.tif
