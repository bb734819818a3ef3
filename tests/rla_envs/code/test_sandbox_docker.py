"""The ``docker`` sandbox backend against a Docker-API socket (marker ``docker``).

Needs a Docker-API server (``DOCKER_HOST``; on machines without a Docker daemon start podman's with
``export DOCKER_HOST=$(scripts/start-docker-api.sh)``) and the image built by
``containers/code-sandbox/build.sh``; skips with the reason otherwise. Grading goes through
:func:`rla_envs.code.grading.grade` with the shared attack task in both forms.
"""

from __future__ import annotations

import time

import pytest

from rla_envs.code.grading import grade, sandbox_limits
from rla_envs.code.sandbox import Call, Limits, SandboxError, make_sandbox
from rla_envs.code.sandbox.docker_container import LABEL
from rla_envs.core.docker import connect
from rla_envs.core.errors import MissingDependency
from rla_envs.code.tasks.taskfile import load_task_file
from tests.rla_envs.code.test_sandbox_attacks import Listener
from tests.paths import SANDBOX_ATTACKS

pytestmark = pytest.mark.docker

CORPUS = SANDBOX_ATTACKS
ATTACKS = ("A01_infinite_loop", "A02_fork_bomb", "A04_huge_stdout", "A08_net_loopback", "A14_fake_result_marker")
MIB = 1 << 20


def docker_sandbox_or_skip():
    """A 2-slot docker sandbox and its API client; skips when there is no socket or no image."""
    try:
        client = connect(error=SandboxError)
    except (SandboxError, MissingDependency) as exc:
        pytest.skip(f"no Docker-API socket: {exc}")
    try:
        return make_sandbox("docker", slots=2), client
    except SandboxError as exc:
        if "image" in str(exc):
            pytest.skip(f"sandbox image unavailable: {exc}")
        raise


@pytest.fixture(scope="module")
def box():
    sandbox, _ = docker_sandbox_or_skip()
    yield sandbox
    sandbox.close()


@pytest.fixture(scope="module")
def listener():
    server = Listener()
    yield server
    server.close()


def _task(form: str):
    if not CORPUS.is_dir():
        pytest.skip(f"attack corpus not found at {CORPUS}")
    return load_task_file(CORPUS / "task.json", form=form)


def test_capabilities(box):
    caps = box.capabilities()
    assert caps["backend"] == "docker" and caps["network"] == "none" and caps["read_only_root"]
    assert caps["cap_drop"] == "ALL" and caps["agent"]["uid"] != 0 and caps["agent"]["pid"] >= 1


def test_function_and_stdio_forms(box):
    program = "def solve(x):\n    return [x, {'k': (1.5, None)}, b'\\x00']\nprint('side output')\n"
    [result] = box.run(program, [Call(function="solve", args=(3,))])
    assert result.status == "ok" and result.value == [3, {"k": (1.5, None)}, b"\x00"]
    [result] = box.run("import sys\nprint(sys.stdin.read().strip()[::-1])\n", [Call(stdin="abc\n")])
    assert result.status == "ok" and result.stdout == "cba\n" and result.exit_code == 0
    with box.session("def f(x):\n    return x * 2\n", Limits(timeout_s=2)) as session:
        assert [session.call(Call(function="f", args=(i,))).value for i in range(3)] == [0, 2, 4]


@pytest.mark.parametrize("form", ["function", "stdio"])
def test_good_scores_one_wrong_scores_zero(box, form):
    task = _task(form)
    assert grade(task, (CORPUS / "good_solution.py").read_text(), box).reward == 1.0
    assert grade(task, (CORPUS / "wrong_solution.py").read_text(), box).reward == 0.0


@pytest.mark.parametrize("form", ["function", "stdio"])
@pytest.mark.parametrize("attack", ATTACKS)
def test_attack_scores_zero(box, listener, attack, form):
    task = _task(form)
    program = (CORPUS / f"{attack}.py").read_text().replace("@@LOOPBACK_PORT@@", str(listener.port))
    assert "@@" not in program.replace("@@decoy@@", "")
    connections = listener.count
    timeout = sandbox_limits(task).timeout_s
    start = time.monotonic()
    result = grade(task, program, box)
    elapsed = time.monotonic() - start
    assert result.reward == 0.0, result.summary()
    # Direct runs: output capped, no ESCAPED line, the loopback listener never reached.
    limits = Limits(timeout_s=2.0, memory_mb=1024, processes=64)
    calls = [Call(function="solve", args=(3,))] if form == "function" else [Call(stdin="3\n")]
    for r in box.run(program, calls, limits):
        for stream in (r.stdout, r.stderr):
            assert len(stream.encode("utf-8", "surrogateescape")) <= MIB + 4096
        assert not any(line.startswith("ESCAPED") for line in (r.stdout + "\n" + r.stderr).splitlines())
    time.sleep(0.2)
    assert listener.count == connections
    # Every run ends near its wall timeout (stdio: 5 tests over 2 slots, 3 rounds at most).
    assert elapsed < (timeout + 2) * (1 if form == "function" else 3) + 5


def test_setsid_escape_is_swept(box):
    """After a session the agent sweeps its container: a setsid/double-fork escapee does not survive it."""
    program = ("import os, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
               "        time.sleep(60)\n    os._exit(0)\nprint('parent done')\n")
    for _ in range(2):  # both slots
        [result] = box.run(program, [Call(stdin="")], Limits(timeout_s=2.0))
        assert result.stdout == "parent done\n"
    time.sleep(0.3)
    for slot in box._slots:
        # an idle container holds the agent (pid 1), the warm spare's monitor and worker, and this probe
        code, out = slot.container.exec_run(["/usr/bin/python3", "-c", _LIST_PROCESSES])
        assert code == 0, out
        processes = out.decode().split()
        assert len(processes) <= 4, processes


_LIST_PROCESSES = "import os\nprint('\\n'.join(p for p in os.listdir('/proc') if p.isdigit()))"


def test_no_container_left_after_close():
    sandbox, client = docker_sandbox_or_skip()
    label = f"{LABEL}={sandbox.instance}"
    assert len(client.containers.list(all=True, filters={"label": label})) == 2
    [result] = sandbox.run("print(1)\n", [Call(stdin="")])
    assert result.stdout == "1\n"
    sandbox.close()
    assert client.containers.list(all=True, filters={"label": label}) == []
    with pytest.raises(SandboxError):
        sandbox.run("print(1)\n", [Call(stdin="")])


def test_lost_container_is_replaced():
    """A container that dies mid-session fails that session's calls and is replaced for the next run."""
    try:
        connect(error=SandboxError)
        sandbox = make_sandbox("docker", slots=1)
    except (SandboxError, MissingDependency) as exc:
        pytest.skip(f"docker sandbox unavailable: {exc}")
    try:
        with sandbox.session("def f(x):\n    return x\n", Limits(timeout_s=2)) as session:
            assert session.call(Call(function="f", args=(1,))).value == 1
            sandbox._slots[0].container.kill()
            assert session.call(Call(function="f", args=(2,))).status == "crashed"
        [result] = sandbox.run("print(5)\n", [Call(stdin="")])
        assert result.status == "ok" and result.stdout == "5\n"
    finally:
        sandbox.close()
