#!/usr/bin/env bash
# Installs the system packages the local stack needs (single-node Ceph RGW for S3, GDAL for the
# sample COGs, curl for readiness probes, Chromium for the viewer's browser test) on Debian
# bookworm. Idempotent: a package is installed only when its binary is missing and dpkg does not
# list it as installed, and `apt-get update` runs at most once, only when something must be
# installed. Run as root (CI) or with sudo available.
set -euo pipefail

# package -> a binary it provides (the check that matters: scripts call these binaries)
declare -A BIN=(
  [radosgw]=radosgw
  [ceph-mon]=ceph-mon
  [ceph-osd]=ceph-osd
  [gdal-bin]=gdal_translate
  [curl]=curl
  [chromium]=chromium
)

missing=()
for pkg in radosgw ceph-mon ceph-osd gdal-bin curl chromium; do
  # The binary on PATH is what our scripts need; dpkg -s is the fallback for a package that is
  # installed but whose binary is not on this shell's PATH (e.g. /usr/sbin for a non-root user).
  command -v "${BIN[$pkg]}" >/dev/null 2>&1 && continue
  dpkg -s "$pkg" 2>/dev/null | grep -q '^Status: install ok installed' && continue
  missing+=("$pkg")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all present (radosgw ceph-mon ceph-osd gdal-bin curl chromium)"
  exit 0
fi

SUDO=""
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "install-deps: need root to install: ${missing[*]}" >&2; exit 1; }
  SUDO="sudo"
fi

echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"

# The packages' postinst may try to start ceph units under systemd; on CI there is none, and
# our scripts run their own daemons from a private state dir, so nothing else is needed here.
for pkg in "${missing[@]}"; do
  command -v "${BIN[$pkg]}" >/dev/null 2>&1 || { echo "install-deps: $pkg installed but ${BIN[$pkg]} not found" >&2; exit 1; }
done
echo "install-deps: done"
