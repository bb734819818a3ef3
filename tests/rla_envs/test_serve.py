"""rla envs as OpenEnv servers (``python -m rla_envs.serve``), played with openenv-core's own WebSocket client.

Each server is a real ``python -m rla_envs.serve`` process on a free loopback port; the tests play it as a remote
trainer would and compare with the same env made locally.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import gymnasium as gym
import pytest

pytest.importorskip("openenv.core")
httpx = pytest.importorskip("httpx")

from rla_envs.serve import RlaEnvClient, TextAction, main  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    """``python -m rla_envs.serve ENV_ID`` in a subprocess, ready when /health answers."""

    def __init__(self, env_id: str, env_kwargs: dict, cache: Path, token: str | None = None):
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        command = [sys.executable, "-m", "rla_envs.serve", env_id, "--port", str(self.port),
                   "--env-kwargs", json.dumps(env_kwargs)] + (["--token", token] if token else [])
        self.process = subprocess.Popen(command, cwd=ROOT, env={**os.environ, "RLA_CACHE": str(cache)},
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        deadline = time.monotonic() + 300  # startup only: importing gymnasium, textworld and openenv under load
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the server exited: {self.process.stdout.read()}")
            try:
                if httpx.get(f"{self.url}/health", headers=headers, timeout=5).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.5)
        self.close()
        raise RuntimeError("the server did not answer /health in 300 s")

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("serve-cache")


def test_textworld_over_openenv_plays_as_the_local_env(cache, monkeypatch):
    kwargs = {"levels": ["custom-1"], "games_per_level": 1, "max_steps": 6}
    server = Server("rla/TextWorld-v0", kwargs, cache)
    try:
        monkeypatch.setenv("RLA_CACHE", str(cache))
        local = gym.make("rla/TextWorld-v0", **kwargs)
        observation, info = local.reset(seed=3)
        with RlaEnvClient(server.url) as remote:
            result = remote.reset(seed=3)
            assert result.observation.text == observation and result.done is False
            assert result.observation.info["admissible_actions"] == info["admissible_actions"]
            action = info["admissible_actions"][0]
            expected = local.step(action)
            result = remote.step(TextAction(text=action))
            assert (result.observation.text, result.reward) == (expected[0], expected[1])
            assert result.done == (expected[2] or expected[3])
            state = remote.state()
            assert (state.step_count, state.env_id) == (1, "rla/TextWorld-v0") and state.task_id == info["task_id"]
            result = remote.step(TextAction(text="\x00 not a command"))  # bad input: an invalid-action observation
            assert result.observation.info["invalid_action"] is True
        local.close()
    finally:
        server.close()


def test_alfworld_over_openenv_is_won_by_its_expert(cache):
    server = Server("rla/AlfWorld-v0", {"split": "valid_unseen", "task_types": ["pick_and_place_simple"],
                                        "n_per_type": 1, "expert": "handcoded", "max_steps": 40}, cache)
    try:
        with RlaEnvClient(server.url) as remote:
            result = remote.reset(seed=0)
            for _ in range(40):
                result = remote.step(TextAction(text=result.observation.info["expert_action"]))
                if result.done:
                    break
            assert result.done and result.reward == 1.0 and result.observation.info["won"] is True
    finally:
        server.close()


def test_code_over_openenv_scores_a_solution_and_still_confines_programs(cache, tmp_path):
    from rla_envs.code.tasks.formats import stdio_task

    task = stdio_task(statement="Read an integer and print it times three.", public=[("4\n", "12\n")],
                      hidden=[("333\n", "999\n")], reference_solution="print(int(input()) * 3)\n")
    outside = tmp_path / "written-by-the-program"
    server = Server("rla/Code-v0", {"mode": "multi", "max_attempts": 3}, cache)
    try:
        # a loopback server without a token refuses what a web page's request carries: an Origin, a foreign Host
        assert httpx.get(f"{server.url}/health", timeout=10).status_code == 200
        assert httpx.get(f"{server.url}/health", headers={"Origin": "https://example.com"}, timeout=10).status_code == 401
        assert httpx.get(f"{server.url}/health", headers={"Host": "attacker.example"}, timeout=10).status_code == 401
        with RlaEnvClient(server.url) as remote:
            remote.reset(options={"task": task.to_dict()})
            escape = f"open({str(outside)!r}, 'w').write('x')\nprint(int(input()) * 3)\n"
            result = remote.step(TextAction(text=escape))
            assert result.reward == 0.0 and not outside.exists()
            result = remote.step(TextAction(text="print(int(input()) * 3)\n"))
            assert result.reward == 1.0 and result.done and result.observation.info["won"] is True
    finally:
        server.close()


def test_a_token_server_refuses_requests_and_sessions_without_it(cache):
    server = Server("rla/Code-v0", {}, cache, token="s3cret+&#/")
    try:
        assert httpx.get(f"{server.url}/health", timeout=10).status_code == 401
        assert httpx.get(f"{server.url}/health", params={"token": "wrong"}, timeout=10).status_code == 401
        with pytest.raises(ConnectionError):
            RlaEnvClient(server.url).connect()
        with RlaEnvClient(server.url, token="s3cret+&#/") as remote:  # sent as ?token=, URL-encoded
            assert remote.reset(seed=0).observation.text
    finally:
        server.close()


def test_binding_beyond_loopback_needs_a_token(capsys, monkeypatch):
    monkeypatch.delenv("RLA_SERVE_TOKEN", raising=False)
    with pytest.raises(SystemExit) as exit_info:
        main(["rla/Code-v0", "--host", "0.0.0.0"])
    assert exit_info.value.code == 2 and "give a token" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["rla/NoSuch-v0"])
    assert "no env 'rla/NoSuch-v0'" in capsys.readouterr().err
