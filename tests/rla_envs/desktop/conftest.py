"""Fixtures for the desktop tests: one local desktop session for the whole run (``local_provider``).

``local_provider`` skips (with the reason) when the desktop packages or the runtime venv are missing; run
``sudo scripts/install-desktop.sh`` to get them. Tests that change the session should start from
``desktop_client``, which resets the session first (apps closed, home restored).
"""

from __future__ import annotations

import pytest


def local_desktop_unavailable() -> str | None:
    """Why a local desktop session cannot run here, or None when it can."""
    from rla_envs.desktop.session import INSTALL_HINT, SessionError, missing_tools, runtime_python

    missing = missing_tools()
    if missing:
        return f"a local desktop session needs {', '.join(missing)}; {INSTALL_HINT}"
    try:
        runtime_python()
    except SessionError as exc:
        return str(exc)
    return None


@pytest.fixture(scope="session")
def local_provider():
    """A started LocalProvider shared by the run's desktop tests (closed at the end)."""
    reason = local_desktop_unavailable()
    if reason:
        pytest.skip(reason)
    from rla_envs.desktop.providers.local import LocalProvider

    provider = LocalProvider(screen_size=(1920, 1080))
    try:
        provider.start()
        yield provider
    finally:
        provider.close()


@pytest.fixture
def desktop_client(local_provider):
    """The shared session's client, after a reset (no app open, home as at start)."""
    local_provider.reset()
    return local_provider.start()
