"""The local sandbox's slots: a run sees and affects nothing of another run or of the host.

Each test holds a session open in one slot (its program runs at load and stays alive) while a run in the
other slot, or the host, looks for what it left: SysV IPC objects, a Unix-socket service, the work dir's
space, CPU and memory taken from the others, the uids it runs as.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import sysconfig
import tempfile
import time
from pathlib import Path

import pytest

from rla_envs.code.sandbox import Call, Limits
from tests.rla_envs.code.test_sandbox_local import live_processes_of
from tests.rla_envs.code.sandbox_helpers import CountingListener, local_sandbox

SLOTS = 2
LIMITS = Limits(timeout_s=20.0)  # generous: these tests assert what is reachable, not how fast


@pytest.fixture(scope="module")
def box():
    yield from local_sandbox(SLOTS)


def needs_slot_cgroups(box) -> None:
    """Skip where this machine offers the sandbox no cgroup (the slot bounds are then not enforced)."""
    if "cgroup_error" in box.capabilities():
        pytest.skip(f"no slot cgroups here: {box.capabilities()['cgroup_error']}")


def stdio(box, program: str, limits: Limits = LIMITS):
    [result] = box.run(program, [Call(stdin="")], limits)
    return result


def wait_until_gone(uid: int, within_s: float = 20.0) -> list[int]:
    """The processes of ``uid`` still alive once they are all gone or ``within_s`` has passed."""
    deadline = time.monotonic() + within_s
    while (alive := live_processes_of(range(uid, uid + 1))) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive


# -- SysV IPC --------------------------------------------------------------------------------------

IPC_HELPERS = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
def ipc(name, *args):
    result = getattr(libc, name)(*args)
    return result, ctypes.get_errno()
"""


def _sysv_ids_with_key(key: int) -> dict[str, list[int]]:
    """The host's SysV objects (shm, msg) whose key is ``key``."""
    found: dict[str, list[int]] = {}
    for kind in ("shm", "msg"):
        rows = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()[1:]
        found[kind] = [int(row.split()[1]) for row in rows if row.split() and int(row.split()[0]) == key]
    return found


def _remove_host_objects(ids: dict[str, list[int]]) -> None:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for ident in ids.get("shm", []):
        libc.shmctl(ident, 0, None)  # IPC_RMID: what a run on the old code leaked
    for ident in ids.get("msg", []):
        libc.msgctl(ident, 0, None)


def test_sysv_ipc_of_one_run_is_not_seen_by_another_nor_outlives_it(box):
    key = 0x5EC00000 + secrets.randbelow(1 << 16)
    maker = IPC_HELPERS + (f"shm = ipc('shmget', {key}, 1 << 20, 0o1666)\n"  # IPC_CREAT | 0666, 1 MiB
                           f"msg = ipc('msgget', {key}, 0o1666)\n"
                           "def made():\n    return [shm[0], msg[0]]\n")
    looker = IPC_HELPERS + f"print(ipc('shmget', {key}, 0, 0)[0], ipc('msgget', {key}, 0)[0])\n"
    try:
        with box.session(maker, LIMITS) as session:
            made = session.call(Call(function="made"))
            assert made.status == "ok", made
            seen = stdio(box, looker)  # the other slot, while the maker's run is still alive
            assert seen.status == "ok", seen
            assert seen.stdout.split() == ["-1", "-1"], f"another slot found the objects: {seen.stdout} (made {made.value})"
        assert _sysv_ids_with_key(key) == {"shm": [], "msg": []}, "the run's SysV objects outlived it on the host"
    finally:
        _remove_host_objects(_sysv_ids_with_key(key))


# -- Unix sockets ----------------------------------------------------------------------------------


class UnixService(CountingListener):
    """A 0666 Unix-socket listener at ``path`` that counts the connections it accepts."""

    def __init__(self, path: str) -> None:
        self.path = path
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(path)
        os.chmod(path, 0o666)
        sock.listen(4)
        super().__init__(sock)


def _service_dir(where: str) -> str:
    """A fresh world-searchable dir in the stdlib dir (which programs read) or under /run (host services)."""
    parent = sysconfig.get_paths()["stdlib"] if where == "readable" else "/run"
    try:
        path = tempfile.mkdtemp(prefix="rla-sbx-sock-", dir=os.path.realpath(parent))
    except OSError as exc:
        pytest.skip(f"cannot place a test service in {parent}: {exc}")
    os.chmod(path, 0o755)
    return path


@pytest.mark.parametrize("where", ["readable", "run"])
def test_unix_socket_services_of_the_host_are_out_of_reach(box, where):
    directory = _service_dir(where)
    service = UnixService(os.path.join(directory, "s"))
    program = f"""
import os, socket
path = {service.path!r}
print("VISIBLE", os.path.exists(path))
for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
    try:
        s = socket.socket(socket.AF_UNIX, kind)
        s.settimeout(2)
        s.connect(path)
        print("CONNECTED")
    except OSError as e:
        print("BLOCKED", type(e).__name__)
try:
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    a.sendto(b"x", path)
    print("SENT")
except OSError as e:
    print("BLOCKED", type(e).__name__)
"""
    try:
        if where == "readable":
            assert box.exposes(directory), "the test's premise: programs may read this directory"
        result = stdio(box, program)
        assert result.status == "ok", result
        assert "CONNECTED" not in result.stdout and "SENT" not in result.stdout, result.stdout
        assert result.stdout.count("BLOCKED") == 3 and service.count == 0
        if where == "run":
            assert "VISIBLE False" in result.stdout, "/run is not hidden"
    finally:
        service.close()
        shutil.rmtree(directory, ignore_errors=True)


# -- work dirs -------------------------------------------------------------------------------------


def test_each_run_has_a_work_dir_of_its_own_size_that_another_cannot_fill_or_see(box):
    limits = Limits(timeout_s=LIMITS.timeout_s, file_size_mb=48)
    filler = ("import os\nopen('fill', 'wb').write(b'x' * (40 << 20))\n"
              "def where():\n    return os.path.abspath('fill')\n")
    with box.session(filler, limits) as session:
        where = session.call(Call(function="where"))
        assert where.status == "ok", where
        other = stdio(box, f"import os\nopen('mine', 'wb').write(b'y' * (40 << 20))\nprint(os.path.getsize('mine'))\n"
                           f"try:\n    os.stat({where.value!r})\n    print('SEEN')\nexcept OSError as e:\n"
                           "    print('UNSEEN', type(e).__name__)\n", limits)
    assert other.status == "ok", f"one slot's files left no room for another's: {other.error}"
    assert other.stdout.split()[0] == str(40 << 20) and "UNSEEN" in other.stdout, other.stdout
    fresh = stdio(box, "import os\nprint(os.listdir('.'))\n")
    assert fresh.stdout == "[]\n"


# -- CPU, memory, processes ------------------------------------------------------------------------

SPINNERS = """
import os
for _ in range({n}):
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            while True:
                pass
        os._exit(0)
def ready():
    return 1
"""


def _cpu_seconds(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
            total += int(fields[11]) + int(fields[12])  # utime + stime, in clock ticks
        except (OSError, IndexError):  # it ended: its time is no longer counted either way
            pass
    return total / os.sysconf("SC_CLK_TCK")


PF_EXITING = 0x4  # a task's flag (field 9 of /proc/<pid>/stat) from the start of its exit


def _cpu_quota_of(pid: int) -> float | None | str:
    """Cores of CPU the cgroup of ``pid`` may use (None: unbounded; "gone": the process is exiting)."""
    try:
        flags = int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[6])
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except (OSError, IndexError, ValueError):
        return "gone"
    if flags & PF_EXITING:  # the spinners' intermediate parents, on their way out, may already show the root
        return "gone"
    if not lines:
        return "gone"
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":  # cgroup v2
            limit = Path(f"/sys/fs/cgroup{path}/cpu.max")
            if limit.exists():
                quota, period = limit.read_text().split()
                return None if quota == "max" else int(quota) / int(period)
        elif "cpu" in controllers.split(","):
            base = Path(f"/sys/fs/cgroup/cpu{path}")
            quota = int((base / "cpu.cfs_quota_us").read_text())
            return None if quota < 0 else quota / int((base / "cpu.cfs_period_us").read_text())
    return None


def _settled_quotas(uid: int, slot_cpus: float, within_s: float = 10.0) -> tuple[list[int], dict]:
    """The live processes of ``uid`` and their CPU quotas, once every one is bounded or ``within_s`` has passed.

    A process the listing catches while it exits (the intermediate parents of the spinners) can read as
    unbounded for an instant and is gone the next; a spinner outside the slot stays and stays unbounded.
    """
    deadline = time.monotonic() + within_s
    while True:
        pids = live_processes_of(range(uid, uid + 1))
        quotas = {pid: quota for pid in pids if (quota := _cpu_quota_of(pid)) != "gone"}
        bounded = all(q is not None and q <= slot_cpus for q in quotas.values())
        if bounded or time.monotonic() >= deadline:
            return pids, quotas
        time.sleep(0.05)


def test_setsid_spinners_are_bounded_by_their_slot_and_die_with_the_run(box):
    needs_slot_cgroups(box)
    with box.session(SPINNERS.format(n=6), LIMITS) as session:
        assert session.call(Call(function="ready")).status == "ok"
        spinners, quotas = _settled_quotas(session.uid, box.capabilities()["slot_cpus"])
        assert len(spinners) >= 6
        assert len(quotas) >= 6 and all(q is not None and q <= box.capabilities()["slot_cpus"] for q in quotas.values()), quotas
        before, start = _cpu_seconds(spinners), time.monotonic()
        honest = stdio(box, "print(sum(range(10**6)))\n")  # the other slot, beside the spinners
        time.sleep(max(0.0, 1.0 - (time.monotonic() - start)))
        used, wall = _cpu_seconds(spinners) - before, time.monotonic() - start
        assert honest.status == "ok" and honest.stdout == f"{sum(range(10**6))}\n", honest
        # The quota holds over every 0.1 s period: one period of slack, and one clock tick per process.
        assert used <= box.capabilities()["slot_cpus"] * (wall + 0.1) + len(spinners) * 0.01, (used, wall)
        uid = session.uid
    assert wait_until_gone(uid) == [], "a spinner outlived its run"


def test_the_processes_of_a_run_share_one_memory_bound(box):
    # Three children each under the per-process limit (300 MiB of address space), 660 MiB together: far
    # beyond what the run may hold (memory_mb + work_mb + the sandbox's own), so the slot's bound ends some.
    needs_slot_cgroups(box)
    program = """
import os, select
r, w = os.pipe()
children = []
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        block = bytearray(220 << 20)
        block[::4096] = b"x" * len(block[::4096])
        os.write(w, b"1")
        select.select([], [], [])  # hold it until the run ends
    children.append(pid)
os.close(w)
ready = 0
while ready < 3:
    if select.select([r], [], [], 0.2)[0]:
        ready += len(os.read(r, 3))
    elif os.waitpid(-1, os.WNOHANG)[0]:
        break
print("ALL HELD" if ready == 3 else f"ENDED after {ready}")
"""
    result = stdio(box, program, Limits(timeout_s=60.0, memory_mb=300))
    assert "ALL HELD" not in result.stdout, "three processes of one run held 660 MiB past its 300 MiB bound"


# -- uids ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("uid_base, slots", [(65534, 1), (65530, 8), (65535, 1)])
def test_a_uid_block_holding_nobody_is_refused(uid_base, slots):
    if os.geteuid() != 0:
        pytest.skip("the local sandbox needs root")
    from rla_envs.code.sandbox.local import LocalSandbox

    with pytest.raises(ValueError, match="uid_base"):
        LocalSandbox(slots=slots, uid_base=uid_base).close()


def test_a_uid_block_holding_an_account_is_refused_and_the_default_skips_it(monkeypatch):
    if os.geteuid() != 0:
        pytest.skip("the local sandbox needs root")
    import grp
    import pwd

    from rla_envs.code.sandbox import local

    accounts = pwd.getpwall()
    user = pwd.struct_passwd(("rla-test-user", "x", local.DEFAULT_UID_BASE + 1, 100, "", "/nonexistent", "/bin/false"))
    group = grp.struct_group(("rla-test-group", "x", local.DEFAULT_UID_BASE + 5, []))
    monkeypatch.setattr(pwd, "getpwall", lambda: accounts + [user])
    monkeypatch.setattr(grp, "getgrall", lambda: [group])
    with pytest.raises(ValueError, match="rla-test-user"):
        local.LocalSandbox(slots=2, uid_base=local.DEFAULT_UID_BASE)
    with pytest.raises(ValueError, match="rla-test-group"):
        local.LocalSandbox(slots=1, uid_base=local.DEFAULT_UID_BASE + 5)
    with local.LocalSandbox(slots=2) as sandbox:
        taken = {local.DEFAULT_UID_BASE + 1, local.DEFAULT_UID_BASE + 5}
        assert not taken & set(range(sandbox.uid_base, sandbox.uid_base + 2))
        assert sandbox.uid_base >= local.DEFAULT_UID_BASE


def test_subordinate_id_ranges_count_as_taken(tmp_path, monkeypatch):
    from rla_envs.code.sandbox import local

    subuid = tmp_path / "subuid"
    subuid.write_text("alice:100000:65536\n# not a range\n")
    real = local._subordinate_ranges
    monkeypatch.setattr(local, "_subordinate_ranges",
                        lambda path: real(str(subuid)) if path == "/etc/subuid" else [])
    assert local.uid_conflicts(100000 + 65535, 2) == ["100000..165535 are 'alice''s subordinate ids (/etc/subuid)"]
    assert local.uid_conflicts(165536, 4) == []
    assert any("65534" in why for why in local.uid_conflicts(65533, 2))
