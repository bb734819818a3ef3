"""The shared sandbox-attack corpus against the docker backend (marker ``docker``): the same harness as
``test_sandbox_attacks.py`` (every attack scores 0, every host check of its manifest holds).

Needs a Docker-API server (``DOCKER_HOST``; without a Docker daemon start podman's with
``export DOCKER_HOST=$(scripts/start-docker-api.sh)``) and the image built by
``containers/code-sandbox/build.sh``; skips with the reason otherwise.

With docker the sandbox uids also run the sandbox's own long-lived processes: in each slot's container
the agent (the container's pid 1, ``State.Pid`` on the host) and, after every session's sweep, a fresh
warm spare (agent -> monitor -> worker). Only that exact shape is exempt from "no process of the run
survives it"; any other process of the sandbox uids, or any process named sbx_attack, is a survivor.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.rla_envs.code import test_sandbox_attacks as harness
from tests.rla_envs.code.test_sandbox_attacks import CORPUS, SLOTS, host, test_attack_is_contained  # noqa: F401

from rla_envs.code.sandbox import SandboxError, make_sandbox
from rla_envs.core.docker import connect
from rla_envs.core.errors import MissingDependency

pytestmark = [pytest.mark.docker,
              pytest.mark.skipif(not CORPUS.is_dir(), reason=f"attack corpus not found at {CORPUS}")]

SETTLE_S = 3.0  # how long to wait for a slot's agent to have made its fresh spare after a session


def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            ppid = int(Path(f"/proc/{entry}/stat").read_text().rpartition(")")[2].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        kids.setdefault(ppid, []).append(int(entry))
    return kids


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _started(pid: int) -> int:
    """Start time of ``pid`` in clock ticks since boot (0 if gone)."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[19])
    except (OSError, IndexError, ValueError):
        return 0


def _subtree(root: int, kids: dict[int, list[int]]) -> list[tuple[int, int, str]]:
    """(depth, pid, comm) of ``root`` and every live descendant."""
    out, stack = [], [(root, 0)]
    while stack:
        pid, depth = stack.pop()
        out.append((depth, pid, _comm(pid)))
        stack += [(child, depth + 1) for child in kids.get(pid, [])]
    return out


def _agent_pids(box) -> list[int]:
    pids = []
    for slot in list(box._slots):
        container = slot.container
        if container is None:
            continue
        try:
            container.reload()
        except Exception:
            continue
        pid = (container.attrs.get("State") or {}).get("Pid") or 0
        if pid > 0:
            pids.append(pid)
    return pids


def docker_own_processes(box, shape: list[tuple[int, str]]):
    """``harness.own_processes`` for ``box``: each container's agent, and its descendants while they form
    exactly the warm-spare shape recorded at start (waiting up to SETTLE_S for the agent to make it).
    When a container holds more, only the agent and its newest child subtree of the spare's shape stay
    exempt (so that cleanup does not kill the spare); everything else in it counts as a survivor."""
    spare_shape = sorted((depth - 1, comm) for depth, comm in shape if depth > 0)

    def own() -> set[int]:
        deadline = time.monotonic() + SETTLE_S
        while True:
            kids = _children()
            pids: set[int] = set()
            settled = True
            for agent in _agent_pids(box):
                tree = _subtree(agent, kids)
                pids.add(agent)
                if sorted((depth, comm) for depth, _, comm in tree) == shape:
                    pids.update(pid for _, pid, _ in tree)
                    continue
                settled = False
                spares = [(_started(child), [pid for _, pid, _ in subtree]) for child in kids.get(agent, [])
                          for subtree in [_subtree(child, kids)]
                          if sorted((depth, comm) for depth, _, comm in subtree) == spare_shape]
                if spares:
                    pids.update(max(spares)[1])
            if settled or time.monotonic() >= deadline:
                return pids
            time.sleep(0.05)

    return own


def _free_uid_base() -> int:
    """A block of SLOTS uids that no process uses now (other sandboxes, local or docker, may run meanwhile:
    the survivor check kills whatever runs as our uids)."""
    used = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                used.add(os.stat(f"/proc/{entry}").st_uid)
            except OSError:
                pass
    for base in range(63100, 65500 - SLOTS, 7 * SLOTS):
        if not used & set(range(base, base + SLOTS)):
            return base
    pytest.skip("no free block of sandbox uids")


@pytest.fixture(scope="module")
def sandbox(host):  # noqa: F811 - overrides the local harness's fixture of the same name
    try:
        connect(error=SandboxError)
    except (SandboxError, MissingDependency) as exc:
        pytest.skip(f"no Docker-API socket: {exc}")
    try:
        box = make_sandbox("docker", slots=SLOTS, uid_base=_free_uid_base())
    except SandboxError as exc:
        if "image" in str(exc):
            pytest.skip(f"sandbox image unavailable: {exc}")
        raise
    # The shape of a fresh slot: the agent and its warm spare, none of them a run's.
    deadline = time.monotonic() + 10
    while True:
        kids = _children()
        shapes = [sorted((depth, comm) for depth, _, comm in _subtree(agent, kids)) for agent in _agent_pids(box)]
        if len(shapes) == SLOTS and all(s == shapes[0] for s in shapes) and len(shapes[0]) > 1:
            break
        if time.monotonic() >= deadline:
            box.close()
            pytest.fail(f"the docker slots never settled into one warm-spare shape: {shapes}")
        time.sleep(0.05)
    saved = harness.OUR_UIDS, harness.own_processes
    harness.OUR_UIDS = range(box.uid_base, box.uid_base + SLOTS)
    harness.own_processes = docker_own_processes(box, shapes[0])
    try:
        yield box
    finally:
        harness.OUR_UIDS, harness.own_processes = saved
        box.close()
