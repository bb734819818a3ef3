"""What both docker backends (the code sandbox, the desktop provider) need of a Docker-API socket.

:func:`connect` gives a client that answered a ping, or one clear error saying how to start a socket;
:class:`ImageKind` says which labels an rla image carries and :func:`check_image` refuses an image that
is missing, of another protocol, or built from other sources than this checkout's (the digest of
:func:`sources_digest`, which ``containers/common.sh``'s ``sources_digest`` computes the same way);
:func:`remove_container` removes a container, waiting out a server that is still stopping it.

The docker SDK is an optional dependency (``pip install "rla[docker]"``): it is imported by these
functions, never when this module is imported.
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from rla_envs.core.errors import MissingDependency

__all__ = ["ImageKind", "connect", "check_image", "sources_digest", "remove_container", "server_name"]

START_HINT = "Start a Docker daemon, or podman's socket with `export DOCKER_HOST=$(scripts/start-docker-api.sh)`"


@dataclass(frozen=True)
class ImageKind:
    """An rla image family: the labels it carries, how it is built, and the error its backend raises."""

    name: str
    """What the image is, in messages: ``"sandbox"``, ``"desktop"``."""
    label: str
    """Label prefix: the image carries ``{label}.protocol`` and ``{label}.source-hash``."""
    protocol: str
    """The protocol version the backend expects in ``{label}.protocol``."""
    build_script: str
    """The script that builds the image (``containers/desktop/build.sh``), named in every refusal."""
    sources: str
    """What the source hash covers, in messages: ``"sandbox sources"``, ``"controller sources"``."""
    error: type[Exception]
    """What the backend raises when the image or the socket fails it."""


def _docker_sdk():
    try:
        import docker  # the optional `docker` extra
    except ImportError as exc:
        raise MissingDependency('the docker backends need the docker SDK: pip install "rla[docker]"') from exc
    return docker


def _server_errors() -> tuple[type[Exception], ...]:
    """What a Docker-API call raises when the server refuses or does not answer in time."""
    import docker.errors
    import requests  # the docker SDK's own transport

    return docker.errors.APIError, requests.exceptions.RequestException


def connect(base_url: str | None = None, *, error: type[Exception], timeout: float = 120) -> Any:
    """A ``docker.DockerClient`` for ``base_url`` (default ``DOCKER_HOST``) that answered a ping.

    Raises :class:`MissingDependency` without the docker SDK, ``error`` (saying how to start a socket)
    when nothing answers.
    """
    docker = _docker_sdk()
    where = base_url or os.environ.get("DOCKER_HOST") or "the default socket"
    try:
        client = docker.DockerClient(base_url=base_url, timeout=timeout) if base_url else docker.from_env(timeout=timeout)
        client.ping()
    except Exception as exc:  # the SDK raises DockerException, requests' and urllib3's errors alike
        raise error(f"no Docker-API server answers at {where}: {type(exc).__name__}: {exc}. {START_HINT}") from None
    return client


def server_name(client: Any) -> str:
    """The name the Docker-API server gives itself (``Podman Engine``, ``Engine``), or ``docker-api``."""
    try:
        components = client.version().get("Components") or [{}]
    except _server_errors():  # the name is only informative: a server that will not say is "docker-api"
        return "docker-api"
    return components[0].get("Name") or "docker-api"


def check_image(client: Any, image: str, kind: ImageKind, expected_hash: str | None) -> Any:
    """The image ``image`` from the server, after checking its protocol and (unless ``expected_hash`` is
    None) its source hash; ``kind.error`` saying how to build or rebuild it otherwise."""
    import docker.errors

    hint = f"build it with {kind.build_script}"
    try:
        found = client.images.get(image)
    except docker.errors.ImageNotFound:
        raise kind.error(f"the {kind.name} image {image!r} is not on the Docker-API server; {hint}") from None
    except docker.errors.APIError as exc:
        raise kind.error(f"cannot inspect the {kind.name} image {image!r}: {exc}") from exc
    labels = (found.attrs.get("Config") or {}).get("Labels") or found.labels or {}
    if labels.get(f"{kind.label}.protocol") != kind.protocol:
        raise kind.error(f"the image {image!r} is not an rla {kind.name} image of protocol {kind.protocol} "
                         f"(labels: {labels}); {hint}")
    actual_hash = labels.get(f"{kind.label}.source-hash")
    if expected_hash is not None and actual_hash != expected_hash:
        raise kind.error(f"the image {image!r} was built from other {kind.sources} than this checkout's "
                         f"(image {str(actual_hash)[:12]}, here {expected_hash[:12]}); "
                         f"rebuild it with {kind.build_script}, or pass check_image=False")
    return found


def sources_digest(root: str | Path, files: Iterable[str]) -> str:
    """sha256 over ``path\\nsha256(content)\\n`` per file (paths relative to ``root``, in the order given):
    the digest ``containers/common.sh`` stores in an image's ``source-hash`` label."""
    root = Path(root)
    lines = "".join(f"{name}\n{hashlib.sha256((root / name).read_bytes()).hexdigest()}\n" for name in files)
    return hashlib.sha256(lines.encode()).hexdigest()


def remove_container(container: Any, *, error: type[Exception], attempts: int = 50) -> None:
    """``remove(force=True)``, retried while the server reports the container busy (podman answers 500
    while the container is still stopping); ``error`` with the last answer if it never succeeds."""
    import docker.errors

    last: Exception | None = None
    for _ in range(attempts):
        try:
            container.remove(force=True)
            return
        except docker.errors.NotFound:
            return
        except _server_errors() as exc:
            last = exc
            time.sleep(0.1)
    raise error(f"could not remove the container {container.id[:12]}: {last}")
