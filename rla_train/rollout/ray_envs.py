"""Env slots on Ray actors (``pip install "rla[ray]"``): the rollout engine's ``reset_many`` / ``step_many`` on a cluster.

The same contract as :class:`~rla_train.rollout.envs.ProcessEnvs`: slot ``s`` lives in actor ``s % workers``, each
actor holds an :class:`~rla_train.rollout.envs.EnvSlots` (envs built on first use from the factory), all actors step
at once, an env that raises gives an :class:`~rla_train.rollout.envs.EnvFailure` for its slot. Where a dead worker
process stops a :class:`ProcessEnvs` run, a dead actor (its process crashed, its node left) ends only the episodes of
its slots, each with an ``EnvFailure``, and is replaced by a fresh actor whose envs are built again on their next
reset. The same seeds give the same transcripts as with processes (tested)::

    envs = RayEnvs(EnvSpec("rla/TextWorld-v0"), num_slots=16, workers=4)                # a local loopback cluster
    envs = RayEnvs(EnvSpec("rla/OSWorld-v0"), 8, workers=8, address="auto", resources={"desktop": 1})

Cluster: with ``address`` (``"auto"``, ``"host:6379"``, ``"ray://head:10001"``) it joins that cluster; if this
process is already connected (``ray.init`` by the caller) it uses that connection; otherwise it starts a local
cluster that listens on 127.0.0.1 only, with Ray's usage statistics off (:func:`start_local_cluster`).
Placement: ``resources`` are Ray custom resources every actor needs, so that desktop or docker-backed envs land on
the nodes where their provider runs (declare them on those nodes: ``ray start --resources '{"desktop": 8}'``).
``num_cpus`` is the logical CPUs each actor reserves: by default none on a local cluster rla started (the
operating system shares the cores, as with env processes), one on any other cluster (so actors spread over nodes).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, Mapping
from typing import Any

from rla_envs.core.closing import ClosesOnExit
from rla_envs.core.errors import RlaError
from rla_envs.core.task import Task
from rla_train.rollout.envs import EnvFailure, EnvSlots

__all__ = ["RayEnvs", "start_local_cluster", "LOOPBACK", "LOCAL_RESOURCE_CAPACITY"]

logger = logging.getLogger(__name__)

LOOPBACK = "127.0.0.1"
# Measured with Ray 2.60 on Linux: _node_ip_address=127.0.0.1 alone still bound Ray's ports on the machine's own
# address and on "::"; with RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 as well every port listens on 127.0.0.1 (the test
# reads /proc/net/tcp*). Usage statistics off: no report leaves the machine.
# Ray reads the first when it is imported, so it is set here, before this module imports ray; a process that imported
# ray earlier must set it itself (start_local_cluster warns).
_LOOPBACK_ENVIRONMENT = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0"}
_RAY_IMPORTED_FIRST = "ray" in sys.modules and os.environ.get("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER") != "0"
for _name, _value in _LOOPBACK_ENVIRONMENT.items():
    os.environ.setdefault(_name, _value)
# A local cluster started for a RayEnvs offers every custom resource it asks for (everything runs on this machine)
LOCAL_RESOURCE_CAPACITY = 1_000_000.0
# How often a RayEnvs waiting for its actors to be placed says so (it waits as long as the cluster needs)
PLACEMENT_REPORT_SECONDS = 30.0
_LOCAL_CLUSTERS: set[str] = set()  # GCS addresses of the clusters start_local_cluster started in this process


def _ray():
    try:
        import ray
    except ModuleNotFoundError as error:
        raise RlaError('the ray env backend needs Ray: pip install "rla[ray]"') from error
    return ray


def start_local_cluster(*, num_cpus: int | None = None, resources: Mapping[str, float] | None = None) -> None:
    """Start a Ray cluster on this machine, every socket on 127.0.0.1, usage statistics off.

    ``num_cpus``: logical CPUs it offers (default: this machine's cores); ``resources``: custom resources it offers.
    """
    ray = _ray()
    if ray.is_initialized():
        raise RlaError("this process is already connected to a Ray cluster; call ray.shutdown() first")
    if _RAY_IMPORTED_FIRST:
        logger.warning("ray was imported before rla_train.rollout.ray_envs without RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0: "
                       "the local cluster may listen beyond 127.0.0.1. Import this module first, or set the variable.")
    ray.init(num_cpus=num_cpus or os.cpu_count() or 1, resources=dict(resources or {}), include_dashboard=False,
             _node_ip_address=LOOPBACK, log_to_driver=False, configure_logging=False)
    _LOCAL_CLUSTERS.add(ray.get_runtime_context().gcs_address)
    logger.info("started a local Ray cluster on %s (%s)", LOOPBACK, ray.cluster_resources())


def _on_local_cluster(ray) -> bool:
    """Whether this process is connected to a local cluster that :func:`start_local_cluster` started."""
    return ray.get_runtime_context().gcs_address in _LOCAL_CLUSTERS


class RayEnvs(ClosesOnExit):
    """``num_slots`` envs spread over ``workers`` Ray actors (slot ``s`` lives in actor ``s % workers``).

    Args:
        factory: an env factory Ray can pickle (e.g. :class:`~rla_train.rollout.envs.EnvSpec`).
        num_slots: how many envs in all.
        workers: how many actors (at most ``num_slots``).
        address: the cluster to join (see the module docstring); none: this process's connection or a local cluster.
        resources: custom resources each actor needs, e.g. ``{"desktop": 1}``.
        num_cpus: logical CPUs each actor reserves (default: 0 on a local cluster rla started, else 1).
    """

    def __init__(self, factory: Callable[[], Any], num_slots: int, *, workers: int = 1, address: str | None = None,
                 resources: Mapping[str, float] | None = None, num_cpus: float | None = None):
        if num_slots < 1:
            raise ValueError(f"num_slots must be >= 1, got {num_slots}")
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        ray = _ray()
        self.num_slots = int(num_slots)
        self.workers = min(int(workers), self.num_slots)
        self.resources = {str(name): float(amount) for name, amount in (resources or {}).items()}
        if not ray.is_initialized():
            if address:
                ray.init(address=address, log_to_driver=False, configure_logging=False)
            else:
                start_local_cluster(resources={name: LOCAL_RESOURCE_CAPACITY for name in self.resources})
        self.num_cpus = float(num_cpus if num_cpus is not None else (0 if _on_local_cluster(ray) else 1))
        self._check_placeable(ray.cluster_resources())
        self._actor_class = ray.remote(EnvSlots).options(num_cpus=self.num_cpus, resources=self.resources or None,
                                                         max_restarts=0)
        self._factory = factory
        self._actors = [self._actor_class.remote(factory) for _ in range(self.workers)]
        self._lost: set[int] = set()  # slots whose actor died while their episode was live
        self.replaced = 0  # actors replaced after dying
        self._wait_until_placed(self._actors)

    def _wait_until_placed(self, actors: list) -> None:
        """Wait for the actors to start, saying every PLACEMENT_REPORT_SECONDS which still wait for resources."""
        ray = _ray()
        pending = [actor.__ray_ready__.remote() for actor in actors]
        while pending:
            _, pending = ray.wait(pending, num_returns=len(pending), timeout=PLACEMENT_REPORT_SECONDS)
            if pending:
                logger.warning("%d of %d env Ray actors are still waiting to be placed (each asks for %s CPU and %s; "
                               "free now: %s)", len(pending), len(actors), self.num_cpus, self.resources or "no custom "
                               "resources", ray.available_resources())

    def _check_placeable(self, offered: Mapping[str, float]) -> None:
        asked = {**self.resources, "CPU": self.num_cpus}
        missing = {name: amount for name, amount in asked.items() if amount > offered.get(name, 0.0)}
        if missing:
            raise RlaError(f"no Ray node can host an env actor asking for {missing}: the cluster offers "
                           f"{dict(offered)}. Declare the resources on the nodes that run the envs' provider "
                           "(ray start --resources '{\"desktop\": 8}'), or ask for less.")

    def _run(self, method: str, calls: Mapping[int, Any]) -> dict[int, Any]:
        ray = _ray()
        per_actor: dict[int, dict[int, Any]] = {}
        results: dict[int, Any] = {}
        for slot, argument in calls.items():
            if not 0 <= slot < self.num_slots:
                raise ValueError(f"slot {slot} is out of range 0..{self.num_slots - 1}")
            if method == "step" and slot in self._lost:  # its env died with its actor: the episode has ended
                self._lost.discard(slot)
                results[slot] = EnvFailure("the env's Ray actor died during this episode; a new actor replaced it",
                                           infrastructure=True)
                continue
            self._lost.discard(slot)
            per_actor.setdefault(slot % self.workers, {})[slot] = argument
        futures = {index: self._actors[index].run.remote(method, batch) for index, batch in per_actor.items()}
        for index, future in futures.items():
            try:
                results.update(ray.get(future))
            except ray.exceptions.RayActorError as error:
                failure = EnvFailure(f"the env's Ray actor {index} died: {type(error).__name__}", str(error),
                                     infrastructure=True)
                results.update({slot: failure for slot in per_actor[index]})
                self._replace(index, handled=per_actor[index])
            except ray.exceptions.RayError as error:  # the call failed in the actor, which still runs
                failure = EnvFailure(f"the env call failed on Ray actor {index}: {type(error).__name__}", str(error),
                                     infrastructure=True)
                results.update({slot: failure for slot in per_actor[index]})
        return results

    def _replace(self, index: int, handled: Mapping[int, Any]) -> None:
        """A fresh actor for dead actor ``index``; its other slots' live episodes end on their next step."""
        logger.warning("env Ray actor %d died; replacing it (the episodes of its slots end)", index)
        _ray().kill(self._actors[index], no_restart=True)
        self._actors[index] = self._actor_class.remote(self._factory)
        self._wait_until_placed([self._actors[index]])
        self._lost.update(slot for slot in range(index, self.num_slots, self.workers) if slot not in handled)
        self.replaced += 1

    def reset_many(self, calls: Mapping[int, tuple[Task | None, int | None]]) -> dict[int, Any]:
        """Reset each slot with ``(task, seed)``, all actors at once."""
        return self._run("reset", calls)

    def step_many(self, calls: Mapping[int, Any]) -> dict[int, Any]:
        """Step each slot with its action, all actors at once."""
        return self._run("step", calls)

    def close(self) -> None:
        """Close every actor's envs and end the actors (the cluster keeps running)."""
        ray = _ray()
        actors, self._actors = self._actors, []
        closing = [actor.close.remote() for actor in actors]
        for actor, done in zip(actors, closing, strict=True):
            try:
                ray.get(done)
            except ray.exceptions.RayError as error:  # a dead actor has no envs left to close
                logger.warning("an env Ray actor could not close its envs: %s", error)
            ray.kill(actor, no_restart=True)
