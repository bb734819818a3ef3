"""LocalProvider: desktop sessions on this machine (bubblewrap namespaces, a private home), no container."""

from __future__ import annotations

import logging
import os
from typing import Any

from rla_envs.desktop.client import ControllerClient, ControllerError
from rla_envs.desktop.providers.base import DesktopProvider
from rla_envs.desktop.session import LocalSession

__all__ = ["LocalProvider"]

logger = logging.getLogger(__name__)


class LocalProvider(DesktopProvider):
    """A desktop session run locally by :class:`~rla_envs.desktop.session.LocalSession`.

    Needs Debian's desktop packages and the runtime venv (``sudo scripts/install-desktop.sh``).

    Args:
        screen_size: ``(width, height)`` of the virtual screen.
        python: the desktop runtime interpreter (default ``$RLA_DESKTOP_PYTHON`` or /opt/rla-desktop/bin/python).
        start_timeout: seconds to wait for the session to boot.
        request_timeout: default seconds per controller request.
        home_template: a prepared home directory every reset returns to (default: the seeded one).
        fresh_sessions: start a new session on every reset (the default): nothing of an episode can reach the
            next. False restores the running session in place instead, ~50x faster (~0.01-0.07 s against a
            session's boot, ~0.65 s here), except what a restore does not put back (docs/threat-model.md).

    Example::

        with LocalProvider() as provider:
            client = provider.start()
            client.open_file("/home/user/notes.txt")
            provider.reset()
    """

    name = "local"

    def __init__(self, *, screen_size: tuple[int, int] = (1920, 1080), python: str | None = None,
                 start_timeout: float = 60.0, request_timeout: float = 30.0,
                 home_template: str | os.PathLike | None = None, fresh_sessions: bool = True, **unknown: Any):
        if unknown:
            raise TypeError(f"LocalProvider got unknown options {sorted(unknown)}; it takes screen_size, python, "
                            f"start_timeout, request_timeout, home_template, fresh_sessions")
        self.fresh_sessions = bool(fresh_sessions)
        self._session = LocalSession(screen_size=screen_size, python=python, start_timeout=start_timeout,
                                     home_template=home_template)
        self._request_timeout = float(request_timeout)
        self._client: ControllerClient | None = None

    @property
    def session(self) -> LocalSession:
        """The underlying session (its home directory on the host, its pid, its log)."""
        return self._session

    def start(self) -> ControllerClient:
        """The running session's client; a session whose controller died is replaced by a fresh one."""
        if self._client is not None and self._session.alive:
            return self._client
        self._drop_client()
        socket_path = self._session.start()
        client = ControllerClient("http://rla-desktop", self._session.token, timeout=self._request_timeout,
                                  unix_socket=str(socket_path))
        try:
            client.wait_ready(timeout=self._session.start_timeout)
        except Exception:
            client.close()
            self._session.close()
            raise
        self._client = client
        return client

    def reset(self) -> None:
        """Start a fresh session (``fresh_sessions``, the default), or close the apps and restore the running one in
        place; a session that does not answer, or that the episode broke beyond restoring, is replaced by a fresh
        one."""
        if self.fresh_sessions:
            if self._client is not None:
                self._drop_client()
                self._session.close()
            self.start()
            return
        try:
            self.start().reset_session()
        except ControllerError as exc:
            logger.warning("the local desktop session did not reset (%s); starting a fresh one; its log ends "
                           "with:\n%s", exc, self._session.log_tail(1000))
            self._drop_client()
            self._session.close()
            self.start()

    def _drop_client(self) -> None:
        client, self._client = getattr(self, "_client", None), None
        if client is not None:
            client.close()

    def close(self) -> None:
        self._drop_client()
        session = getattr(self, "_session", None)
        if session is not None:
            session.close()
