#!/usr/bin/env bash
# Makes the Debian bookworm base the project's images start FROM, localhost/bookworm-min:latest,
# when podman's store lacks it: nothing can be pulled, so it is made from Debian's archive with
# debootstrap (about a minute, once; the root file system is kept in TESSERA_IMAGE_BASE_DIR,
# /var/tmp/tessera-image-base) and imported. Used by build.sh (the decoder's image) and
# infra/containers/runtime.sh (the local Containers runtime). Run as root.
set -euo pipefail

BASE=localhost/bookworm-min:latest
BASE_DIR=${TESSERA_IMAGE_BASE_DIR:-/var/tmp/tessera-image-base}

podman image exists "$BASE" && exit 0
if [ ! -e "$BASE_DIR/.complete" ]; then
  echo "base.sh: debootstrap bookworm into $BASE_DIR (about a minute, once)" >&2
  rm -rf "$BASE_DIR"
  debootstrap --variant=minbase bookworm "$BASE_DIR" http://deb.debian.org/debian >/dev/null
  # Nothing in the images reads documentation, manuals, translations or apt's downloads.
  rm -rf "$BASE_DIR"/usr/share/{doc,man,info,locale}/* "$BASE_DIR"/var/cache/apt/* "$BASE_DIR"/var/lib/apt/lists/*
  touch "$BASE_DIR/.complete"
fi
tar -C "$BASE_DIR" --exclude=./.complete -c . | podman import - "$BASE" >/dev/null
