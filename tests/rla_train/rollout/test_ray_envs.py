"""RayEnvs on a local loopback-only Ray cluster: real AlfWorld and TextWorld envs, the same transcripts as env
processes, a crashed actor replaced, custom resources honoured, and no socket outside 127.0.0.0/8.

Marked ``ray`` (``python -m pytest -m ray``; CI runs it): starting the cluster costs ~10 s.
"""

from __future__ import annotations

import ipaddress
import os

import gymnasium as gym
import pytest

from rla_train.agents import TextGameAgent
from rla_train.backends.scripted import ScriptedBackend
from rla_train.rollout.engine import RolloutEngine
from rla_train.rollout.envs import EnvFailure, EnvSpec
from tests.rla_envs.alfworld.conftest import alfworld_cache, alfworld_tasks  # noqa: F401  (session fixtures)
from tests.rla_train.rollout.test_engine import first_admissible
from tests.rla_envs.textworld.conftest import tw_cache, tw_tasks  # noqa: F401  (session fixtures)

from rla_train.rollout.ray_envs import RayEnvs, start_local_cluster  # before ray: it keeps Ray on loopback

ray = pytest.importorskip("ray", reason='Ray is not installed (pip install "rla[ray]")')
psutil = pytest.importorskip("psutil")

pytestmark = pytest.mark.ray

OFFERED = {"desktop": 4.0}


def _local_address(connection) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    if not connection.laddr:
        return None
    address = ipaddress.ip_address(connection.laddr.ip.split("%")[0])
    return getattr(address, "ipv4_mapped", None) or address


def _ray_sockets() -> list[tuple[int, str, object]]:
    """Every inet socket of this process and its descendants (the GCS, the raylet, the actors' workers)."""
    me = psutil.Process()
    found = []
    for process in [me, *me.children(recursive=True)]:
        try:
            connections = process.net_connections(kind="inet")
        except (psutil.NoSuchProcess, psutil.AccessDenied):  # a worker that exited while listed
            continue
        found += [(process.pid, process.name(), connection) for connection in connections]
    return found


@pytest.fixture(scope="module")
def cluster():
    if ray.is_initialized():
        ray.shutdown()
    start_local_cluster(num_cpus=2, resources=OFFERED)
    yield
    ray.shutdown()


class CrashOnAction(gym.Wrapper):
    """A TextWorld env whose worker process dies (os._exit) when the agent sends ``crash``."""

    def __init__(self):
        import rla_envs  # noqa: F401  (registers the ids in the actor's process)

        super().__init__(gym.make("rla/TextWorld-v0", disable_env_checker=True))

    def step(self, action):
        if action == "crash":
            os._exit(3)
        return self.env.step(action)


def _transcripts(env_id, tasks, **engine_options):
    with RolloutEngine(env_id, backend=ScriptedBackend(first_admissible), num_envs=4, progress=False,
                       env_options={"max_steps": 5}, **engine_options) as engine:
        return [(e.task_id, e.seed, e.actions, e.observations, e.reward, e.error) for e in engine.run(tasks, group_size=2)]


@pytest.mark.parametrize("env_id", ["rla/AlfWorld-v0", "rla/TextWorld-v0"])
def test_ray_actors_give_the_transcripts_of_env_processes(cluster, env_id, alfworld_tasks, tw_tasks):
    tasks = alfworld_tasks[:3] if env_id == "rla/AlfWorld-v0" else tw_tasks[:3]
    by_processes = _transcripts(env_id, tasks, workers=2)
    by_ray = _transcripts(env_id, tasks, workers=2, env_backend="ray")
    assert len(by_ray) == 6 and all(len(actions) == 5 for _, _, actions, *_ in by_ray)
    assert by_ray == by_processes


def test_a_crashed_actor_ends_only_its_episodes_and_is_replaced(cluster, tw_tasks):
    task = tw_tasks[0]
    with RayEnvs(CrashOnAction, num_slots=4, workers=2) as envs:
        resets = envs.reset_many({slot: (task, slot) for slot in range(4)})
        assert not any(isinstance(r, EnvFailure) for r in resets.values())
        # slot 1 lives in actor 1 with slot 3; its crash ends slot 1's episode now and slot 3's on its next step
        stepped = envs.step_many({0: "look", 1: "crash"})
        assert isinstance(stepped[1], EnvFailure) and "actor 1 died" in stepped[1].error
        assert stepped[1].infrastructure  # not the agent's doing: dropped from training, counted apart
        assert not isinstance(stepped[0], EnvFailure) and envs.replaced == 1
        after = envs.step_many({0: "look", 2: "look", 3: "look"})
        assert isinstance(after[3], EnvFailure) and "died during this episode" in after[3].error
        assert after[3].infrastructure
        assert not isinstance(after[0], EnvFailure) and not isinstance(after[2], EnvFailure)
        # the replacement actor builds its envs again: slots 1 and 3 play a new episode as before
        again = envs.reset_many({1: (task, 1), 3: (task, 3)})
        assert again[1][0] == resets[1][0] and again[3][0] == resets[3][0]
        assert not isinstance(envs.step_many({1: "look"})[1], EnvFailure)


def test_actors_take_the_custom_resources_they_ask_for(cluster):
    before = ray.available_resources().get("desktop", 0.0)
    with RayEnvs(EnvSpec("rla/TextWorld-v0"), num_slots=2, workers=2, resources={"desktop": 1}) as envs:
        envs.reset_many({0: (None, 0), 1: (None, 1)})  # both actors are placed and answer
        assert ray.available_resources().get("desktop", 0.0) == before - 2
    with pytest.raises(Exception, match="no Ray node can host an env actor asking for {'vm': 1.0}"):
        RayEnvs(EnvSpec("rla/TextWorld-v0"), num_slots=1, workers=1, resources={"vm": 1})


def test_every_ray_socket_is_on_loopback(cluster, tw_tasks):
    with RayEnvs(EnvSpec("rla/TextWorld-v0", tasks=tw_tasks[:1]), num_slots=2, workers=2) as envs:
        envs.reset_many({0: (None, 0), 1: (None, 1)})
        sockets = _ray_sockets()
        listening = [s for s in sockets if s[2].status == psutil.CONN_LISTEN]
        assert len(listening) >= 3  # the GCS, the raylet, the object manager (at least)
        outside = [(pid, name, c.laddr) for pid, name, c in sockets
                   if _local_address(c) is not None and not _local_address(c).is_loopback]
        assert outside == []


def test_the_engine_refuses_ray_without_workers():
    with pytest.raises(ValueError, match="ray env backend needs workers >= 1"):
        RolloutEngine("rla/TextWorld-v0", TextGameAgent(), ScriptedBackend(first_admissible), num_envs=2,
                      env_backend="ray", progress=False)


@pytest.mark.timeout(1800)  # two co-training runs: past the suite's 600 s on 2 cores shared with 4 training runs
def test_co_training_on_ray_env_workers_computes_what_it_computes_on_processes(cluster, alfworld_cache, tmp_path):
    """One co-training step (policy, judge, pool) with env.backend=ray: the same metrics as with env processes."""
    from rla_train.config import load_config
    from rla_train.cotrainer.loop import train
    from tests.rla_train.cotrainer.test_cotrain import SMALL, metrics, stable

    rows = {}
    for backend in ("process", "ray"):
        out = tmp_path / backend
        config = load_config(None, [*SMALL, "train.steps=1", "env.workers=2", f"env.backend={backend}",
                                    f"output.dir={out}"])
        train(config, progress=False)
        rows[backend] = [stable(row) for row in metrics(out)]
    assert len(rows["ray"]) == 1 and rows["ray"][0]["policy_samples"] > 0
    assert rows["ray"] == rows["process"]
