"""The sandbox interface: limits, calls, results, and the exact-type record codec.

A sandbox runs untrusted program text. Two forms:

* **function form** (``Call(function="solve", args=(3,))``): the program is loaded once as a module
  named ``solution`` in a fresh confined process; each call runs there in order and its return value
  comes back as a tagged record holding exact builtin types only.
* **stdio form** (``Call(stdin="3\\n")``): the program runs as ``__main__`` in a fresh confined
  process per call; stdout/stderr come back capped at ``Limits.output_bytes`` each.

Records cross the process boundary as tagged JSON (:func:`encode_value` / :func:`decode_value`):
``type(x) is int`` checks, never ``isinstance``, and no ``eval`` or ``pickle`` on the host. An int
subclass, a custom object or anything else outside the builtin set is refused.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any, Protocol, Sequence, runtime_checkable

from rla_envs.core.closing import ClosesOnExit  # noqa: F401  (re-exported for the sandbox modules)
from rla_envs.core.errors import RlaError

__all__ = [
    "Limits",
    "Call",
    "CallResult",
    "Session",
    "Sandbox",
    "SandboxError",
    "ConfinementUnavailable",
    "STATUSES",
    "encode_value",
    "decode_value",
    "UnsupportedValue",
    "ClosesOnExit",
]

STATUSES = ("ok", "error", "timeout", "memory", "output_limit", "crashed", "no_result")


class SandboxError(RlaError, RuntimeError):
    """The sandbox itself failed (not the program it ran)."""


class ConfinementUnavailable(SandboxError):
    """This machine cannot confine untrusted code; the message says what is missing and how to opt out."""


class UnsupportedValue(TypeError):
    """A value outside the exact builtin types the record codec carries."""


@dataclass(frozen=True)
class Limits:
    """Resource limits of one sandboxed run."""

    timeout_s: float = 3.0
    """Wall-clock limit per call (and for loading the program in the function form)."""
    memory_mb: int = 1024
    """Address-space limit (RLIMIT_AS) of every sandboxed process."""
    output_bytes: int = 1 << 20
    """Bytes kept per output stream (stdout, stderr); writing more ends the run with ``output_limit``."""
    file_size_mb: int = 16
    """Largest file the program may write (RLIMIT_FSIZE)."""
    open_files: int = 64
    """Open file descriptors per process (RLIMIT_NOFILE)."""
    processes: int = 64
    """Processes and threads of the sandbox uid (RLIMIT_NPROC)."""

    def __post_init__(self) -> None:
        if not self.timeout_s > 0:
            raise ValueError(f"Limits.timeout_s must be > 0 seconds, got {self.timeout_s!r}")
        for name in ("memory_mb", "output_bytes", "file_size_mb", "open_files", "processes"):
            value = getattr(self, name)
            if type(value) is not int or value < 1:
                raise ValueError(f"Limits.{name} must be a positive int, got {value!r}")
        if self.memory_mb < 64:
            raise ValueError(f"Limits.memory_mb={self.memory_mb} is too small for Python; use >= 64")
        if self.open_files < 16:
            raise ValueError(f"Limits.open_files={self.open_files} is too small for Python; use >= 16")


@dataclass(frozen=True)
class Call:
    """One unit of work inside a session: a stdio run or a function call."""

    stdin: str | None = None
    """stdio form: run the program as ``__main__`` with this stdin (a fresh process per call)."""
    function: str | None = None
    """function form: call this top-level name of the loaded module."""
    args: tuple = ()
    """Positional arguments (builtin values only: int, float, str, bool, None, list, tuple, dict, set, bytes)."""

    def __post_init__(self) -> None:
        if (self.stdin is None) == (self.function is None):
            raise ValueError("a Call needs exactly one of stdin= (stdio form) or function= (function form)")
        if self.stdin is not None and self.args:
            raise ValueError("args= only applies to the function form (function=...)")
        if self.function is not None and not self.function.isidentifier():
            raise ValueError(f"Call.function must be a Python identifier, got {self.function!r}")
        encode_value(tuple(self.args))  # refuse non-builtin inputs when the call is built

    @property
    def form(self) -> str:
        """``"stdio"`` or ``"function"``."""
        return "stdio" if self.stdin is not None else "function"


@dataclass
class CallResult:
    """What one call produced, as observed by the host."""

    status: str
    """One of ``ok``, ``error`` (exception), ``timeout``, ``memory``, ``output_limit``, ``crashed``, ``no_result``."""
    value: Any = None
    """function form: the return value, decoded on the host into exact builtin types."""
    stdout: str = ""
    stderr: str = ""
    error: str = ""
    """Exception type and message, or why there is no result."""
    exit_code: int | None = None
    """Exit status of the process (negative: killed by that signal); None while it still runs."""
    seconds: float = 0.0
    """Wall time of the call as seen by the host."""

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@runtime_checkable
class Session(Protocol):
    """A loaded program (function form) serving calls one after another; a context manager."""

    def call(self, call: Call) -> CallResult: ...

    def close(self) -> None: ...

    def __enter__(self) -> "Session": ...

    def __exit__(self, *exc: object) -> None: ...


@runtime_checkable
class Sandbox(Protocol):
    """Runs untrusted programs under confinement."""

    name: str

    def run(self, program: str, calls: Sequence[Call], limits: Limits = Limits()) -> list[CallResult]:
        """Run ``calls`` against ``program``: function calls in one session, each stdio call in a fresh process."""
        ...

    def session(self, program: str, limits: Limits = Limits()) -> Session:
        """Load ``program`` once as module ``solution`` and return a session serving function calls."""
        ...

    def close(self) -> None: ...

    def capabilities(self) -> dict:
        """What confinement is active (uid switch, landlock, seccomp, netns, pidns, rlimits)."""
        ...


# ---------------------------------------------------------------------------------------------------
# Tagged record codec: exact builtin types only. Used inside the sandbox (encode) and on the host
# (decode). Each value becomes a two-item list [tag, payload].

_MAX_DEPTH = 100


def encode_value(value: Any, _depth: int = 0) -> list:
    """Encode ``value`` into tagged JSON-ready lists; raise :class:`UnsupportedValue` for anything else."""
    if _depth > _MAX_DEPTH:
        raise UnsupportedValue(f"value nested deeper than {_MAX_DEPTH} levels")
    kind = type(value)
    if value is None:
        return ["none", None]
    if kind is bool:
        return ["bool", value]
    if kind is int:
        return ["int", str(value)]  # str: exact for any size
    if kind is float:
        return ["float", repr(value)]  # repr round-trips, and covers nan/inf
    if kind is str:
        return ["str", value]
    if kind is bytes:
        return ["bytes", base64.b64encode(value).decode("ascii")]
    if kind is list or kind is tuple or kind is set or kind is frozenset:
        tag = {list: "list", tuple: "tuple", set: "set", frozenset: "frozenset"}[kind]
        return [tag, [encode_value(item, _depth + 1) for item in value]]
    if kind is dict:
        return ["dict", [[encode_value(k, _depth + 1), encode_value(v, _depth + 1)] for k, v in value.items()]]
    raise UnsupportedValue(f"type {kind.__module__}.{kind.__qualname__} is not an exact builtin type")


def decode_value(tagged: Any, _depth: int = 0) -> Any:
    """Rebuild a value from :func:`encode_value`'s form; raise ``ValueError`` on anything malformed."""
    if _depth > _MAX_DEPTH + 1:
        raise ValueError(f"record nested deeper than {_MAX_DEPTH} levels")
    if type(tagged) is not list or len(tagged) != 2 or type(tagged[0]) is not str:
        raise ValueError(f"malformed record item: {str(tagged)[:80]}")
    tag, payload = tagged
    if tag == "none" and payload is None:
        return None
    if tag == "bool" and type(payload) is bool:
        return payload
    if tag == "int" and type(payload) is str:
        text = payload[1:] if payload.startswith("-") else payload
        if not text.isdigit() or not text.isascii():
            raise ValueError(f"malformed int {payload[:40]!r}")
        return int(payload)
    if tag == "float" and type(payload) is str and len(payload) < 40:
        return float(payload)
    if tag == "str" and type(payload) is str:
        return payload
    if tag == "bytes" and type(payload) is str:
        return base64.b64decode(payload.encode("ascii"), validate=True)
    if tag in ("list", "tuple", "set", "frozenset") and type(payload) is list:
        items = [decode_value(item, _depth + 1) for item in payload]
        return {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}[tag](items)
    if tag == "dict" and type(payload) is list:
        out = {}
        for pair in payload:
            if type(pair) is not list or len(pair) != 2:
                raise ValueError("malformed dict item")
            out[decode_value(pair[0], _depth + 1)] = decode_value(pair[1], _depth + 1)
        return out
    raise ValueError(f"unknown or malformed tag {tag[:20]!r}")

