"""Sandboxes that run untrusted programs: ``make_sandbox("local")`` (default).

The interface (:class:`Sandbox`, :class:`Limits`, :class:`Call`, :class:`CallResult`) is in
:mod:`rla_envs.code.sandbox.base`; backends are imported only when made.
"""

from __future__ import annotations

from rla_envs.code.sandbox.base import (
    Call,
    CallResult,
    ConfinementUnavailable,
    Limits,
    Sandbox,
    SandboxError,
    Session,
)

__all__ = [
    "BACKENDS",
    "Call",
    "CallResult",
    "ConfinementUnavailable",
    "Limits",
    "Sandbox",
    "SandboxError",
    "Session",
    "make_sandbox",
]

BACKENDS: dict[str, str] = {
    "local": "rla_envs.code.sandbox.local:LocalSandbox",
    "docker": "rla_envs.code.sandbox.docker:DockerSandbox",
}


def make_sandbox(backend: str = "local", **kwargs) -> Sandbox:
    """Build the sandbox ``backend`` (``"local"``); keyword arguments go to its constructor.

    ``local`` takes ``slots`` (concurrent sessions, one uid each), ``uid_base`` (a block of uids no account,
    group or subordinate-id range owns; by default a free one is picked), ``packages`` (what a program may import
    beyond the standard library; none by default), ``work_mb`` (each run's private tmpfs work dir, MiB), ``cpus``
    (each slot's CPU quota, in cores, where cgroups are available) and ``unsafe`` (run without confinement on a
    machine that cannot confine — only for code you trust).
    """
    import importlib

    from rla_envs.core.errors import did_you_mean

    if backend not in BACKENDS:
        hint = did_you_mean(backend, BACKENDS)
        raise ValueError(f"unknown sandbox backend {backend!r}; expected one of {sorted(BACKENDS)}.{hint}")
    module_name, class_name = BACKENDS[backend].split(":")
    return getattr(importlib.import_module(module_name), class_name)(**kwargs)
