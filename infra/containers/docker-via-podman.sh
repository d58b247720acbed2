#!/usr/bin/env bash
# The Docker CLI as wrangler calls it (WRANGLER_DOCKER_BIN), answered by podman: `wrangler dev`
# runs `docker info`, `docker build`, `docker pull` and `docker --host H info --format
# {{json .SecurityOptions}}` (podman's info has no such field; wrangler takes the error as "no
# privileges for FUSE", what a rootful engine on Linux gets anyway). What differs:
# - build: wrangler passes `--provenance=false` (BuildKit's), which podman build refuses, and the
#   Dockerfile on stdin (below). The build runs with the host's network (RUN steps that fetch
#   from Debian's archive), never pulls a base, and makes Docker's image format (OCI's has no
#   HEALTHCHECK).
# - pull: an image already in podman's store (a local build, the egress stand-in) is not pulled:
#   no registry is reachable for it, and podman would try one.
# CONTAINERS_CONF (runtime.sh sets it) gives podman runc and the resource limits that work here.
set -euo pipefail

podman=(podman)
if [ "${1:-}" = --host ]; then
  podman+=(--url "$2")
  shift 2
fi

# podman build takes the rest of wrangler's arguments as Docker's CLI does, but for the
# Dockerfile on stdin (`-f -`): podman opens /dev/stdin, which fails on the socket Node gives a
# child as stdin, so it is written to a file first.
build() {
  local args=() arg dockerfile status=0
  dockerfile=$(mktemp)
  for arg in "$@"; do
    case "$arg" in
      --provenance=*) ;;
      -) cat >"$dockerfile" && args+=("$dockerfile") ;;
      *) args+=("$arg") ;;
    esac
  done
  "${podman[@]}" build --network host --pull=never --format docker "${args[@]}" || status=$?
  rm -f "$dockerfile"
  return $status
}

case "${1:-}" in
  build)
    shift
    build "$@"
    ;;
  pull)
    "${podman[@]}" image exists "$2" || exec "${podman[@]}" "$@"
    ;;
  *) exec "${podman[@]}" "$@" ;;
esac
