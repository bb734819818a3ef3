"""The docker sandbox's container settings, checked without a Docker-API server (the SDK is called with a fake).

What the containers must hold for slots to be isolated: an IPC namespace of their own without ``/dev/shm``, a
sized tmpfs work dir, pids, memory and CPU bounds, no network, and a uid block clear of nobody's 65534.
"""

from __future__ import annotations

import types

import pytest

from rla_envs.code.sandbox.docker import check_settings
from rla_envs.code.sandbox.docker_container import AgentContainer

pytest.importorskip("docker", reason='the docker SDK is not installed (pip install "rla[docker]")')


class FakeContainers:
    def __init__(self) -> None:
        self.created: list[dict] = []

    def create(self, image, **kwargs):
        self.created.append(dict(kwargs, image=image))
        return types.SimpleNamespace(id="fake")


def created_config(**settings) -> dict:
    """The keyword arguments slot 1's container is created with, for a sandbox with ``settings``."""
    defaults = dict(image="rla-code-sandbox:test", uid_base=62000, work_mb=32, memory_mb=512, pids_limit=128,
                    cpus=0.5, instance="abc")
    containers = FakeContainers()
    sandbox = types.SimpleNamespace(client=types.SimpleNamespace(containers=containers), **{**defaults, **settings})
    slot = object.__new__(AgentContainer)  # no _start(): nothing is run, only the settings are built
    slot._sandbox, slot.index = sandbox, 1
    slot._create()
    [config] = containers.created
    return config


def test_each_container_has_its_own_ipc_tmpfs_and_bounds():
    config = created_config()
    assert config["ipc_mode"] == "none"  # a private IPC namespace, no /dev/shm shared with anything
    assert config["network_mode"] == "none" and config["read_only"] is True
    assert config["tmpfs"] == {"/work": "rw,nosuid,nodev,noexec,size=32m,mode=1777"}
    assert config["mem_limit"] == config["memswap_limit"] == "512m"
    assert config["pids_limit"] == 128 and config["nano_cpus"] == 500_000_000
    assert config["cap_drop"] == ["ALL"] and "no-new-privileges" in config["security_opt"]
    assert config["user"] == "62001:62001"


@pytest.mark.parametrize("uid_base, slots", [(65534, 1), (65533, 2)])
def test_a_uid_block_holding_nobody_is_refused(uid_base, slots):
    with pytest.raises(ValueError, match="65534"):
        check_settings(slots, uid_base, memory_mb=512, pids_limit=64, work_mb=16, cpus=1.0)


def test_settings_that_cannot_bound_a_slot_are_refused():
    check_settings(2, 62000, memory_mb=512, pids_limit=64, work_mb=16, cpus=1.0)
    with pytest.raises(ValueError, match="cpus"):
        check_settings(2, 62000, memory_mb=512, pids_limit=64, work_mb=16, cpus=0)
