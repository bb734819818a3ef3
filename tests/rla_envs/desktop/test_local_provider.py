"""LocalProvider: a bubblewrapped local session -- loopback only, reset closes everything, close leaves nothing."""

from __future__ import annotations

import json
import os
import socket
import shutil
import stat

import pytest

from rla_envs.desktop.session import SESSION_MARKER_ENV
from tests.rla_envs.desktop.conftest import wait_until

desktop = pytest.mark.desktop


def session_processes(session_id: str) -> list[int]:
    """Host pids of the running processes whose environment carries the session's marker."""
    marker = f"{SESSION_MARKER_ENV}={session_id}".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as handle:
                if marker in handle.read().split(b"\0"):
                    found.append(int(name))
        except OSError:
            continue
    return found


@desktop
def test_the_controller_is_reached_only_through_its_socket_and_the_session_has_no_network(local_provider):
    client = local_provider.start()
    socket_path = local_provider.session.socket_path
    assert stat.S_ISSOCK(socket_path.lstat().st_mode) and stat.S_IMODE(socket_path.lstat().st_mode) == 0o600
    # the session's own network namespace: a loopback interface and nothing else ...
    interfaces = client.execute(["sh", "-c", "tail -n +3 /proc/net/dev | cut -d: -f1"])["output"].split()
    assert interfaces == ["lo"]
    # ... so a server on the host's loopback is out of its reach
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        probe = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5)"
        reply = client.execute(["python", "-c", probe])
    assert reply["returncode"] != 0 and "ConnectionRefusedError" in reply["error"]


AGENT_PROBE = """
import json, os, stat
status = dict(line.split(':', 1) for line in open('/proc/self/status'))
devices = {}
for name in sorted(os.listdir('/sys/block')):   # the host's block devices (sysfs is the host's, read-only)
    for mode in (os.O_RDONLY, os.O_WRONLY):
        try:
            os.close(os.open('/dev/' + name, mode))
            devices[name] = 'opened'
        except OSError as error:
            devices.setdefault(name, error.strerror)
try:
    os.mknod('/tmp/disk', 0o600 | stat.S_IFBLK, os.makedev(254, 0))
    made = 'made'
except OSError as error:
    made = error.strerror
json.dump({'uid': os.getuid(), 'cap_eff': status['CapEff'].strip(), 'cap_bnd': status['CapBnd'].strip(),
           'devices': devices, 'mknod': made, 'dev': sorted(os.listdir('/dev')),
           'shadow': os.access('/etc/shadow', os.R_OK)}, open('/home/user/probe.json', 'w'))
"""
MINIMAL_DEV = {"core", "fd", "full", "mqueue", "null", "ptmx", "pts", "random", "shm", "stderr", "stdin", "stdout",
               "tty", "urandom", "zero"}


@desktop
def test_agent_code_has_no_capabilities_and_cannot_open_the_hosts_block_devices(local_provider):
    client = local_provider.start()
    local_provider.reset()
    host_disks = sorted(os.listdir("/sys/block"))
    assert client.run_pyautogui(AGENT_PROBE) == {"status": "success", "error": ""}
    probe = json.loads((local_provider.session.home / "probe.json").read_text())
    assert probe["cap_eff"] == probe["cap_bnd"] == "0000000000000000"
    assert probe["uid"] == 1000 and not probe["shadow"]
    assert sorted(probe["devices"]) == host_disks and "opened" not in probe["devices"].values(), probe["devices"]
    assert probe["mknod"] != "made"
    assert set(probe["dev"]) <= MINIMAL_DEV
    # on the host, the session's processes run as nobody when this process is root (they own nothing here)
    if os.geteuid() == 0:
        uids = {int(open(f"/proc/{pid}/status").read().split("Uid:")[1].split()[1])
                for pid in session_processes(local_provider.session.session_id)}
        assert 0 not in uids


@desktop
def test_the_token_is_not_on_any_command_line(local_provider):
    token = local_provider.session.token.encode()
    for pid in session_processes(local_provider.session.session_id):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                assert token not in handle.read()
        except FileNotFoundError:
            pass


@desktop
def test_the_session_home_is_private_and_seen_as_home_user(local_provider):
    client = local_provider.start()
    local_provider.reset()
    client.upload("/home/user/hello.txt", b"hi")
    assert (local_provider.session.home / "hello.txt").read_bytes() == b"hi"
    assert client.execute(["sh", "-c", "echo $HOME; ls /tmp"])["output"].startswith("/home/user\n")
    # the host outside the session's home is read-only to the session; its /tmp is its own
    marker = f"/tmp/rla-host-probe-{local_provider.session.session_id}"
    assert client.execute(["touch", "/etc/rla-host-probe"])["returncode"] != 0
    assert client.execute(["touch", marker])["returncode"] == 0
    assert not os.path.exists(marker) and not os.path.exists("/etc/rla-host-probe")
    # the session's LibreOffice profile is seeded: no first-start wizard, no recovery, no autosave
    xcu = client.get_file("/home/user/.config/libreoffice/4/user/registrymodifications.xcu")
    assert b'"FirstStartWizardCompleted"' in xcu and b'"ShowTipOfTheDay"' in xcu and b"AutoSave" in xcu


SHIFT_IS_DOWN = ("from Xlib import XK; from Xlib.display import Display; d = Display(); "
                 "code = d.keysym_to_keycode(XK.XK_Shift_L); print(bool(d.query_keymap()[code // 8] & (1 << code % 8)))")


def _shift_is_down(client) -> str:
    """Whether the X server has the left shift key down, as "True"/"False" (asked from inside the session)."""
    return client.execute(["python", "-c", SHIFT_IS_DOWN])["output"].strip()


@desktop
def test_reset_closes_apps_and_restores_the_home(local_provider):
    client = local_provider.start()
    local_provider.reset()
    listing = client.execute(["sh", "-c", "cd ~ && find . | sort"])["output"]
    scratch_before = client.execute(["sh", "-c", "ls -A /tmp /var/tmp"])["output"]
    client.upload("/home/user/notes.txt", b"text")
    client.upload("/home/user/.config/extra/settings.ini", b"[x]")
    client.execute("echo changed >> ~/.config/libreoffice/4/user/registrymodifications.xcu", shell=True)
    client.open_file("/home/user/notes.txt")
    client.launch(["xterm", "-T", "left-open"])
    client.execute("sleep 600 > /dev/null 2>&1 &", shell=True)
    client.execute("echo left > /tmp/answer.txt; mkdir -p /var/tmp/d/e; echo x > /var/tmp/d/e/f", shell=True)
    client.run_pyautogui("pyautogui.keyDown('shift'); pyautogui.moveTo(5, 5)")
    assert _shift_is_down(client) == "True"
    assert wait_until(lambda: "left-open" in client.execute(["wmctrl", "-l"])["output"])
    assert client.execute(["pgrep", "-x", "mousepad"])["returncode"] == 0

    local_provider.reset()

    assert client.execute(["wmctrl", "-l"])["output"] == ""
    for name in ("mousepad", "xterm", "sleep"):
        assert client.execute(["pgrep", "-x", name])["returncode"] == 1, f"{name} survived the reset"
    assert client.get_file("/home/user/notes.txt") is None
    assert client.get_file("/home/user/.config/extra/settings.ini") is None
    assert b"changed" not in client.get_file("/home/user/.config/libreoffice/4/user/registrymodifications.xcu")
    assert client.execute(["sh", "-c", "cd ~ && find . | sort"])["output"] == listing
    assert client.execute(["sh", "-c", "ls -A /tmp /var/tmp"])["output"] == scratch_before  # the episode's files went
    assert _shift_is_down(client) == "False"   # the reset let go of it
    assert client.cursor_position() == (960, 540)
    # and the session still works afterwards
    client.upload("/home/user/again.txt", b"again")
    client.open_file("/home/user/again.txt")


@desktop
def test_a_hundred_resets_leave_no_stray_process_and_close_leaves_nothing():
    from rla_envs.desktop.providers.local import LocalProvider

    from .conftest import local_desktop_unavailable

    reason = local_desktop_unavailable()
    if reason:
        pytest.skip(reason)
    provider = LocalProvider(screen_size=(800, 600), fresh_sessions=False)
    try:
        client = provider.start()
        session_id = provider.session.session_id
        core = sorted(session_processes(session_id))
        assert len(core) >= 5   # bwrap, controller, Xvfb, the buses, openbox: the marker is seen
        for round_number in range(100):
            client.launch(["sleep", "600"])
            client.execute("sleep 600 > /dev/null 2>&1 &", shell=True)
            if round_number % 25 == 0:
                client.upload("/home/user/r.txt", b"r")
                client.open_file("/home/user/r.txt")
            assert len(session_processes(session_id)) > len(core)
            provider.reset()
            assert sorted(session_processes(session_id)) == core, f"stray processes after reset {round_number}"
        bwrap_pid = provider.session.pid
    finally:
        provider.close()
    assert session_processes(session_id) == []
    assert not os.path.exists(f"/proc/{bwrap_pid}") or open(f"/proc/{bwrap_pid}/stat").read().split()[2] == "Z"


def test_a_missing_runtime_is_a_clear_error(tmp_path):
    from rla_envs.desktop.session import SessionError

    from rla_envs.desktop.providers.local import LocalProvider

    with pytest.raises(SessionError, match="install-desktop.sh"):
        LocalProvider(python=str(tmp_path / "no-python"))
    with pytest.raises(TypeError, match="screen_size"):
        LocalProvider(screen=(1, 2))


@desktop
def test_the_session_sees_the_hosts_system_but_none_of_its_other_files(local_provider, tmp_path_factory):
    # A file of the host outside the system dirs: the project checkout's own files, and one planted under /srv.
    secret_dir = tmp_path_factory.mktemp("unused")  # (under the host's /tmp: a session has its own /tmp anyway)
    planted = f"/srv/rla-test-{os.getpid()}"
    os.makedirs(planted, exist_ok=True)
    try:
        with open(f"{planted}/secret", "w") as handle:
            handle.write("host secret")
        os.chmod(planted, 0o755)
        os.chmod(f"{planted}/secret", 0o644)
        client = local_provider.start()
        checkout = os.path.dirname(os.path.abspath(__file__))
        reply = client.execute(["sh", "-c", f"cat {planted}/secret; ls {checkout}; ls /root /run; ls /usr/bin/sh"])
        assert "host secret" not in reply["output"] and "test_local_provider.py" not in reply["output"], reply
        assert "/usr/bin/sh" in reply["output"], reply  # the system is there: programs still run
        assert str(secret_dir) not in reply["output"]
    finally:
        shutil.rmtree(planted, ignore_errors=True)


CONTROLLER_PROBE = r"""
import ctypes, json, os
found = {}
for name in os.listdir('/proc'):
    if not name.isdigit():
        continue
    try:
        cmdline = open(f'/proc/{name}/cmdline', 'rb').read().split(b'\0')
    except OSError:
        continue
    if b'controller' not in cmdline:
        continue
    try:
        environ = open(f'/proc/{name}/environ', 'rb').read()
        found['environ'] = 'RLA_DESKTOP_TOKEN' in environ.decode(errors='replace')
    except OSError as error:
        found['environ'] = error.strerror
    libc = ctypes.CDLL(None, use_errno=True)
    attached = libc.ptrace(16, int(name), 0, 0)  # PTRACE_ATTACH
    found['ptrace'] = 'attached' if attached == 0 else os.strerror(ctypes.get_errno())
    if attached == 0:
        libc.ptrace(17, int(name), 0, 0)  # PTRACE_DETACH
print(json.dumps(found))
"""


@desktop
def test_the_agents_code_can_neither_read_the_controllers_token_nor_trace_it(local_provider):
    client = local_provider.start()
    found = json.loads(client.execute(["python3", "-c", CONTROLLER_PROBE])["output"])
    assert found["environ"] is not True and found["ptrace"] != "attached", found


PLANT_IN_THE_TEMPLATE = r"""
import os
runtime = os.environ.get('XDG_RUNTIME_DIR', '/tmp/runtime-user')
targets = [os.path.join(runtime, 'rla-home-template')]   # where the boot snapshot lay before
for folder, dirs, files in os.walk('/tmp'):
    targets += [os.path.join(folder, d) for d in dirs if 'template' in d]
for target in targets:
    try:
        os.makedirs(target, exist_ok=True)
        with open(os.path.join(target, 'planted.txt'), 'w') as handle:
            handle.write('left for every later episode')
    except OSError:
        pass
print(len(targets))
"""


@desktop
def test_an_episode_cannot_change_what_a_reset_restores_the_home_to(local_provider):
    client = local_provider.start()
    local_provider.reset()
    listing = client.execute(["sh", "-c", "cd ~ && find . | sort"])["output"]
    assert int(client.execute(["python3", "-c", PLANT_IN_THE_TEMPLATE])["output"]) >= 1
    local_provider.reset()
    assert client.get_file("/home/user/planted.txt") is None
    assert client.execute(["sh", "-c", "cd ~ && find . | sort"])["output"] == listing
