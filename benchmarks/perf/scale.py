"""Benchmark: env steps/s on Ray actors against env worker processes, with 1, 2 and 4 workers.

The rollout engine plays 16 ALFWorld episodes (16 envs, an instant scripted policy answering the first admissible
command, the same tasks and seeds) once with :class:`~rla_train.rollout.envs.ProcessEnvs` and once with
:class:`~rla_train.rollout.ray_envs.RayEnvs` (a local loopback cluster, started once, ~10 s, outside the timing), for
each worker count; every side is warmed first (each env loads its game). Reported as env steps/s (higher is better),
Ray against processes; the goal says Ray's actor round trips cost at most 20% of the throughput on one machine,
where processes are the natural choice (Ray pays off across machines). The transcripts of both sides must agree.

Run it alone with ``python -m benchmarks.perf.scale [--quick]``; needs ``pip install "rla[ray]"``.
"""

from __future__ import annotations

import sys
import time

from benchmarks.perf.report import Metric
from benchmarks.perf.rollout import FirstAdmissible

__all__ = ["run"]

PARALLEL = 16
WORKERS = (1, 2, 4)


def _steps_per_second(tasks, workers: int, backend: str, max_steps: int) -> tuple[float, list]:
    from rla_train.backends.scripted import ScriptedBackend
    from rla_train.rollout.engine import RolloutEngine

    with RolloutEngine("rla/AlfWorld-v0", backend=ScriptedBackend(FirstAdmissible()), num_envs=PARALLEL,
                       workers=workers, env_backend=backend, progress=False,
                       env_options={"max_steps": max_steps}) as engine:
        engine.run(tasks)  # warm: every env loads its game once
        started = time.perf_counter()
        episodes = engine.run(tasks)
        seconds = time.perf_counter() - started
    transcripts = [(e.task_id, e.actions, e.observations) for e in episodes]
    return sum(e.num_steps for e in episodes) / seconds, transcripts


def run(quick: bool = False) -> list[Metric]:
    """Ray vs process env workers at 1, 2 and 4 workers."""
    from rla_train.rollout.envs import EnvSpec
    from rla_train.rollout.ray_envs import start_local_cluster

    import ray

    max_steps = 10 if quick else 30
    all_tasks = EnvSpec("rla/AlfWorld-v0").tasks()
    tasks = [all_tasks[i % len(all_tasks)] for i in range(PARALLEL)]
    if not ray.is_initialized():
        start_local_cluster()
    metrics = []
    try:
        for workers in WORKERS:
            process_rate, process_transcripts = _steps_per_second(tasks, workers, "process", max_steps)
            ray_rate, ray_transcripts = _steps_per_second(tasks, workers, "ray", max_steps)
            if ray_transcripts != process_transcripts:
                raise RuntimeError(f"Ray and process env workers played different transcripts with {workers} workers")
            metrics.append(Metric(f"ray_env_steps_{workers}_workers", ray_rate, process_rate, "steps/s", goal=0.8,
                                  note=f"{PARALLEL} ALFWorld envs over {workers} Ray actors vs {workers} processes, "
                                       f"{max_steps} steps per episode, instant scripted policy"))
    finally:
        ray.shutdown()
    return metrics


if __name__ == "__main__":
    from benchmarks.perf.report import format_table, machine_facts

    print(format_table(run(quick="--quick" in sys.argv), machine_facts()))
