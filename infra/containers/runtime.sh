#!/usr/bin/env bash
# Sets up what `wrangler dev` needs to run Cloudflare Containers on a machine with Debian's podman
# and no Docker engine or registry, then prints the variables to export (wrangler-dev.sh runs
# wrangler dev with them):
#   eval "$(bash infra/containers/runtime.sh)"
# - Debian's podman, runc, debootstrap and curl, when missing;
# - podman's Docker-compatible API service on TESSERA_PODMAN_SOCKET (/run/tessera/podman.sock),
#   with containers.conf beside this script, unless one already answers there;
# - the Debian base images start FROM (infra/image/base.sh), when missing, also tagged as the
#   Docker Hub image wrangler.toml builds the decoder on (image_vars BASE, debian:bookworm-slim):
#   a stand-in for it, as Docker Hub cannot be reached;
# - the stand-in for Cloudflare's networking sidecar (egress-stand-in.py), rebuilt when its files
#   change: its real image, cloudflare/proxy-everything, comes from Docker Hub.
# Idempotent. Run as root, as infra/image/build.sh (rootless podman needs subordinate ids).
set -euo pipefail
cd "$(dirname "$0")/../.."
HERE=$PWD/infra/containers
[ "$(id -u)" = 0 ] || { echo "runtime.sh: run as root" >&2; exit 1; }

SOCKET=${TESSERA_PODMAN_SOCKET:-/run/tessera/podman.sock}
STAND_IN=localhost/tessera-egress-stand-in:latest
HUB_BASE=docker.io/library/debian:bookworm-slim
export CONTAINERS_CONF=$HERE/containers.conf

# Each package is named after the binary it provides (runc and debootstrap are in /usr/sbin).
install_packages() {
  local missing=() package
  for package in podman runc debootstrap curl; do
    PATH=$PATH:/usr/sbin command -v "$package" >/dev/null || missing+=("$package")
  done
  [ ${#missing[@]} -eq 0 ] && return
  echo "runtime.sh: installing ${missing[*]}" >&2
  apt-get update >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >&2
}

# The service outlives this script (setsid, no time limit), like a Docker daemon would.
start_service() {
  curl -sf --unix-socket "$SOCKET" http://podman/_ping >/dev/null 2>&1 && return
  mkdir -p "$(dirname "$SOCKET")"
  rm -f "$SOCKET"
  setsid podman system service --time=0 "unix://$SOCKET" >"${SOCKET%.sock}.log" 2>&1 </dev/null &
  for _ in $(seq 50); do
    curl -sf --unix-socket "$SOCKET" http://podman/_ping >/dev/null 2>&1 && return
    sleep 0.1
  done
  echo "runtime.sh: podman's service did not answer on $SOCKET (see ${SOCKET%.sock}.log)" >&2
  exit 1
}

# Labelled with its files' digest, so a change to them rebuilds it and nothing else does; the
# build it replaces is removed, unless a container still uses it.
build_stand_in() {
  local digest previous
  digest=$(cat "$HERE/egress-stand-in.py" "$HERE/egress-stand-in.Containerfile" | sha256sum | cut -c1-16)
  [ "$(podman image inspect --format '{{index .Labels "tessera.digest"}}' "$STAND_IN" 2>/dev/null)" = "$digest" ] && return
  echo "runtime.sh: building $STAND_IN" >&2
  previous=$(podman image inspect --format '{{.Id}}' "$STAND_IN" 2>/dev/null || true)
  podman build --network host --pull=never --label "tessera.digest=$digest" \
    -f "$HERE/egress-stand-in.Containerfile" -t "$STAND_IN" "$HERE" >&2
  [ -z "$previous" ] || podman rmi "$previous" >/dev/null 2>&1 || true
}

install_packages
start_service
bash infra/image/base.sh
podman image exists "$HUB_BASE" || podman tag localhost/bookworm-min:latest "$HUB_BASE"
build_stand_in

cat <<EOF
export CONTAINERS_CONF=$CONTAINERS_CONF
export WRANGLER_DOCKER_BIN=$HERE/docker-via-podman.sh
export WRANGLER_DOCKER_HOST=unix://$SOCKET
export MINIFLARE_CONTAINER_EGRESS_IMAGE=$STAND_IN
EOF
