"""Where a rollout engine's env workers run: in this process, in worker processes, or on Ray actors.

:func:`make_env_slots` is the one place that chooses; the engine and the co-trainer's ``env.backend`` call it.
Processes (:mod:`rla_train.rollout.envs`) need nothing more; Ray (:mod:`rla_train.rollout.ray_envs`) is imported
only when chosen (``pip install "rla[ray]"``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rla_train.rollout.envs import LocalEnvs, ProcessEnvs

__all__ = ["ENV_BACKENDS", "make_env_slots"]

ENV_BACKENDS = ("process", "ray")


def make_env_slots(factory: Callable[[], Any], num_slots: int, workers: int = 0, *, backend: str = "process",
                   **options: Any):
    """``num_slots`` envs over ``workers`` env workers.

    ``backend="process"``: in this process when ``workers == 0``, else over worker processes (:class:`ProcessEnvs`);
    ``backend="ray"``: over ``workers`` Ray actors (:class:`~rla_train.rollout.ray_envs.RayEnvs`, ``pip install
    "rla[ray]"``), ``options`` going to it (``address``, ``resources``, ...).
    """
    if backend not in ENV_BACKENDS:
        raise ValueError(f"env backend must be one of {ENV_BACKENDS}, got {backend!r}")
    if workers < 0:
        raise ValueError(f"workers must be >= 0 (0 = in this process), got {workers}")
    if backend == "ray":
        if workers == 0:
            raise ValueError("the ray env backend needs workers >= 1 (the number of Ray actors holding the envs)")
        from rla_train.rollout.ray_envs import RayEnvs  # ray is an optional dependency: imported only when chosen

        return RayEnvs(factory, num_slots, workers=workers, **options)
    if workers == 0:
        return LocalEnvs(factory, num_slots)
    return ProcessEnvs(factory, num_slots, workers=workers, **options)
