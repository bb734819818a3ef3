"""Env slots for the rollout engine: many env instances, in this process or in worker processes.

The engine talks to ``num_slots`` envs through two batched calls, ``reset_many`` and ``step_many``,
each taking ``{slot: argument}`` and returning ``{slot: result or EnvFailure}``. :class:`ProcessEnvs`
spreads the slots over worker processes (ALFWorld's and TextWorld's engines are not thread-safe, and
processes step in parallel); every worker steps its slots in turn and all workers work at once.
An env that raises gives an :class:`EnvFailure` for its slot (the episode ends with the error recorded);
a worker that dies raises :class:`EnvWorkerError`.
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from rla_envs.core.closing import ClosesOnExit
from rla_envs.core.errors import RlaError
from rla_envs.core.task import Task

logger = logging.getLogger(__name__)

__all__ = ["EnvSpec", "EnvFailure", "EnvSlots", "EnvWorkerError", "LocalEnvs", "ProcessEnvs"]


class EnvWorkerError(RlaError, RuntimeError):
    """An env worker process died or stopped answering."""


@dataclass(frozen=True)
class EnvFailure:
    """An env call that failed: the exception's type and message, the traceback, and whose failure it is.

    ``infrastructure`` is True when the env could not be built or its worker died (nothing the agent did); False
    when the env itself raised on the call, which the rollout engine charges to the agent's action.
    """

    error: str
    traceback: str = ""
    infrastructure: bool = False


class EnvSpec:
    """A picklable env factory: ``EnvSpec("rla/AlfWorld-v0", split="train")()`` is ``gym.make(...)`` (checker off)."""

    def __init__(self, env_id: str, **kwargs: Any):
        if not isinstance(env_id, str) or not env_id:
            raise TypeError(f"env_id must be a registered env id such as 'rla/AlfWorld-v0', got {env_id!r}")
        self.env_id = env_id
        self.kwargs = dict(kwargs)

    def __call__(self):
        import gymnasium as gym

        import rla_envs  # noqa: F401  (registers the rla/ ids)

        # gymnasium's passive checker breaks every step after a failed first reset (TypeError); rla's envs are
        # checked with check_env in their tests instead
        return gym.make(self.env_id, **{"disable_env_checker": True, **self.kwargs})

    def tasks(self) -> list[Task]:
        """The env's task set (its default tasks, or the ``tasks=`` it was given)."""
        env = self()
        try:
            return list(env.unwrapped.tasks)
        finally:
            env.close()

    def __repr__(self) -> str:
        options = "".join(f", {k}={v!r}" for k, v in self.kwargs.items())
        return f"EnvSpec({self.env_id!r}{options})"


def _call(env, method: str, argument: Any) -> Any:
    try:
        if method == "reset":
            task, seed = argument
            return env.reset(seed=seed, options=None if task is None else {"task": task})
        return env.step(argument)
    except Exception as error:  # noqa: BLE001 - an env failure ends its episode, not the run
        return EnvFailure(f"{type(error).__name__}: {error}", traceback.format_exc())


class EnvSlots:
    """Envs built on first use from a factory, one per slot (what each env worker, process or Ray actor, holds)."""

    def __init__(self, factory: Callable[[], Any]):
        self.factory = factory
        self.envs: dict[int, Any] = {}

    def run(self, method: str, calls: Mapping[int, Any]) -> dict[int, Any]:
        results = {}
        for slot, argument in calls.items():
            if slot not in self.envs:
                try:
                    self.envs[slot] = self.factory()
                except Exception as error:  # noqa: BLE001
                    results[slot] = EnvFailure(f"could not build the env: {type(error).__name__}: {error}",
                                               traceback.format_exc(), infrastructure=True)
                    continue
            results[slot] = _call(self.envs[slot], method, argument)
        return results

    def close(self) -> None:
        for slot, env in self.envs.items():
            try:
                env.close()
            except Exception as error:  # noqa: BLE001 - closing is best effort; the other envs still close
                logger.warning("closing the env of slot %d failed: %s: %s", slot, type(error).__name__, error)
        self.envs.clear()


class LocalEnvs(ClosesOnExit):
    """``num_slots`` envs in this process (stepped one after another)."""

    def __init__(self, factory: Callable[[], Any], num_slots: int):
        if num_slots < 1:
            raise ValueError(f"num_slots must be >= 1, got {num_slots}")
        self.num_slots = int(num_slots)
        self._slots = EnvSlots(factory)

    def reset_many(self, calls: Mapping[int, tuple[Task | None, int | None]]) -> dict[int, Any]:
        """Reset each slot with ``(task, seed)``; results are ``(observation, info)`` or EnvFailure."""
        return self._slots.run("reset", calls)

    def step_many(self, calls: Mapping[int, Any]) -> dict[int, Any]:
        """Step each slot with its action; results are Gymnasium 5-tuples or EnvFailure."""
        return self._slots.run("step", calls)

    def close(self) -> None:
        """Close every env."""
        self._slots.close()


def _serve(connection, factory: Callable[[], Any]) -> None:
    """A worker's loop: ``(method, {slot: argument})`` in, ``{slot: result}`` out, until ``close``."""
    slots = EnvSlots(factory)
    try:
        while True:
            try:
                method, calls = connection.recv()
            except (EOFError, KeyboardInterrupt):
                return
            if method == "close":
                return
            connection.send(slots.run(method, calls))
    finally:
        slots.close()
        connection.close()


class ProcessEnvs(ClosesOnExit):
    """``num_slots`` envs spread over ``workers`` processes (slot ``s`` lives in worker ``s % workers``).

    Args:
        factory: a picklable env factory (e.g. :class:`EnvSpec`).
        num_slots: how many envs in all.
        workers: how many processes (default: one per slot, at most ``num_slots``).
        start_method: multiprocessing start method (``"spawn"`` by default: safe with threads and CUDA).
    """

    def __init__(self, factory: Callable[[], Any], num_slots: int, *, workers: int | None = None,
                 start_method: str = "spawn"):
        if num_slots < 1:
            raise ValueError(f"num_slots must be >= 1, got {num_slots}")
        workers = num_slots if workers is None else workers
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        self.num_slots = int(num_slots)
        self.workers = min(int(workers), self.num_slots)
        self._connections, self._processes = [], []
        context = mp.get_context(start_method)
        for index in range(self.workers):
            parent, child = context.Pipe()
            process = context.Process(target=_serve, args=(child, factory), name=f"rla-env-worker-{index}",
                                      daemon=True)
            process.start()
            child.close()
            self._connections.append(parent)
            self._processes.append(process)

    def _run(self, method: str, calls: Mapping[int, Any]) -> dict[int, Any]:
        per_worker: dict[int, dict[int, Any]] = {}
        for slot, argument in calls.items():
            if not 0 <= slot < self.num_slots:
                raise ValueError(f"slot {slot} is out of range 0..{self.num_slots - 1}")
            per_worker.setdefault(slot % self.workers, {})[slot] = argument
        for worker, batch in per_worker.items():
            self._send(worker, (method, batch))
        results: dict[int, Any] = {}
        for worker in per_worker:
            results.update(self._receive(worker))
        return results

    def _send(self, worker: int, message: Any) -> None:
        try:
            self._connections[worker].send(message)
        except (BrokenPipeError, OSError) as error:
            raise self._died(worker) from error

    def _receive(self, worker: int) -> dict[int, Any]:
        try:
            return self._connections[worker].recv()
        except (EOFError, OSError) as error:
            raise self._died(worker) from error

    def _died(self, worker: int) -> EnvWorkerError:
        process = self._processes[worker]
        process.join(timeout=1)
        return EnvWorkerError(f"env worker {worker} (pid {process.pid}) died (exit code {process.exitcode}); "
                              "its episodes are lost. Check memory limits, or run with workers=0 to see the error "
                              "in this process.")

    def reset_many(self, calls: Mapping[int, tuple[Task | None, int | None]]) -> dict[int, Any]:
        """Reset each slot with ``(task, seed)``, all workers at once."""
        return self._run("reset", calls)

    def step_many(self, calls: Mapping[int, Any]) -> dict[int, Any]:
        """Step each slot with its action, all workers at once."""
        return self._run("step", calls)

    def close(self) -> None:
        """Stop the workers (closing their envs)."""
        for connection in self._connections:
            try:
                connection.send(("close", {}))
            except (BrokenPipeError, OSError):  # the worker is gone already: join() below reaps it
                pass
        for process in self._processes:
            process.join(timeout=10)
            if process.is_alive():
                process.kill()
                process.join(timeout=5)
        for connection in self._connections:
            connection.close()
        self._connections, self._processes = [], []
