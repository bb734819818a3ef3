#!/usr/bin/env bash
# Build the rla desktop image (default tag rla-desktop:latest) with docker or podman.
#
# Needs no registry: when the base image (default rla-bookworm-python:latest, shared with the code sandbox)
# is missing it is made with `debootstrap --variant=minbase --include=python3 bookworm` (root, Debian mirror
# reachable) and imported with `<engine> import`, exactly as containers/code-sandbox/build.sh does (same tag,
# same cached tarball). Set RLA_DESKTOP_PULL_BASE=debian:bookworm to pull a base from a registry instead.
# The install step (scripts/install-desktop.sh: apt packages and the runtime venv) needs the Debian mirror
# and PyPI; it is one cached layer, rebuilt only when that script changes. The controller package
# (rla_envs/desktop/controller) is the last layer; the image carries the digest of its sources in the label
# rla.desktop.source-hash, which rla_envs.desktop.providers.docker checks before it starts a container.
#
# Environment: CONTAINER_ENGINE (docker|podman; default: podman if installed, else docker),
# RLA_DESKTOP_IMAGE (tag), RLA_DESKTOP_BASE (base tag), RLA_DESKTOP_BUILD_NETWORK (network of the build's
# RUN steps, e.g. host; default: the engine's), RLA_DESKTOP_BUILD_CA (CA bundle pip uses in the build;
# default /etc/ssl/certs/ca-certificates.crt, empty: pip's own), DEBIAN_MIRROR, DEBOOTSTRAP_CACHE (a dir kept between builds
# for the rootfs tarball).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
IMAGE=${RLA_DESKTOP_IMAGE:-rla-desktop:latest}
BASE=${RLA_DESKTOP_BASE:-rla-bookworm-python:latest}
CONTROLLER=rla_envs/desktop/controller
INSTALL_SCRIPT=scripts/install-desktop.sh

# shellcheck source=../common.sh
. "$ROOT/containers/common.sh"
pick_engine
if [[ "$(basename "$ENGINE")" == podman ]]; then
    ENGINE_ARGS+=(--ulimit nofile=20000:20000 --ulimit nproc=1000:1000)
fi
if [[ -n "${RLA_DESKTOP_BUILD_NETWORK:-}" ]]; then
    ENGINE_ARGS+=(--network "$RLA_DESKTOP_BUILD_NETWORK")
fi

[[ -d "$ROOT/$CONTROLLER" ]] || { echo "build.sh: the controller package $ROOT/$CONTROLLER is missing" >&2; exit 2; }
[[ -f "$ROOT/$INSTALL_SCRIPT" ]] || { echo "build.sh: $ROOT/$INSTALL_SCRIPT is missing" >&2; exit 2; }

start=$(date +%s)
ensure_base_image "$BASE" "${RLA_DESKTOP_PULL_BASE:-}"
base_done=$(date +%s)

# Stage the context: the Dockerfile, the install script and the controller package (no __pycache__).
CONTEXT=$(mktemp -d /var/tmp/rla-desktop-context.XXXXXX)
trap 'rm -rf "$CONTEXT"' EXIT
cp "$HERE/Dockerfile" "$CONTEXT/"
cp "$ROOT/$INSTALL_SCRIPT" "$CONTEXT/install-desktop.sh"
# pip in the build trusts the CAs this host trusts (a TLS-inspecting proxy's among them); empty: pip's own.
BUILD_CA=${RLA_DESKTOP_BUILD_CA-/etc/ssl/certs/ca-certificates.crt}
if [[ -n "$BUILD_CA" && -s "$BUILD_CA" ]]; then cp "$BUILD_CA" "$CONTEXT/build-ca.pem"; else : > "$CONTEXT/build-ca.pem"; fi
FILES=$(cd "$ROOT" && find "$CONTROLLER" -type f ! -path '*/__pycache__/*' ! -name '*.pyc' | LC_ALL=C sort)
[[ -n "$FILES" ]] || { echo "build.sh: $ROOT/$CONTROLLER holds no files" >&2; exit 2; }
for f in $FILES; do
    mkdir -p "$CONTEXT/controller/$(dirname "${f#"$CONTROLLER"/}")"
    cp "$ROOT/$f" "$CONTEXT/controller/${f#"$CONTROLLER"/}"
done
# Same digest as rla_envs.desktop.providers.docker.source_hash(): the provider checks that the image
# carries the controller this checkout runs.
# shellcheck disable=SC2086  # FILES: one path per word
HASH=$(sources_digest "$ROOT" $FILES)

"$ENGINE" build "${ENGINE_ARGS[@]}" --build-arg "BASE=$BASE" --build-arg "SOURCE_HASH=$HASH" -t "$IMAGE" "$CONTEXT"
end=$(date +%s)
echo "build.sh: built $IMAGE from $BASE with $ENGINE (controller hash ${HASH:0:12}; base $((base_done - start)) s, image $((end - base_done)) s)"
