"""A reset restores every place the agent's code can write, not only the home (issue 25, class 2).

Each test plants state through the agent's own channel (``run_pyautogui``: code run as the session's user), checks
through the controller that the plant took, resets, and checks that the next episode finds nothing of it.
"""

from __future__ import annotations

import json

import pytest

desktop = pytest.mark.desktop

PLANT_EVERYWHERE = r"""
import ctypes, os, subprocess
runtime = os.environ["XDG_RUNTIME_DIR"]
# every folder the session's user can write in, outside the home (restored by HomeTemplate) and /proc, /sys
found = subprocess.run(["find", "/", "(", "-path", "/proc", "-o", "-path", "/sys", "-o", "-path", "/dev/pts", "-o",
                        "-path", "/home/user", ")", "-prune", "-o", "-type", "d", "-writable", "-print"],
                       capture_output=True, text=True).stdout.split()
for folder in found:
    try:
        with open(os.path.join(folder, "planted-by-the-agent"), "w") as handle:
            handle.write("left for the next episode")
    except OSError:
        pass
# a file the booted desktop made, and the attributes and modes of folders that stay
with open(os.path.join(runtime, "dconf", "user"), "wb") as handle:
    handle.write(b"a note in a kept file")
for folder in ("/tmp", "/var/tmp", "/dev/shm", runtime, "/tmp/.X11-unix", "/home/user"):
    try:
        os.setxattr(folder, "user.note", b"a marker on a kept folder")
    except OSError:
        pass
os.chmod("/tmp/.X11-unix", 0o700)
os.chmod("/home/user", 0o711)
# a POSIX message queue and System V objects: they outlive the process that made them
libc = ctypes.CDLL(None, use_errno=True)
libc.mq_open.restype = ctypes.c_int
libc.mq_open(b"/planted-queue", os.O_CREAT | os.O_RDWR, 0o600, None)
libc.shmget(0x5EED, 4096, 0o1600)
libc.msgget(0x5EEE, 0o1600)
libc.semget(0x5EEF, 1, 0o1600)
"""

SESSION_STATE = r"""
import json, os, stat, subprocess
runtime = os.environ.get("XDG_RUNTIME_DIR", "/tmp/runtime-user")
writable = subprocess.run(["find", "/", "(", "-path", "/proc", "-o", "-path", "/sys", "-o", "-path", "/dev/pts", "-o",
                           "-path", "/home/user", ")", "-prune", "-o", "-writable", "(", "-type", "d", "-o", "-type",
                           "f", ")", "-print"], capture_output=True, text=True).stdout.split()
def attributes(path):
    try:
        return sorted(os.listxattr(path))
    except OSError as error:
        return str(error)
folders = ["/tmp", "/var/tmp", "/dev/shm", runtime, "/tmp/.X11-unix", "/home/user"]
state = {
    "writable": sorted(p for p in writable if not p.startswith("/usr/lib/systemd/")),  # masked units: /dev/null
    "planted": sorted(p for p in writable if "planted" in p),
    "modes": {f: oct(stat.S_IMODE(os.stat(f).st_mode)) for f in folders},
    "xattrs": {f: attributes(f) for f in folders},
    "dconf": open(os.path.join(runtime, "dconf", "user"), "rb").read().hex(),
    "mqueue": sorted(os.listdir("/dev/mqueue")) if os.path.isdir("/dev/mqueue") else None,
    "sysv": {kind: open("/proc/sysvipc/" + kind).read().splitlines()[1:] for kind in ("shm", "msg", "sem")},
}
print(json.dumps(state))
"""


def _state(client) -> dict:
    reply = client.execute(["/usr/bin/python3", "-I", "-c", SESSION_STATE])
    assert reply["returncode"] == 0, reply
    return json.loads(reply["output"])


def check_nothing_planted_survives_a_reset(provider) -> None:
    """Plant state everywhere the agent can write outside the home, check it took, reset, check it is gone."""
    client = provider.start()
    provider.reset()
    before = _state(client)
    assert before["planted"] == []

    reply = client.run_pyautogui(PLANT_EVERYWHERE)
    assert reply["status"] == "success", reply
    planted = _state(client)
    # the plants took: inside the runtime dir and the X socket dir (kept whole before), /tmp, /var/tmp, /dev/shm
    runtime = next(f for f in planted["modes"] if f.startswith("/tmp/runtime"))
    for folder in ("/tmp", "/var/tmp", "/dev/shm", runtime, f"{runtime}/dconf", "/tmp/.X11-unix"):
        assert f"{folder}/planted-by-the-agent" in planted["planted"], folder
    assert planted["dconf"] != before["dconf"] and planted["modes"] != before["modes"]
    assert planted["mqueue"] is None or "planted-queue" in planted["mqueue"]  # no /dev/mqueue: none to list
    assert all(planted["sysv"].values()), planted["sysv"]
    assert planted["xattrs"] != before["xattrs"]

    provider.reset()

    after = _state(client)
    assert after["planted"] == []
    assert after == before


@desktop
def test_nothing_the_agent_writes_outside_the_home_reaches_the_next_episode(local_provider):
    check_nothing_planted_survives_a_reset(local_provider)


@desktop
def test_the_folders_that_hold_the_sessions_mounts_are_read_only(local_provider):
    client = local_provider.start()
    reply = client.execute(["sh", "-c", "for d in / /opt /var /var/lib /run /dev /home; do touch $d/x 2>/dev/null "
                                        "&& echo $d; done; true"])
    assert reply["output"] == "", f"writable outside what a reset restores: {reply['output']}"


BREAKAGES = {
    "boot-socket-deleted": "import os; os.unlink(os.environ['XDG_RUNTIME_DIR'] + '/at-spi/bus_0')",
    "window-manager-killed": "import os, signal, subprocess; "
                             "os.kill(int(subprocess.check_output(['pgrep', '-x', 'openbox'])), signal.SIGKILL)",
}


@desktop
@pytest.mark.parametrize("breakage", sorted(BREAKAGES))
def test_a_reset_after_the_agent_broke_what_the_desktop_made_gives_a_fresh_working_session(local_provider, breakage):
    from tests.rla_envs.desktop.conftest import wait_until

    client = local_provider.start()
    local_provider.reset()
    old_pid = local_provider.session.pid
    reply = client.run_pyautogui(BREAKAGES[breakage])
    assert reply["status"] == "success", reply

    local_provider.reset()

    client = local_provider.start()
    assert local_provider.session.pid != old_pid  # the session could not be restored: a fresh one replaced it
    assert client.execute(["sh", "-c", "test -S $XDG_RUNTIME_DIR/at-spi/bus_0 && pgrep -x openbox"])["returncode"] == 0
    client.launch(["xterm", "-T", "after-the-reset"])
    assert wait_until(lambda: "after-the-reset" in client.execute(["wmctrl", "-l"])["output"])


@desktop
def test_a_core_process_the_agent_stopped_is_woken_by_the_reset(local_provider):
    client = local_provider.start()
    local_provider.reset()
    old_pid = local_provider.session.pid
    reply = client.run_pyautogui(
        "import os, signal, subprocess; "
        "os.kill(int(subprocess.check_output(['pgrep', '-x', 'openbox'])), signal.SIGSTOP)")
    assert reply["status"] == "success", reply
    assert client.execute(["ps", "-o", "stat=", "-C", "openbox"])["output"].startswith("T")

    local_provider.reset()

    assert local_provider.session.pid == old_pid  # restored in place
    assert not client.execute(["ps", "-o", "stat=", "-C", "openbox"])["output"].startswith("T")
