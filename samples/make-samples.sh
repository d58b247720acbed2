#!/usr/bin/env bash
# Rebuilds the bundled sample COGs from the IIIF validator test pattern (CC0, see README.md).
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

for f in test-pattern.tif test-pattern-deflate.tif; do
  ov=$(gdalinfo "$HERE/$f" | grep -m1 'Overviews:' | sed 's/^ *//')
  [ "$ov" = "Overviews: 500x500, 250x250" ] || { echo "make-samples: $f: unexpected '$ov'" >&2; exit 1; }
  gdalinfo "$HERE/$f" | grep -q 'LAYOUT=COG' || { echo "make-samples: $f is not a COG" >&2; exit 1; }
done
ls -l "$HERE"/test-pattern*
