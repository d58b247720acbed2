#!/usr/bin/env bash
# `wrangler dev --env containers` with the decoder as a Cloudflare Container, on podman
# (runtime.sh sets the machine up): arguments go to wrangler dev. Ctrl-C or SIGTERM stops it,
# then the containers it started are removed, which wrangler does not do fully with podman: it
# tells an app container from the networking sidecar whose network it joins by the network mode
# in Docker's container list, which podman's list lacks, so it removes both at once and podman
# refuses the sidecar while its app container exists; stopped by a signal, it removes none.
set -euo pipefail
cd "$(dirname "$0")/../.."
eval "$(bash infra/containers/runtime.sh)"
# wrangler builds the decoder's image from the context build.sh stages.
bash infra/image/build.sh --context-only >/dev/null
export WRANGLER_SEND_METRICS=${WRANGLER_SEND_METRICS:-false}

# workerd labels each run's containers with a session of its own.
sessions() {
  podman ps --all --filter label=dev.workerd.session --format '{{index .Labels "dev.workerd.session"}}' | sort -u
}

remove_new_sessions() {
  local session
  for session in $(comm -13 <(echo "$before") <(sessions)); do
    # --depend removes the app container before the sidecar it joins. Without systemd, podman
    # says it could not remove the timer of the image's HEALTHCHECK, which it never made.
    podman ps --all --quiet --filter "label=dev.workerd.session=$session" |
      xargs -r podman rm --force --depend --time 5 2>&1 >/dev/null | grep -v 'healthcheck: unable to get systemd connection' >&2 || true
  done
}

before=$(sessions)
# Its own process group, so that stopping it stops npx, wrangler and workerd together.
setsid npx wrangler dev --env containers "$@" &
dev=$!
trap 'kill -TERM -- -$dev 2>/dev/null || true' INT TERM
wait $dev || wait $dev || true
remove_new_sessions
