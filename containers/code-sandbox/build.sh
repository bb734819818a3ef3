#!/usr/bin/env bash
# Build the rla code-sandbox image (default tag rla-code-sandbox:latest) with docker or podman.
#
# Needs no registry: when the base image (default rla-bookworm-python:latest) is missing it is made
# with `debootstrap --variant=minbase --include=python3 bookworm` (root, Debian mirror reachable)
# and imported with `<engine> import`. Set RLA_SANDBOX_PULL_BASE=debian:bookworm-slim to pull a base
# from a registry instead (python3 is then expected in it).
#
# Environment: CONTAINER_ENGINE (docker|podman; default: podman if installed, else docker),
# RLA_SANDBOX_IMAGE (tag), RLA_SANDBOX_BASE (base tag), DEBIAN_MIRROR, DEBOOTSTRAP_CACHE (a dir
# kept between builds for the rootfs tarball).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
IMAGE=${RLA_SANDBOX_IMAGE:-rla-code-sandbox:latest}
BASE=${RLA_SANDBOX_BASE:-rla-bookworm-python:latest}
# shellcheck source=../common.sh
. "$ROOT/containers/common.sh"
pick_engine

start=$(date +%s)
ensure_base_image "$BASE" "${RLA_SANDBOX_PULL_BASE:-}"
base_done=$(date +%s)

# Stage the context: the Dockerfile and the sandbox sources the image must carry.
CONTEXT=$(mktemp -d /var/tmp/rla-sandbox-context.XXXXXX)
trap 'rm -rf "$CONTEXT"' EXIT
cp "$HERE/Dockerfile" "$CONTEXT/"
FILES=$(cd "$ROOT" && { echo rla_envs/core/errors.py; echo rla_envs/core/closing.py; ls rla_envs/code/sandbox/*.py; } | LC_ALL=C sort)
for f in $FILES; do
    mkdir -p "$CONTEXT/rla/$(dirname "$f")"
    cp "$ROOT/$f" "$CONTEXT/rla/$f"
done
# Same digest as rla_envs.code.sandbox.docker_image.source_hash(): the sandbox checks that the image
# carries the sandbox code the host runs.
# shellcheck disable=SC2086  # FILES: one path per word
HASH=$(sources_digest "$ROOT" $FILES)

"$ENGINE" build "${ENGINE_ARGS[@]}" --network none --build-arg "BASE=$BASE" --build-arg "SOURCE_HASH=$HASH" \
    -t "$IMAGE" "$CONTEXT"
end=$(date +%s)
echo "build.sh: built $IMAGE from $BASE with $ENGINE (source hash ${HASH:0:12}; base $((base_done - start)) s, image $((end - base_done)) s)"
