#!/usr/bin/env bash
# The Docker CLI as wrangler calls it (WRANGLER_DOCKER_BIN), answered by podman: `wrangler dev`
# runs `docker info`, `docker build`, `docker pull` and `docker --host H info --format
# {{json .SecurityOptions}}`; everything else goes to podman unchanged. What differs:
# - build: wrangler passes `--load` and `--provenance=false` (BuildKit's) and the Dockerfile on
#   stdin (`-f -`); podman build knows neither flag and wants a file. The build runs with the
#   host's network (RUN steps that fetch from Debian's archive), never pulls a base, and makes
#   Docker's image format (OCI's has no HEALTHCHECK).
# - pull: an image already in podman's store (a local build, the egress stand-in) is not pulled:
#   no registry is reachable for it, and podman would try one.
# - info --format {{json .SecurityOptions}}: podman's info has other fields; wrangler only looks
#   for "rootless" in it.
# CONTAINERS_CONF (runtime.sh sets it) gives podman runc and the resource limits that work here.
set -euo pipefail

podman=(podman)
if [ "${1:-}" = --host ]; then
  podman+=(--url "$2")
  shift 2
fi

dockerfile=""
trap 'rm -f "$dockerfile"' EXIT

build() {
  local args=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --load | --provenance=*) ;;
      -f)
        shift
        if [ "$1" = - ]; then
          dockerfile=$(mktemp)
          cat >"$dockerfile"
          args+=(-f "$dockerfile")
        else
          args+=(-f "$1")
        fi
        ;;
      *) args+=("$1") ;;
    esac
    shift
  done
  "${podman[@]}" build --network host --pull=never --format docker "${args[@]}"
}

case "${1:-}" in
  build)
    shift
    build "$@"
    ;;
  pull)
    "${podman[@]}" image exists "$2" || exec "${podman[@]}" "$@"
    ;;
  info)
    if [ "$*" = "info --format {{json .SecurityOptions}}" ]; then
      [ "$("${podman[@]}" info --format '{{.Host.Security.Rootless}}')" = true ] && echo '["name=rootless"]' || echo '[]'
    else
      exec "${podman[@]}" "$@"
    fi
    ;;
  *) exec "${podman[@]}" "$@" ;;
esac
