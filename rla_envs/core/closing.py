"""ClosesOnExit: ``with`` support and a finaliser for objects that hold processes, slots or containers."""

from __future__ import annotations

__all__ = ["ClosesOnExit"]


class ClosesOnExit:
    """``with`` support and a finaliser for objects that hold processes, slots or containers.

    ``__exit__`` and garbage collection both call ``close()`` (which must be idempotent), so a forgotten
    sandbox, session or env pool never keeps its slot or its processes.
    """

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # a finaliser must not raise: a half-built object, or resources gone at interpreter exit
            pass
