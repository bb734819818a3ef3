"""Where desktop sessions run: :func:`make_provider` ``("local" | "docker", **options)``."""

from __future__ import annotations

from rla_envs.desktop.providers.base import PROVIDERS, DesktopProvider, make_provider

__all__ = ["DesktopProvider", "PROVIDERS", "make_provider"]
