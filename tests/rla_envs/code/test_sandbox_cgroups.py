"""The slot cgroups' files, on fake cgroup trees (v1 and v2), and the SysV sweep of the docker agent."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rla_envs.code.sandbox import cgroups, confine


def test_run_limits_bound_processes_work_dir_and_the_sandbox_together():
    # (512 + 32 + 64) MiB = 608 MiB = 637534208 bytes; pids: 16 of the program + 2 of the sandbox
    assert cgroups.run_limit_files(2, 512, 32, 16) == {"memory.max": "637534208", "memory.swap.max": "0",
                                                       "pids.max": "18"}
    assert cgroups.run_limit_files(1, 512, 32, 16) == {"memory/memory.limit_in_bytes": "637534208",
                                                       "memory/memory.memsw.limit_in_bytes": "637534208",
                                                       "pids/pids.max": "18"}
    assert cgroups.cpu_quota_files(2, 1.5) == {"cpu.max": "150000 100000"}


def fake_v1(root: Path) -> Path:
    for controller in cgroups.CONTROLLERS:
        (root / controller).mkdir()
        (root / controller / "cgroup.procs").write_text("")
    own = root / "self-cgroup"
    own.write_text("4:memory:/jobs/42\n8:pids:/\n1:cpu:/\n0::/\n")
    return own


def test_v1_slots_nest_under_the_host_cgroup_and_carry_the_quota(tmp_path):
    own = fake_v1(tmp_path)
    assert cgroups.detect(str(tmp_path)) == 1
    made, why = cgroups.make_slot_cgroups([70000, 70001], cpus=0.5, processes=64, root=str(tmp_path), own=str(own))
    assert why == "" and sorted(made) == [70000, 70001]
    slot = tmp_path / "memory" / "jobs" / "42" / "rla-sandbox" / "70001"
    assert made[70001].dirs["memory"] == str(slot)
    assert (tmp_path / "cpu/rla-sandbox/70001/cpu.cfs_quota_us").read_text() == "50000"
    assert (tmp_path / "cpu/rla-sandbox/70001/cpu.cfs_period_us").read_text() == "100000"
    made[70001].limit_run(memory_mb=256, work_mb=64, processes=8)
    assert (slot / "memory.limit_in_bytes").read_text() == str((256 + 64 + 64) << 20)
    assert not (slot / "memory.memsw.limit_in_bytes").exists()  # no swap accounting here: not made up
    assert (tmp_path / "pids/rla-sandbox/70001/pids.max").read_text() == "10"
    assert made[70000].procs_files == [str(tmp_path / "cpu/rla-sandbox/70000/cgroup.procs"),
                                       str(tmp_path / "memory/jobs/42/rla-sandbox/70000/cgroup.procs"),
                                       str(tmp_path / "pids/rla-sandbox/70000/cgroup.procs")]


def test_v1_swap_bound_is_set_with_the_memory_bound_when_swap_is_accounted(tmp_path):
    own = fake_v1(tmp_path)
    made, _ = cgroups.make_slot_cgroups([70000], cpus=1.0, processes=64, root=str(tmp_path), own=str(own))
    slot = Path(made[70000].dirs["memory"])
    (slot / "memory.memsw.limit_in_bytes").write_text(str(1 << 40))
    for memory_mb in (2048, 128):
        made[70000].limit_run(memory_mb=memory_mb, work_mb=0, processes=4)
        want = str((memory_mb + 64) << 20)
        assert (slot / "memory.limit_in_bytes").read_text() == (slot / "memory.memsw.limit_in_bytes").read_text() == want


def test_v2_slots_get_the_controllers_delegated(tmp_path):
    (tmp_path / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    (tmp_path / "cgroup.subtree_control").write_text("")
    assert cgroups.detect(str(tmp_path)) == 2
    made, why = cgroups.make_slot_cgroups([70000], cpus=1.0, processes=64, root=str(tmp_path))
    assert why == ""
    slot = tmp_path / "rla-sandbox" / "70000"
    assert (tmp_path / "cgroup.subtree_control").read_text() == "+cpu +memory +pids"
    assert (tmp_path / "rla-sandbox" / "cgroup.subtree_control").read_text() == "+cpu +memory +pids"
    assert (slot / "cpu.max").read_text() == "100000 100000"
    made[70000].limit_run(memory_mb=100, work_mb=16, processes=30)
    assert [(slot / f).read_text() for f in ("memory.max", "memory.swap.max", "pids.max")] == \
        [str((100 + 16 + 64) << 20), "0", "32"]
    assert made[70000].procs_files == [str(slot / "cgroup.procs")]


def test_no_usable_hierarchy_is_reported_not_raised(tmp_path):
    assert cgroups.detect(str(tmp_path)) == 0
    made, why = cgroups.make_slot_cgroups([70000], cpus=1.0, processes=64, root=str(tmp_path))
    assert made == {} and "no writable cgroup hierarchy" in why
    (tmp_path / "cgroup.controllers").write_text("cpu io\n")  # v2 without memory and pids
    assert cgroups.detect(str(tmp_path)) == 0


def test_remove_sysv_ipc_empties_an_ipc_namespace():
    if os.geteuid() != 0:
        pytest.skip("a fresh IPC namespace needs root")
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            confine.unshare(confine.CLONE_NEWIPC)
            made = [libc.shmget(0, 4096, 0o1600), libc.msgget(0, 0o1600), libc.semget(0, 1, 0o1600)]
            removed = confine.remove_sysv_ipc()
            left = [len(Path(f"/proc/sysvipc/{k}").read_text().splitlines()) - 1 for k in ("shm", "msg", "sem")]
            os.write(write_fd, json.dumps([made, removed, left]).encode())
        finally:
            os._exit(0)
    os.close(write_fd)
    made, removed, left = json.loads(os.read(read_fd, 4096))
    os.close(read_fd)
    os.waitpid(pid, 0)
    assert all(ident >= 0 for ident in made) and removed == 3 and left == [0, 0, 0]
