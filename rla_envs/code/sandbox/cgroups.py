"""Per-slot cgroups of the local sandbox: one total CPU, memory and process bound for everything a run starts.

RLIMITs bound each process (and RLIMIT_NPROC each uid), not a run as a whole: a program that forks spinners
or several big allocations takes CPU and memory from the other slots and the host. Each slot therefore gets
a cgroup, made by the host when the sandbox starts (root only) and removed at close:

* **cgroup v2** (``/sys/fs/cgroup`` is a cgroup2 mount offering ``cpu memory pids``):
  ``/sys/fs/cgroup/rla-sandbox/<uid>`` with ``cpu.max``, ``memory.max``, ``memory.swap.max`` and ``pids.max``;
* **cgroup v1** (one mount per controller, ``/sys/fs/cgroup/{cpu,memory,pids}``):
  ``<controller>/<the host process's own cgroup>/rla-sandbox/<uid>`` (nested, so that whatever bounds the
  host bounds its sandbox too) with ``cpu.cfs_quota_us``, ``memory.limit_in_bytes`` (and
  ``memory.memsw.limit_in_bytes`` where swap is accounted) and ``pids.max``.

A session's monitor joins its slot's cgroup before it forks the worker, so every process of the run is
inside from its first instruction; sibling cgroups share the CPU by equal weight, so a slot full of spinners
gets no more CPU than a slot running one honest program, and never more than ``cpus`` cores. The CPU quota
is set once; the memory and pids bounds are set by the host for each run, from its :class:`Limits`, before
the program is handed over (:meth:`SlotCgroup.limit_run`). What a slot may hold in memory is
``memory_mb + work_mb`` (its processes and its work-dir tmpfs) plus :data:`SANDBOX_OVERHEAD_MB` for the
sandbox's own two processes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

__all__ = ["SlotCgroup", "make_slot_cgroups", "run_limit_files", "CPU_PERIOD_US", "SANDBOX_OVERHEAD_MB"]

ROOT = "/sys/fs/cgroup"
GROUP = "rla-sandbox"
CONTROLLERS = ("cpu", "memory", "pids")
CPU_PERIOD_US = 100_000
SANDBOX_OVERHEAD_MB = 64
"""Memory a slot may hold beyond the run's own limits: the monitor and the worker's interpreter."""
SANDBOX_PROCESSES = 2
"""Tasks of a slot that are not the program's: the monitor, and the previous session's monitor on its way out."""


def run_limit_files(version: int, memory_mb: int, work_mb: int, processes: int) -> dict[str, str]:
    """The per-run files of a slot's cgroup and what to write in them (paths relative to the slot's dirs).

    >>> run_limit_files(2, 1024, 64, 64)["memory.max"]  # (1024 + 64 + 64) MiB
    '1207959552'
    """
    memory = (memory_mb + work_mb + SANDBOX_OVERHEAD_MB) << 20
    pids = str(processes + SANDBOX_PROCESSES)
    if version == 2:
        return {"memory.max": str(memory), "memory.swap.max": "0", "pids.max": pids}
    return {"memory/memory.limit_in_bytes": str(memory), "memory/memory.memsw.limit_in_bytes": str(memory),
            "pids/pids.max": pids}


def cpu_quota_files(version: int, cpus: float) -> dict[str, str]:
    """The CPU bound of a slot: ``cpus`` cores' worth of time per period."""
    quota = max(1000, int(cpus * CPU_PERIOD_US))
    if version == 2:
        return {"cpu.max": f"{quota} {CPU_PERIOD_US}"}
    return {"cpu/cpu.cfs_period_us": str(CPU_PERIOD_US), "cpu/cpu.cfs_quota_us": str(quota)}


@dataclass
class SlotCgroup:
    """The cgroup (v2) or the three controller cgroups (v1) of one slot."""

    version: int
    dirs: dict[str, str] = field(default_factory=dict)
    """Controller (``""`` for v2) -> the slot's directory."""
    _bounds: dict[str, str] = field(default_factory=dict, repr=False)  # what limit_run last wrote

    @property
    def procs_files(self) -> list[str]:
        """The ``cgroup.procs`` files a process writes ``0`` to, to join the slot."""
        return [os.path.join(d, "cgroup.procs") for d in self.dirs.values()]

    def _path(self, relative: str) -> str:
        controller, _, name = relative.rpartition("/")
        return os.path.join(self.dirs[controller], name)

    def write(self, files: dict[str, str]) -> None:
        """Write each value to its file (a file this kernel lacks, such as memsw without swap accounting, is skipped)."""
        items = list(files.items())
        memsw = [(k, v) for k, v in items if k.endswith("memsw.limit_in_bytes")]
        if memsw and os.path.exists(self._path(memsw[0][0])):
            # v1 keeps memsw >= limit at every moment: raise memsw first, lower it last.
            current = int(_read(self._path("memory/memory.limit_in_bytes")))
            others = [(k, v) for k, v in items if (k, v) not in memsw]
            items = memsw + others if int(memsw[0][1]) > current else others + memsw
        for relative, value in items:
            path = self._path(relative)
            if relative.endswith("memsw.limit_in_bytes") and not os.path.exists(path):
                continue
            with open(path, "w") as handle:
                handle.write(value)

    def limit_run(self, memory_mb: int, work_mb: int, processes: int) -> None:
        """Bound the next run of this slot: its processes' memory and work dir, and its process count
        (nothing is written when the previous run of the slot had the same bounds)."""
        files = run_limit_files(self.version, memory_mb, work_mb, processes)
        if files != self._bounds:
            self._bounds = {}
            self.write(files)
            self._bounds = files

    def remove(self, wait_s: float = 1.0) -> None:
        """Remove the slot's directories, waiting up to ``wait_s`` for the last processes to leave (a dir
        still busy then stays: the next sandbox on these uids reuses it)."""
        import time

        deadline = time.monotonic() + wait_s
        for path in self.dirs.values():
            while True:
                try:
                    os.rmdir(path)
                    break
                except FileNotFoundError:
                    break
                except OSError:  # EBUSY: a killed process of the slot is still on its way out
                    if time.monotonic() >= deadline:
                        break
                    time.sleep(0.01)
            try:
                os.rmdir(os.path.dirname(path))  # the shared rla-sandbox dir, if this was its last slot
            except OSError:  # another sandbox's slots are still there
                pass


def detect(root: str = ROOT) -> int:
    """Which cgroup hierarchy this machine offers the sandbox: 2, 1, or 0 (none it can use)."""
    controllers = _read(os.path.join(root, "cgroup.controllers"))
    if controllers is not None:
        return 2 if set(CONTROLLERS) <= set(controllers.split()) and os.access(root, os.W_OK) else 0
    if all(os.path.exists(os.path.join(root, c, "cgroup.procs")) and os.access(os.path.join(root, c), os.W_OK)
           for c in CONTROLLERS):
        return 1
    return 0


def make_slot_cgroups(uids: list[int], cpus: float, processes: int, root: str = ROOT,
                      own: str = "/proc/self/cgroup") -> tuple[dict, str]:
    """Create (or reuse) a cgroup per uid with the CPU quota and a first memory/pids bound.

    Returns ``({uid: SlotCgroup}, "")``, or ``({}, why)`` when this machine offers no usable cgroup (not
    root, no writable hierarchy, controllers missing): the sandbox then reports ``cgroup=False``.
    """
    version = detect(root)
    if not version:
        return {}, f"no writable cgroup hierarchy with {' '.join(CONTROLLERS)} under {root}"
    made: dict[int, SlotCgroup] = {}
    try:
        if version == 2:
            _enable_v2(root)
        for uid in uids:
            if version == 2:
                dirs = {"": os.path.join(root, GROUP, str(uid))}
            else:
                dirs = {c: os.path.join(root, c, _own_path(c, own).lstrip("/"), GROUP, str(uid)) for c in CONTROLLERS}
            cgroup = SlotCgroup(version, dirs)
            made[uid] = cgroup
            for path in dirs.values():
                os.makedirs(path, mode=0o755, exist_ok=True)
            cgroup.write(cpu_quota_files(version, cpus))
            cgroup.limit_run(memory_mb=1024, work_mb=0, processes=processes)
    except OSError as exc:
        for cgroup in made.values():
            cgroup.remove()
        return {}, f"cannot set up the slot cgroups (v{version}) under {root}: {exc}"
    return made, ""


def _enable_v2(root: str) -> None:
    """Delegate cpu, memory and pids to ``root/rla-sandbox``'s children."""
    group = os.path.join(root, GROUP)
    os.makedirs(group, mode=0o755, exist_ok=True)
    wanted = " ".join(f"+{c}" for c in CONTROLLERS)
    for directory in (root, group):
        enabled = set((_read(os.path.join(directory, "cgroup.subtree_control")) or "").split())
        if not set(CONTROLLERS) <= enabled:
            with open(os.path.join(directory, "cgroup.subtree_control"), "w") as handle:
                handle.write(wanted)


def _own_path(controller: str, own: str) -> str:
    """This process's cgroup in the v1 hierarchy of ``controller`` (``/`` if ``own`` does not say)."""
    for line in (_read(own) or "").splitlines():
        _, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            return path
    return "/"


def join(procs_files: list[str]) -> None:
    """Move the calling process into a slot's cgroup (its children are born inside)."""
    for path in procs_files:
        with open(path, "w") as handle:
            handle.write("0")


def _read(path: str) -> str | None:
    try:
        with open(path) as handle:
            return handle.read().strip()
    except OSError:
        return None
