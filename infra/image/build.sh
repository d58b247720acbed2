#!/usr/bin/env bash
# Builds the decoder's OCI image with Debian's podman (no Docker engine, no image registry
# needed): on the Debian bookworm base base.sh makes (once), the Containerfile beside this script
# on a staged context: the pinned Node, the built decoder and the sample images.
#
#   TESSERA_IMAGE           the image's name                   (localhost/tessera-decoder:latest)
#   TESSERA_IMAGE_BASE_DIR  where the base's root file system is kept   (base.sh)
#
# `build.sh --context-only` stages the context in dist/image-context and stops there: wrangler
# builds the image from it for Cloudflare Containers (npm run deploy:containers).
#
# Run as root (podman's rootless mode needs subordinate ids this script does not set up).
# Prints the image's name and size last.
set -euo pipefail
cd "$(dirname "$0")/../.."

IMAGE=${TESSERA_IMAGE:-localhost/tessera-decoder:latest}
# What works on these machines: runc (crun refuses hybrid cgroups), explicit limits (the runtime
# may not raise its own), the host's network (for RUN steps that fetch).
PODMAN=(podman --runtime runc)
LIMITS=(--ulimit nofile=20000:20000 --ulimit nproc=1024:1024)

# The context holds only what the image copies (hard links, so on the checkout's file system).
CONTEXT=dist/image-context
stage_context() {
  npm run --silent build:decoder
  rm -rf "$CONTEXT" && mkdir -p "$CONTEXT"
  cp -al dist/decoder "$CONTEXT/decoder"
  cp -al samples "$CONTEXT/samples"
  # The Node the lockfile pins (the `node` package), without its debugging symbols (~18 MB);
  # native addons link against its dynamic symbols, which strip keeps.
  cp -L node_modules/.bin/node "$CONTEXT/node"
  strip "$CONTEXT/node"
  # Only the TurboJPEG binding's build for linux-x64, what the Node copied in runs on here.
  find "$CONTEXT/decoder/node_modules/@julusian/jpeg-turbo/prebuilds" -mindepth 1 -maxdepth 1 ! -name 'jpeg-turbo-linux-x64' -exec rm -rf {} +
}

if [ "${1:-}" = "--context-only" ]; then
  stage_context
  echo "$CONTEXT"
  exit 0
fi

bash infra/image/base.sh

stage_context
trap 'rm -rf "$CONTEXT"' EXIT

previous=$(podman image inspect --format '{{.Id}}' "$IMAGE" 2>/dev/null || true)
# The docker format, because OCI's has no HEALTHCHECK.
"${PODMAN[@]}" build "${LIMITS[@]}" --network host --format docker --pull=never \
  -f infra/image/Containerfile -t "$IMAGE" "$CONTEXT" >&2
# The build it replaced, unless a container still uses it.
if [ -n "$previous" ] && [ "$previous" != "$(podman image inspect --format '{{.Id}}' "$IMAGE")" ]; then
  podman rmi "$previous" >/dev/null 2>&1 || true
fi

echo "$IMAGE $(podman image inspect --format '{{.Size}}' "$IMAGE") bytes"
