# Shared by containers/*/build.sh (sourced, not run): the container engine and the registry-free base image.
#
#   . "$ROOT/containers/common.sh"
#   pick_engine                        # sets ENGINE (docker|podman) and ENGINE_ARGS
#   ensure_base_image TAG PULL_FROM    # makes TAG from debootstrap (or pulls PULL_FROM when it is set)
#   sources_digest ROOT FILE...        # the source-hash label the providers check
#
# Environment: CONTAINER_ENGINE (docker|podman; default: podman if installed, else docker), PODMAN_RUNTIME
# (default runc), DEBIAN_MIRROR, DEBOOTSTRAP_CACHE (a dir kept between builds for the rootfs tarball).

pick_engine() {
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
}

image_exists() { "$ENGINE" image inspect "$1" >/dev/null 2>&1; }

# ensure_base_image TAG [PULL_FROM]: a Debian bookworm minbase image with python3, tagged TAG. Without
# PULL_FROM it is made by `debootstrap --variant=minbase --include=python3 bookworm` (root, a Debian mirror)
# and imported with `<engine> import`, so no registry is needed.
ensure_base_image() {
    local base=$1 pull_from=${2:-}
    image_exists "$base" && return 0
    if [[ -n "$pull_from" ]]; then
        echo "build.sh: pulling $pull_from as $base"
        "$ENGINE" pull "$pull_from"
        "$ENGINE" tag "$pull_from" "$base"
        return 0
    fi
    command -v debootstrap >/dev/null 2>&1 || {
        echo "build.sh: $base is missing and debootstrap is not installed (apt-get install debootstrap)" >&2; exit 2; }
    [[ $(id -u) == 0 ]] || { echo "build.sh: debootstrap needs root to make $base" >&2; exit 2; }
    local cache=${DEBOOTSTRAP_CACHE:-} mirror=${DEBIAN_MIRROR:-}  # empty mirror: debootstrap's default
    local tarball=${cache:+$cache/bookworm-minbase-python3.tar}
    if [[ -n "$tarball" && -s "$tarball" ]]; then
        echo "build.sh: importing cached rootfs $tarball as $base"
        "$ENGINE" import --change 'CMD ["/usr/bin/python3"]' "$tarball" "$base"
        return 0
    fi
    local rootfs
    rootfs=$(mktemp -d /var/tmp/rla-rootfs.XXXXXX)
    echo "build.sh: debootstrap --variant=minbase --include=python3 bookworm (a few minutes)"
    if ! debootstrap --variant=minbase --include=python3 bookworm "$rootfs" ${mirror:+"$mirror"} >/dev/null; then
        rm -rf "$rootfs"; echo "build.sh: debootstrap failed" >&2; exit 1
    fi
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
    if [[ -n "$tarball" ]]; then
        mkdir -p "$cache"
        tar -C "$rootfs" -cf "$tarball" .
        "$ENGINE" import --change 'CMD ["/usr/bin/python3"]' "$tarball" "$base"
    else
        tar -C "$rootfs" -c . | "$ENGINE" import --change 'CMD ["/usr/bin/python3"]' - "$base"
    fi
    rm -rf "$rootfs"
}

# sources_digest ROOT FILE...: the digest an image carries of the sources it was built from (sha256 over
# "path\nsha256(content)\n" per file, in the order given); the providers' source_hash() computes the same.
sources_digest() {
    local root=$1 f
    shift
    (cd "$root" && for f in "$@"; do printf '%s\n%s\n' "$f" "$(sha256sum < "$f" | cut -d' ' -f1)"; done) \
        | sha256sum | cut -d' ' -f1
}
