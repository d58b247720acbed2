#!/usr/bin/env bash
# Installs the system packages the local stack needs (single-node Ceph RGW for S3, GDAL for the
# sample COGs, GDAL's Python bindings for the map tests' references and bench:maps, curl for
# readiness probes, Chromium for the viewer's browser test; podman, buildah, runc, uidmap,
# fuse-overlayfs, debootstrap and binutils' strip to build and run the decoder's OCI image;
# systemd-analyze to check the decoder's unit) on Debian bookworm. Idempotent: a package is
# installed only when its binary is missing and dpkg does not list it as installed, and
# `apt-get update` runs at most once, only when something must be installed. Run as root (CI)
# or with sudo available.
set -euo pipefail

# package -> a binary it provides, or the absolute path of a file it installs (the check that
# matters: scripts call these binaries; the map tests run Debian's /usr/bin/python3 with osgeo)
declare -A BIN=(
  [radosgw]=radosgw
  [ceph-mon]=ceph-mon
  [ceph-osd]=ceph-osd
  [gdal-bin]=gdal_translate
  [python3-gdal]=/usr/lib/python3/dist-packages/osgeo/gdal.py
  [curl]=curl
  [chromium]=chromium
  [podman]=podman
  [buildah]=buildah
  [runc]=runc
  [uidmap]=newuidmap
  [fuse-overlayfs]=fuse-overlayfs
  [debootstrap]=debootstrap
  [binutils]=strip
  [systemd]=systemd-analyze
)
PACKAGES=(radosgw ceph-mon ceph-osd gdal-bin python3-gdal curl chromium podman buildah runc uidmap fuse-overlayfs debootstrap binutils systemd)

provided() {
  case "$1" in
    /*) [ -e "$1" ] ;;
    *) command -v "$1" >/dev/null 2>&1 ;;
  esac
}

missing=()
for pkg in "${PACKAGES[@]}"; do
  # What our scripts use is what counts; dpkg -s is the fallback for a package that is installed
  # but whose binary is not on this shell's PATH (e.g. /usr/sbin for a non-root user).
  provided "${BIN[$pkg]}" && continue
  dpkg -s "$pkg" 2>/dev/null | grep -q '^Status: install ok installed' && continue
  missing+=("$pkg")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all present (${PACKAGES[*]})"
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
  provided "${BIN[$pkg]}" || { echo "install-deps: $pkg installed but ${BIN[$pkg]} not found" >&2; exit 1; }
done
echo "install-deps: done"
