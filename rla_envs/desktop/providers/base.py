"""DesktopProvider: what the env needs from wherever a desktop session runs."""

from __future__ import annotations

import importlib
from typing import Any

from rla_envs.core.closing import ClosesOnExit
from rla_envs.core.errors import did_you_mean
from rla_envs.desktop.client import ControllerClient

__all__ = ["DesktopProvider", "PROVIDERS", "make_provider", "provider_class"]

# String entry points: asking for one provider imports only that one (docker's SDK is optional).
PROVIDERS: dict[str, str] = {
    "local": "rla_envs.desktop.providers.local:LocalProvider",
    "docker": "rla_envs.desktop.providers.docker:DockerProvider",
}


class DesktopProvider(ClosesOnExit):
    """One desktop session (Xvfb, window manager, AT-SPI, apps, controller server) and its controller.

    The env only uses this interface and the :class:`ControllerClient` it returns, so a session in a local
    process group and one in a container are interchangeable.
    """

    name: str = ""

    def start(self) -> ControllerClient:
        """Boot the session if it is not running (idempotent); return a ready client for its controller."""
        raise NotImplementedError

    @property
    def client(self) -> ControllerClient:
        """The running session's controller client (starts the session on first use)."""
        return self.start()

    def has_app(self, name: str) -> bool:
        """Whether the program ``name`` is on the session's PATH (the runnable check asks before an episode).

        A local session sees this machine's programs; providers whose sessions run elsewhere override this.
        """
        import shutil

        return shutil.which(name) is not None

    def reset(self) -> None:
        """Bring the session back to its initial state: apps closed, the user's home as at start."""
        raise NotImplementedError

    def close(self) -> None:
        """Stop the session and everything it started (idempotent); no process or container is left."""
        raise NotImplementedError


def provider_class(name: str) -> type[DesktopProvider]:
    """The class of the provider called ``name`` (``"local"`` or ``"docker"``), imported on first use."""
    try:
        entry_point = PROVIDERS[name]
    except KeyError:
        hint = did_you_mean(name, PROVIDERS)
        raise ValueError(f"unknown desktop provider {name!r}; known: {sorted(PROVIDERS)}.{hint}") from None
    module_name, _, attr = entry_point.partition(":")
    return getattr(importlib.import_module(module_name), attr)


def make_provider(name: str, **options: Any) -> DesktopProvider:
    """The provider called ``name`` (``"local"`` or ``"docker"``) built with ``options``."""
    return provider_class(name)(**options)
