#!/usr/bin/env bash
# Start a Docker-API socket on a machine without a Docker daemon: podman's `system service`.
#
# Prints one line, the DOCKER_HOST to use (e.g. `export DOCKER_HOST=$(scripts/start-docker-api.sh)`).
# Idempotent: when the socket already answers, it only prints it. With a real Docker daemon running
# (or DOCKER_HOST already answering) it prints that instead and starts nothing.
#
# Podman on these machines needs runtime runc (crun fails) and explicit ulimits (DESIGN.md); they are
# set in a containers.conf used only by this service (CONTAINERS_CONF), so nothing system-wide changes.
#
# Environment: RLA_DOCKER_API_DIR (where the socket, config and log go; default /run/rla-podman, or
# $XDG_RUNTIME_DIR/rla-podman when not root), RLA_PODMAN_RUNTIME (default runc).
set -euo pipefail

ping_socket() {  # ping_socket unix:///path -> 0 when a Docker API answers there
    python3 - "$1" <<'PY' 2>/dev/null
import socket, sys
path = sys.argv[1].removeprefix("unix://")
s = socket.socket(socket.AF_UNIX)
s.settimeout(3)
s.connect(path)
s.sendall(b"GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n")
data = b""
while chunk := s.recv(4096):
    data += chunk
sys.exit(0 if data.startswith(b"HTTP/1.") and b" 200 " in data.split(b"\r\n", 1)[0] else 1)
PY
}

if [[ -n "${DOCKER_HOST:-}" && "$DOCKER_HOST" == unix://* ]] && ping_socket "$DOCKER_HOST"; then
    echo "$DOCKER_HOST"; exit 0
fi
if [[ -S /var/run/docker.sock ]] && ping_socket unix:///var/run/docker.sock; then
    echo "unix:///var/run/docker.sock"; exit 0
fi

command -v podman >/dev/null 2>&1 || {
    echo "start-docker-api.sh: no Docker daemon and podman is not installed (apt-get install -y podman runc)" >&2; exit 2; }

if [[ $(id -u) == 0 ]]; then DEFAULT_DIR=/run/rla-podman; else DEFAULT_DIR=${XDG_RUNTIME_DIR:-/tmp}/rla-podman; fi
DIR=${RLA_DOCKER_API_DIR:-$DEFAULT_DIR}
SOCK="$DIR/podman.sock"
URL="unix://$SOCK"
mkdir -p "$DIR"
if [[ -S "$SOCK" ]] && ping_socket "$URL"; then
    echo "$URL"; exit 0
fi

RUNTIME=${RLA_PODMAN_RUNTIME:-runc}
command -v "$RUNTIME" >/dev/null 2>&1 || {
    echo "start-docker-api.sh: OCI runtime $RUNTIME is not installed (apt-get install -y $RUNTIME)" >&2; exit 2; }
cat > "$DIR/containers.conf" <<CONF
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=1000:1000"]

[engine]
runtime = "$RUNTIME"
CONF

rm -f "$SOCK"
# From / : the service (and conmon under it) must not keep a working directory that may be deleted, such as
# a CI checkout; a service whose cwd is gone still answers pings but cannot attach to any container.
(cd / && CONTAINERS_CONF="$DIR/containers.conf" exec nohup podman --runtime "$RUNTIME" system service --time=0 "$URL" \
    >"$DIR/service.log" 2>&1 </dev/null) &
echo $! > "$DIR/service.pid"
for _ in $(seq 1 100); do
    if [[ -S "$SOCK" ]] && ping_socket "$URL"; then
        echo "$URL"; exit 0
    fi
    if ! kill -0 "$(cat "$DIR/service.pid")" 2>/dev/null; then break; fi
    sleep 0.1
done
echo "start-docker-api.sh: podman system service did not answer on $SOCK; its log:" >&2
tail -n 20 "$DIR/service.log" >&2 || true
exit 1
