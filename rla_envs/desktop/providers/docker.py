"""DockerProvider: a desktop session in a container, started through any Docker-API socket.

The image is built by ``containers/desktop/build.sh`` (Debian bookworm, the desktop apps, the runtime made
by ``scripts/install-desktop.sh`` and the controller package); on machines without a Docker daemon
``scripts/start-docker-api.sh`` starts podman's socket (``export DOCKER_HOST=$(scripts/start-docker-api.sh)``).

One container per session. Its controller listens on the container's own network; the port is published on
the host's ``127.0.0.1`` only (a random free port), so nothing off the host reaches it, and every request must
carry a token drawn afresh for each container (passed in its environment, never on a command line).
:meth:`DockerProvider.reset` asks the controller to close the apps and restore the session -- ``/home/user``, the
scratch folders, the X server's settings; see docs/threat-model.md -- (no container restart; a new container with
``fresh_sessions``); :meth:`DockerProvider.close` removes the container. Every container carries the label
``rla.desktop`` (the provider's id) and ``rla.desktop.pid`` / ``rla.desktop.host`` (who started it), so
:func:`remove_leftovers` can find those whose owner died.

Example::

    from rla_envs.desktop.providers import make_provider

    with make_provider("docker") as provider:
        client = provider.start()
        client.run_pyautogui("pyautogui.hotkey('ctrl', 'alt', 't')")
        provider.reset()
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import time
import uuid
from pathlib import Path
from typing import Any

from rla_envs.core.docker import ImageKind, check_image, connect, remove_container, sources_digest
from rla_envs.core.errors import RlaError
from rla_envs.desktop.client import ControllerClient, ControllerError
from rla_envs.desktop.providers.base import DesktopProvider

__all__ = ["DockerProvider", "DesktopContainerError", "DEFAULT_IMAGE", "LABEL", "source_hash", "remove_leftovers"]

logger = logging.getLogger(__name__)

DEFAULT_IMAGE = "rla-desktop:latest"
PROTOCOL = "1"
"""Version of what the provider expects of the image; the image carries it as label ``rla.desktop.protocol``."""
LABEL = "rla.desktop"
"""Label on every container this provider starts (value: the provider's id)."""
CONTROLLER_PORT = 5000
CONTROLLER_DIR = "rla_envs/desktop/controller"


class DesktopContainerError(RlaError, RuntimeError):
    """The desktop container could not be made, started or reached (the message says why and what to do)."""


IMAGE = ImageKind(name="desktop", label=LABEL, protocol=PROTOCOL, build_script="containers/desktop/build.sh",
                  sources="controller sources", error=DesktopContainerError)
_REPO_ROOT = Path(__file__).resolve().parents[3]


def source_files(root: str | Path | None = None) -> list[str]:
    """The controller's files (relative to the repository root, sorted) that the image carries."""
    root = Path(root) if root is not None else _REPO_ROOT
    base = root / CONTROLLER_DIR
    if not base.is_dir():
        return []
    return sorted(p.relative_to(root).as_posix() for p in base.rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc")


def source_hash(root: str | Path | None = None) -> str:
    """Digest of the controller's sources; ``build.sh`` stores the same digest in the image label
    ``rla.desktop.source-hash``."""
    root = Path(root) if root is not None else _REPO_ROOT
    return sources_digest(root, source_files(root))


def _parse_screen(screen_size: Any) -> tuple[int, int]:
    """``(width, height)`` from ``(w, h)`` or ``"WxH"``; ValueError saying what was expected otherwise."""
    try:
        if isinstance(screen_size, str):
            width, height = (int(part) for part in screen_size.lower().split("x"))
        else:
            width, height = (int(part) for part in screen_size)
    except (TypeError, ValueError):
        raise ValueError(f"screen_size must be (width, height) or 'WIDTHxHEIGHT', got {screen_size!r}") from None
    if not (320 <= width <= 7680 and 240 <= height <= 4320):
        raise ValueError(f"screen_size must be between 320x240 and 7680x4320, got {width}x{height}")
    return width, height


class DockerProvider(DesktopProvider):
    """A desktop session in a container made from ``image`` through a Docker-API socket.

    Args:
        image: the image built by ``containers/desktop/build.sh``.
        base_url: the Docker-API socket (``unix://...``, ``tcp://...``); default ``DOCKER_HOST`` or the
            platform default. The published port is reached at ``host``, so a remote server needs a tunnel.
        screen_size: ``(width, height)`` or ``"WxH"`` of the session's screen.
        start_timeout: seconds to wait for the controller to answer after the container starts.
        memory_mb: memory limit of the container (None: no limit).
        pids_limit: processes and threads in the container.
        shm_mb: size of ``/dev/shm`` (X shared memory and LibreOffice use it).
        host: the host address the controller's port is published on (``127.0.0.1``: this host only).
        check_image: refuse an image built from other controller sources than this checkout's.
        fresh_sessions: start a new container on every reset (the default): nothing of an episode reaches the
            next. False restores the running session in place instead (~0.01-0.05 s against a container's start,
            ~1.2 s here), except what a restore does not put back (docs/threat-model.md).
        client: an existing ``docker.DockerClient`` (then ``base_url`` is ignored).
    """

    name = "docker"

    def __init__(self, image: str = DEFAULT_IMAGE, base_url: str | None = None, *,
                 screen_size: Any = (1920, 1080), start_timeout: float = 60.0, memory_mb: int | None = 4096,
                 pids_limit: int = 2048, shm_mb: int = 512, host: str = "127.0.0.1", check_image: bool = True,
                 client: Any = None, fresh_sessions: bool = True) -> None:
        self.image = image
        self.screen_size = _parse_screen(screen_size)
        if start_timeout <= 0:
            raise ValueError(f"start_timeout must be > 0 s, got {start_timeout}")
        if memory_mb is not None and memory_mb < 512:
            raise ValueError(f"memory_mb must be >= 512 (LibreOffice needs it) or None, got {memory_mb}")
        if pids_limit < 64 or shm_mb < 16:
            raise ValueError(f"pids_limit >= 64 and shm_mb >= 16 are needed, got {pids_limit} and {shm_mb}")
        self.start_timeout, self.memory_mb, self.pids_limit, self.shm_mb = start_timeout, memory_mb, pids_limit, shm_mb
        self.host, self.check_image, self.fresh_sessions = host, check_image, bool(fresh_sessions)
        self.instance = uuid.uuid4().hex[:16]
        self.container: Any = None
        self._client: ControllerClient | None = None
        self._programs: dict[str, bool] = {}  # has_app's answers: the image does not change under a container
        self._base_url = base_url
        self._docker = client

    # ------------------------------------------------------------------ public API
    def start(self) -> ControllerClient:
        """Create and start the container (once), wait for its controller, return the controller's client."""
        if self._client is not None:
            return self._client
        self.verify_image()
        token = secrets.token_urlsafe(32)
        client = None
        try:
            self._create(token)
            port = self._published_port()
            client = ControllerClient(f"http://{self.host}:{port}", token)
            self._wait_ready(client)
        except BaseException:
            if client is not None:
                client.close()
            self.close()
            raise
        self._client = client
        return client

    def has_app(self, name: str) -> bool:
        """Whether the program ``name`` is on the container's PATH (asked once per name; starts the container)."""
        if name not in self._programs:
            import shlex

            reply = self.start().execute(["/bin/sh", "-c", f"command -v {shlex.quote(name)}"], timeout=30)
            self._programs[name] = reply.get("returncode") == 0
        return self._programs[name]

    def reset(self) -> None:
        """Start a new container (``fresh_sessions``, the default), or close every app of the session and restore it
        in place (``POST /rla/reset``; no restart).

        In place, a container that stopped, whose controller does not answer or whose session the episode broke
        beyond restoring, is replaced by a fresh one.
        """
        if self.fresh_sessions:
            if self._client is not None:
                self.close()
                self.instance = uuid.uuid4().hex[:16]
            self.start()
            return
        client = self.start()
        try:
            client.reset_session()
        except ControllerError as exc:
            logger.warning("the desktop container %s did not reset (%s; it is %s); starting a fresh one; %s",
                           self._name, exc, self._state(), self._logs())
            self.close()
            self.instance = uuid.uuid4().hex[:16]
            self.start()

    def close(self) -> None:
        """Remove the container and everything running in it (idempotent)."""
        client, self._client = self._client, None
        if client is not None:
            client.close()
        container, self.container = self.container, None
        if container is not None:
            remove_container(container, error=DesktopContainerError)

    def verify_image(self) -> None:
        """Connect to the Docker-API socket (once) and check the image: :class:`DesktopContainerError` saying
        how to build it if it is missing, of another protocol or (with ``check_image``) built from other
        controller sources than this checkout's."""
        if self._docker is None:
            self._docker = connect(self._base_url, error=DesktopContainerError)
        check_image(self._docker, self.image, IMAGE, source_hash() if self.check_image else None)

    @property
    def container_id(self) -> str | None:
        """The running container's id (None before :meth:`start` and after :meth:`close`)."""
        return self.container.id if self.container is not None else None

    # ------------------------------------------------------------------ steps
    @property
    def _name(self) -> str:
        return f"rla-desktop-{self.instance}"

    def _command(self) -> list[str]:
        """The container's command: the controller on the container's network, the port the provider publishes."""
        width, height = self.screen_size
        return ["/opt/rla-desktop/bin/python", "-m", "controller", "--host", "0.0.0.0", "--port", str(CONTROLLER_PORT),
                "--screen", f"{width}x{height}"]

    def _create(self, token: str) -> None:
        import docker.errors
        from docker.types import Ulimit

        options: dict[str, Any] = {}
        if self.memory_mb is not None:
            options.update(mem_limit=f"{self.memory_mb}m", memswap_limit=f"{self.memory_mb}m")
        try:
            self.container = self._docker.containers.create(
                self.image, command=self._command(),
                environment={"RLA_DESKTOP_TOKEN": token},
                ports={f"{CONTROLLER_PORT}/tcp": (self.host, None)},  # a random free port on this host only
                detach=True, init=True, shm_size=f"{self.shm_mb}m", pids_limit=self.pids_limit,
                cap_drop=["ALL"], security_opt=["no-new-privileges"],
                # explicit: podman's defaults are above what some hosts allow (runc then cannot set them)
                ulimits=[Ulimit(name="nofile", soft=8192, hard=8192), Ulimit(name="core", soft=0, hard=0),
                         Ulimit(name="nproc", soft=self.pids_limit, hard=self.pids_limit)],
                labels={LABEL: self.instance, f"{LABEL}.pid": str(_owner_pid()), f"{LABEL}.host": socket.gethostname()},
                name=self._name, **options)
            self.container.start()
        except docker.errors.APIError as exc:
            raise DesktopContainerError(f"cannot start a desktop container from {self.image!r}: {exc}"
                                        + (f"; {self._logs()}" if self.container is not None else "")) from exc

    def _published_port(self) -> int:
        """The host port the controller's port is published on (the server picks it when the container starts)."""
        for _ in range(50):
            self.container.reload()
            bindings = ((self.container.attrs.get("NetworkSettings") or {}).get("Ports") or {}).get(
                f"{CONTROLLER_PORT}/tcp") or []
            for binding in bindings:
                if binding.get("HostPort"):
                    return int(binding["HostPort"])
            if self.container.status not in ("created", "running"):
                break
            time.sleep(0.1)
        raise DesktopContainerError(f"the desktop container {self._name} has no published port for "
                                    f"{CONTROLLER_PORT}/tcp (state {self.container.status}); {self._logs()}")

    def _wait_ready(self, client: ControllerClient) -> None:
        """Wait until the controller answers; fail at once, with its log, if the container stops."""
        deadline = time.monotonic() + self.start_timeout
        while True:
            try:
                client.wait_ready(timeout=min(1.0, max(0.1, deadline - time.monotonic())))
                return
            except ControllerError as exc:
                state = self._state()
                if state != "running":
                    raise DesktopContainerError(f"the desktop container {self._name} stopped ({state}) before its "
                                                f"controller answered; {self._logs()}") from None
                if time.monotonic() >= deadline:
                    raise DesktopContainerError(f"the controller in {self._name} did not answer within "
                                                f"{self.start_timeout:g} s ({exc}); {self._logs()}") from None

    def _state(self) -> str:
        try:
            self.container.reload()
            state = self.container.attrs.get("State") or {}
            if state.get("Status") in ("exited", "dead"):
                return f"{state['Status']} with code {state.get('ExitCode')}"
            return str(state.get("Status") or self.container.status)
        except Exception as exc:  # removed under us, or the server went away
            return f"unknown ({type(exc).__name__}: {exc})"

    def _logs(self, lines: int = 30) -> str:
        try:
            text = self.container.logs(stdout=True, stderr=True, tail=lines).decode("utf-8", "replace").strip()
        except Exception as exc:
            return f"its log could not be read ({type(exc).__name__}: {exc})"
        return f"its last {lines} log lines:\n{text}" if text else "its log is empty"


def remove_leftovers(base_url: str | None = None, *, everything: bool = False, client: Any = None) -> list[str]:
    """Remove desktop containers whose owner process on this host is gone (all of them with ``everything``).

    Returns the names of the containers removed.
    """
    docker_client = client if client is not None else connect(base_url, error=DesktopContainerError)
    here = socket.gethostname()
    removed = []
    for container in docker_client.containers.list(all=True, filters={"label": LABEL}):
        labels = container.labels or {}
        if not everything:
            try:
                pid = int(labels.get(f"{LABEL}.pid", ""))
            except ValueError:
                continue
            if labels.get(f"{LABEL}.host") != here or _alive(pid):
                continue
        remove_container(container, error=DesktopContainerError)
        removed.append(container.name)
    return removed


def _owner_pid() -> int:
    """The pid recorded as the owner of a new container (this process)."""
    return os.getpid()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
