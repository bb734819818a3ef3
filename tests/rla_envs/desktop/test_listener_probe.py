"""Who answers on a port the evaluator asks (``listener_probe``): a made-up /proc for the kernel's answers, then real
processes (a stdlib HTTP server run by the system's /usr/bin/python3) in VLC's and Chrome's place through the
getters' own scripts."""

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from rla_envs.desktop.osworld import listener_probe as probe
from rla_envs.desktop.osworld.cache import FileCache
from rla_envs.desktop.osworld.devtools import ChromeDevTools, DevToolsError
from rla_envs.desktop.osworld.errors import EvaluationError
from rla_envs.desktop.osworld.getters import EvalContext, run_getter
from rla_envs.desktop.osworld.getters import vlc as vlc_getters
from rla_envs.desktop.osworld.metrics import get_metric
from rla_envs.desktop.osworld.session_probe import listener_probe_command
from tests.rla_envs.desktop.conftest import LocalSessionClient

SYSTEM_PYTHON = Path("/usr/bin/python3")
needs_system_python = pytest.mark.skipif(not SYSTEM_PYTHON.exists(), reason="needs Debian's /usr/bin/python3")


# ----------------------------------------------------------------------------------------- a made-up /proc
def _tcp_row(port: int, inode: int, state: str = "0A") -> str:
    return f"   0: 0100007F:{port:04X} 00000000:0000 {state} 00000000:00000000 00:00000000 00000000  1000  0 {inode} 1"


def _fake_proc(root: Path, sockets: dict[int, tuple[int, str]], processes: dict[int, dict]) -> Path:
    """/proc with ``sockets`` ({inode: (port, state)}) and ``processes`` ({pid: {exe, fds, maps, environ}})."""
    (root / "net").mkdir(parents=True)
    header = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
    rows = [_tcp_row(port, inode, state) for inode, (port, state) in sockets.items()]
    (root / "net" / "tcp").write_text(header + "\n".join(rows) + "\n")
    (root / "net" / "tcp6").write_text(header)
    for pid, spec in processes.items():
        folder = root / str(pid)
        (folder / "fd").mkdir(parents=True)
        os.symlink(spec["exe"], folder / "exe")
        for number, inode in enumerate(spec.get("fds", ())):
            os.symlink(f"socket:[{inode}]", folder / "fd" / str(number))
        (folder / "maps").write_text(spec.get("maps", f"55d0-55d1 r-xp 0 08:01 1 {spec['exe']}\n"))
        (folder / "environ").write_bytes(b"\0".join(entry.encode() for entry in spec.get("environ", ["HOME=/h"])))
        (folder / "cmdline").write_bytes(b"\0".join(arg.encode() for arg in spec.get("cmdline", [spec["exe"]])))
    (root / "self").mkdir()  # not a pid: skipped
    return root


def test_only_listening_sockets_on_the_port_count(tmp_path):
    proc = _fake_proc(tmp_path, {11: (8080, "0A"), 12: (8080, "01"), 13: (9090, "0A")}, {})
    assert probe.listening_sockets(8080, str(proc)) == {11}    # 12 is an established connection, 13 another port
    assert probe.listening_sockets(1, str(proc)) == set()


def test_the_installed_app_holds_the_port(tmp_path):
    proc = _fake_proc(tmp_path, {11: (8080, "0A")}, {40: {"exe": "/usr/bin/vlc", "fds": [11, 99]}})
    assert probe.port_holders(8080, {"vlc"}, str(proc)) == {11: [40]}
    assert probe.port_holders(8081, {"vlc"}, str(proc)) == {}                   # nothing listens: nothing to refuse


@pytest.mark.parametrize("process, reason", [
    ({"exe": "/usr/bin/python3.11"}, "runs /usr/bin/python3.11, not an installed vlc"),
    ({"exe": "/home/user/vlc"}, "runs /home/user/vlc, not an installed vlc"),                 # named so, not installed
    ({"exe": "/usr/bin/vlc", "environ": ["LD_PRELOAD=/home/user/fake.so"]}, "started with LD_PRELOAD"),
    ({"exe": "/usr/bin/vlc", "maps": "55d0-55d1 r-xp 0 08:01 1 /usr/bin/vlc\n"
                                     "7f00-7f01 r-xp 0 08:01 2 /tmp/.hidden/libvlccore.so.9\n"
                                     "7f02-7f03 rw-p 0 08:01 3 /home/user/.cache/fontconfig/x.cache\n"},
     "runs code mapped from /tmp/.hidden/libvlccore.so.9"),
], ids=["another-program", "a-binary-named-vlc-in-home", "ld-preload", "code-mapped-from-tmp"])
def test_a_holder_that_is_not_the_installed_app_is_refused(tmp_path, process, reason):
    proc = _fake_proc(tmp_path, {11: (8080, "0A")}, {40: {**process, "fds": [11]}})
    with pytest.raises(probe.ForeignListener, match=reason):
        probe.port_holders(8080, {"vlc"}, str(proc))


def test_every_holder_of_a_shared_socket_must_be_the_app(tmp_path):
    # a second process holding VLC's own listening socket (inherited) could accept the evaluator's connection
    proc = _fake_proc(tmp_path, {11: (8080, "0A")}, {40: {"exe": "/usr/bin/vlc", "fds": [11]},
                                                      41: {"exe": "/usr/bin/perl", "fds": [11]}})
    with pytest.raises(probe.ForeignListener, match="process 41 runs /usr/bin/perl"):
        probe.port_holders(8080, {"vlc"}, str(proc))


def test_a_socket_held_out_of_sight_is_refused(tmp_path):
    proc = _fake_proc(tmp_path, {11: (8080, "0A")}, {40: {"exe": "/usr/bin/vlc", "fds": [12]}})
    with pytest.raises(probe.ForeignListener, match="cannot see"):
        probe.port_holders(8080, {"vlc"}, str(proc))


def test_a_port_that_changed_hands_during_the_exchange_is_refused(tmp_path):
    before = {11: [40]}
    proc = _fake_proc(tmp_path, {12: (8080, "0A")}, {41: {"exe": "/usr/bin/vlc", "fds": [12]}})
    with pytest.raises(probe.ForeignListener, match="changed hands"):
        probe.same_holders(8080, before, {"vlc"}, str(proc))
    probe.same_holders(8080, {12: [41]}, {"vlc"}, str(proc))                    # unchanged: no error


# ----------------------------------------------------------------------------------------- real processes
STAND_IN = r"""
import base64, ctypes, http.server, json, sys
body, load = sys.argv[1].encode(), sys.argv[2]
if load:
    ctypes.CDLL(load)  # code from a path the session's user can write

class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        wanted = "Basic " + base64.b64encode(b":password").decode()
        ok = self.path != "/requests/status.xml" or self.headers.get("Authorization") == wanted
        reply = body if self.path == "/requests/status.xml" else json.dumps({"Browser": "x"}).encode()
        self.send_response(200 if ok else 401)
        self.end_headers()
        if ok:
            self.wfile.write(reply)

    def log_message(self, *args):
        pass

server = http.server.HTTPServer(("127.0.0.1", int(sys.argv[3])), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
"""
STATUS = ('<root><state>playing</state><information><category name="meta"><info name="filename">song.mp4</info>'
          '</category></information></root>')


@pytest.fixture
def stand_in(tmp_path):
    """Start the stdlib server in an app's place: ``stand_in(port=0, load="", args=(), env={})`` -> its port."""
    started = []
    script = tmp_path / "stand_in.py"
    script.write_text(STAND_IN)

    def start(port=0, load="", args=(), env=None):
        command = [str(SYSTEM_PYTHON), "-I", str(script), STATUS, load, str(port), *args]
        server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True,
                                  env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "home"), **(env or {})})
        started.append(server)
        return int(server.stdout.readline())

    yield start
    for server in started:
        server.kill()
        server.wait()


@pytest.fixture
def vlc_ctx(tmp_path, monkeypatch):
    (tmp_path / "home").mkdir()
    (tmp_path / "work").mkdir()
    return EvalContext(client=LocalSessionClient(tmp_path / "home"), cache=FileCache(None), task_id=None,
                       workdir=tmp_path / "work")


def _system_python_name() -> str:
    return SYSTEM_PYTHON.resolve().name


@needs_system_python
def test_the_status_is_read_when_the_expected_program_answers(stand_in, vlc_ctx, monkeypatch):
    # the stand-in counts as the app only when the getter is told to expect its program: the answering path itself
    monkeypatch.setattr(vlc_getters, "VLC_HTTP_PORT", stand_in())
    monkeypatch.setattr(vlc_getters, "VLC_PROGRAMS", ("vlc", _system_python_name()))
    local = run_getter(vlc_ctx, {"type": "vlc_playing_info", "dest": "status.xml"})
    assert Path(local).read_text() == STATUS
    assert get_metric("is_vlc_playing")(local, {"type": "file_name", "file_name": "song.mp4"}) == 1.0
    monkeypatch.setattr(vlc_getters, "VLC_HTTP_PASSWORD", "wrong")
    assert run_getter(vlc_ctx, {"type": "vlc_playing_info", "dest": "status.xml"}) is None       # HTTP 401


@needs_system_python
def test_a_server_in_vlcs_place_scores_nothing(stand_in, vlc_ctx, monkeypatch):
    monkeypatch.setattr(vlc_getters, "VLC_HTTP_PORT", stand_in())
    with pytest.raises(EvaluationError, match=f"not answered by VLC.*runs /usr/bin/{_system_python_name()}, "
                                              "not an installed vlc"):
        run_getter(vlc_ctx, {"type": "vlc_playing_info", "dest": "status.xml"})


@needs_system_python
def test_nothing_listening_is_nothing_playing(vlc_ctx, monkeypatch):
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    monkeypatch.setattr(vlc_getters, "VLC_HTTP_PORT", port)
    assert run_getter(vlc_ctx, {"type": "vlc_playing_info", "dest": "status.xml"}) is None


def _copied_library(tmp_path) -> str:
    library = next((path for path in (Path("/usr/lib/x86_64-linux-gnu/libm.so.6"), Path("/lib/x86_64-linux-gnu/libm.so.6"),
                                      Path("/usr/lib/aarch64-linux-gnu/libm.so.6")) if path.exists()), None)
    if library is None:
        pytest.skip("no system libm.so.6 to copy")
    copy = tmp_path / "libcopied.so"
    shutil.copy(library, copy)
    return str(copy)


@needs_system_python
@pytest.mark.parametrize("how", ["ld-preload", "loaded-at-run-time"])
def test_the_app_running_code_from_a_writable_path_is_refused(stand_in, vlc_ctx, monkeypatch, tmp_path, how):
    library = _copied_library(tmp_path)
    port = stand_in(env={"LD_PRELOAD": library}) if how == "ld-preload" else stand_in(load=library)
    monkeypatch.setattr(vlc_getters, "VLC_HTTP_PORT", port)
    monkeypatch.setattr(vlc_getters, "VLC_PROGRAMS", ("vlc", _system_python_name()))
    reason = "started with LD_PRELOAD" if how == "ld-preload" else f"runs code mapped from {library}"
    with pytest.raises(EvaluationError, match=reason):
        run_getter(vlc_ctx, {"type": "vlc_playing_info", "dest": "status.xml"})


@needs_system_python
@pytest.mark.parametrize("redirect", ["user-lua-folder", "http-src-argument", "lua-config-setting", "data-path-variable"])
def test_vlc_serving_its_interface_from_the_users_files_is_refused(stand_in, vlc_ctx, monkeypatch, tmp_path, redirect):
    home = tmp_path / "home"
    args, env = (), {}
    if redirect == "user-lua-folder":
        (home / ".local/share/vlc/lua/http/requests").mkdir(parents=True)
        reason = "vlc/lua exists"
    elif redirect == "http-src-argument":
        args, reason = ("--http-src=/home/user/forged",), "started with --http-src=/home/user/forged"
    elif redirect == "lua-config-setting":
        (home / ".config/vlc").mkdir(parents=True)
        (home / ".config/vlc/vlcrc").write_text("#lua-config=\nlua-config=http={dir='/home/user/forged'}\n")
        reason = "settings .* set lua-config"
    else:
        env, reason = {"VLC_DATA_PATH": "/home/user/forged"}, "started with VLC_DATA_PATH"
    monkeypatch.setattr(vlc_getters, "VLC_HTTP_PORT", stand_in(args=args, env=env))
    monkeypatch.setattr(vlc_getters, "VLC_PROGRAMS", ("vlc", _system_python_name()))
    with pytest.raises(EvaluationError, match=reason):
        run_getter(vlc_ctx, {"type": "vlc_playing_info", "dest": "status.xml"})


@needs_system_python
def test_a_server_in_chromes_place_is_refused(stand_in, tmp_path):
    try:
        stand_in(port=1337)
    except ValueError:  # the port is taken on this machine (the stand-in printed nothing)
        pytest.skip("port 1337 is in use here")
    (tmp_path / "home").mkdir(exist_ok=True)
    devtools = ChromeDevTools(LocalSessionClient(tmp_path / "home"), wait_s=5)
    with pytest.raises(DevToolsError, match="ForeignListener: port 1337: .* not an installed chrome/chromium"):
        devtools.tabs()


def test_the_session_side_sources_use_only_the_standard_library():
    # they run under the session's python3 -I, where rla is not installed
    for name in ("listener_probe.py", "devtools_agent.py"):
        source = (Path(probe.__file__).with_name(name)).read_text()
        modules = {line.split()[1].split(".")[0] for line in source.splitlines()
                   if line.startswith(("import ", "from ")) and not line.startswith("from listener_probe")}
        assert modules <= set(sys.stdlib_module_names), (name, modules - set(sys.stdlib_module_names))


@needs_system_python
def test_a_listener_probe_runs_with_the_check_defined_in_an_isolated_interpreter():
    command = listener_probe_command("import sys; print(sorted(name for name in ('port_holders', 'same_holders', 'ForeignListener')"
                                     " if name in globals()), sys.flags.isolated)")
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    assert done.stdout.split("]")[0] + "]" == "['ForeignListener', 'port_holders', 'same_holders']"
    assert done.stdout.split("]")[1].strip() == "1"
