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
MIRROR=${DEBIAN_MIRROR:-}  # empty: debootstrap's own default Debian mirror

ENGINE=${CONTAINER_ENGINE:-}
if [[ -z "$ENGINE" ]]; then
    if command -v podman >/dev/null 2>&1; then ENGINE=podman
    elif command -v docker >/dev/null 2>&1; then ENGINE=docker
    else echo "build.sh: neither podman nor docker is installed" >&2; exit 2; fi
fi
ENGINE_ARGS=()
if [[ "$(basename "$ENGINE")" == podman ]]; then
    # crun fails on these machines; the default ulimits are above what they allow (DESIGN.md).
    ENGINE_ARGS=(--runtime "${PODMAN_RUNTIME:-runc}")
fi

image_exists() { "$ENGINE" image inspect "$1" >/dev/null 2>&1; }

start=$(date +%s)
if ! image_exists "$BASE"; then
    if [[ -n "${RLA_SANDBOX_PULL_BASE:-}" ]]; then
        echo "build.sh: pulling ${RLA_SANDBOX_PULL_BASE} as $BASE"
        "$ENGINE" pull "$RLA_SANDBOX_PULL_BASE"
        "$ENGINE" tag "$RLA_SANDBOX_PULL_BASE" "$BASE"
    else
        command -v debootstrap >/dev/null 2>&1 || { echo "build.sh: $BASE is missing and debootstrap is not installed (apt-get install debootstrap)" >&2; exit 2; }
        [[ $(id -u) == 0 ]] || { echo "build.sh: debootstrap needs root to make $BASE" >&2; exit 2; }
        CACHE=${DEBOOTSTRAP_CACHE:-}
        TARBALL=${CACHE:+$CACHE/bookworm-minbase-python3.tar}
        if [[ -n "$TARBALL" && -s "$TARBALL" ]]; then
            echo "build.sh: importing cached rootfs $TARBALL as $BASE"
            "$ENGINE" import --change 'CMD ["/usr/bin/python3"]' "$TARBALL" "$BASE"
        else
            ROOTFS=$(mktemp -d /var/tmp/rla-rootfs.XXXXXX)
            trap 'rm -rf "$ROOTFS"' EXIT
            echo "build.sh: debootstrap --variant=minbase --include=python3 bookworm (a few minutes)"
            debootstrap --variant=minbase --include=python3 bookworm "$ROOTFS" ${MIRROR:+"$MIRROR"} >/dev/null
            rm -rf "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/lib/apt/lists/*
            if [[ -n "$TARBALL" ]]; then
                mkdir -p "$CACHE"
                tar -C "$ROOTFS" -cf "$TARBALL" .
                "$ENGINE" import --change 'CMD ["/usr/bin/python3"]' "$TARBALL" "$BASE"
            else
                tar -C "$ROOTFS" -c . | "$ENGINE" import --change 'CMD ["/usr/bin/python3"]' - "$BASE"
            fi
            rm -rf "$ROOTFS"
            trap - EXIT
        fi
    fi
fi
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
# Same digest as rla_envs.code.sandbox.docker.source_hash(): the sandbox checks that the image
# carries the sandbox code the host runs.
HASH=$(cd "$ROOT" && for f in $FILES; do printf '%s\n%s\n' "$f" "$(sha256sum < "$f" | cut -d' ' -f1)"; done | sha256sum | cut -d' ' -f1)

"$ENGINE" build "${ENGINE_ARGS[@]}" --network none --build-arg "BASE=$BASE" --build-arg "SOURCE_HASH=$HASH" \
    -t "$IMAGE" "$CONTEXT"
end=$(date +%s)
echo "build.sh: built $IMAGE from $BASE with $ENGINE (source hash ${HASH:0:12}; base $((base_done - start)) s, image $((end - base_done)) s)"
