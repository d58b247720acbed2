#!/usr/bin/env bash
# `wrangler dev --env containers` with the decoder as a Cloudflare Container, on podman
# (runtime.sh sets the machine up): arguments go to wrangler dev. Ctrl-C or SIGTERM stops it,
# then the containers it started are removed: wrangler removes a session's containers all at
# once, and podman refuses to remove the networking sidecar while the app container that joins
# its network exists, so without this the sidecars stay.
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
    # --depend removes the app container before the sidecar it joins.
    podman ps --all --quiet --filter "label=dev.workerd.session=$session" | xargs -r podman rm --force --depend --time 5 >/dev/null
  done
}

before=$(sessions)
# Its own process group, so that stopping it stops npx, wrangler and workerd together.
setsid npx wrangler dev --env containers "$@" &
dev=$!
trap 'kill -TERM -- -$dev 2>/dev/null || true' INT TERM
wait $dev || wait $dev || true
remove_new_sessions
