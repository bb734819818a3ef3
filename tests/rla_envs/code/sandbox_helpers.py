"""What the local-sandbox test modules share: the sandbox fixture's body and a listener that counts connections."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator

import pytest

from rla_envs.code.sandbox import ConfinementUnavailable, make_sandbox


def local_sandbox(slots: int) -> Iterator:
    """Yield a confined ``local`` sandbox of ``slots`` slots, closed after; skip where the machine cannot confine."""
    if os.geteuid() != 0:
        pytest.skip("the local sandbox needs root (uid switch, namespaces)")
    try:
        sandbox = make_sandbox("local", slots=slots)
    except ConfinementUnavailable as exc:
        pytest.skip(f"this machine cannot confine: {exc}")
    yield sandbox
    sandbox.close()


class CountingListener:
    """Accepts connections on a listening socket in a thread, counting them (``count``); ``close()`` stops it."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock, self.count = sock, 0
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.count += 1
            conn.close()

    def close(self) -> None:
        self.sock.close()
