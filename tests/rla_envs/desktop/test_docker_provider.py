"""The ``docker`` desktop provider: a real desktop container through a Docker-API socket (marker ``docker``).

Needs a Docker-API server (``DOCKER_HOST``; on machines without a Docker daemon start podman's with
``export DOCKER_HOST=$(scripts/start-docker-api.sh)``) and the image built by ``containers/desktop/build.sh``;
those tests skip with the reason otherwise. The tests without the marker need neither.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import httpx
import numpy as np
import pytest

from rla_envs.desktop.providers import docker as docker_provider
from rla_envs.desktop.providers.base import make_provider
from rla_envs.desktop.providers.docker import DesktopContainerError, DockerProvider, source_hash
from tests.rla_envs.desktop.conftest import (RECOVERY_BOUND_S, WEDGING_ACTIONS, docker_client_or_skip, image_or_skip,
                                             listening_addresses, wait_until)

REPO_ROOT = Path(__file__).resolve().parents[3]
SCREEN = (1280, 800)


def containers_of(client, provider: DockerProvider, instance: str | None = None) -> list:
    """The containers labelled with ``instance`` (default: the provider's current one), stopped ones included."""
    instance = provider.instance if instance is None else instance
    return client.containers.list(all=True, filters={"label": f"{docker_provider.LABEL}={instance}"})


@pytest.fixture(scope="module")
def api():
    return docker_client_or_skip()


@pytest.fixture(scope="module")
def provider(api):
    image_or_skip(api)
    desktop = make_provider("docker", screen_size=SCREEN, client=api, fresh_sessions=False)  # the restore in place
    desktop.start()
    yield desktop
    desktop.close()


# ----------------------------------------------------------------- without a Docker-API socket


def test_source_hash_matches_build_script_digest():
    """build.sh labels the image with the digest the provider computes; both formulas must agree."""
    files = docker_provider.source_files()
    if not files:
        pytest.skip(f"no controller package at {REPO_ROOT / docker_provider.CONTROLLER_DIR}")
    script = ("cd \"$1\"; FILES=$(find rla_envs/desktop/controller -type f ! -path '*/__pycache__/*' ! -name '*.pyc' "
              "| LC_ALL=C sort); for f in $FILES; do printf '%s\\n%s\\n' \"$f\" \"$(sha256sum < \"$f\" | cut -d' ' -f1)\"; "
              "done | sha256sum | cut -d' ' -f1")
    digest = subprocess.run(["bash", "-c", script, "bash", str(REPO_ROOT)], capture_output=True, text=True,
                            check=True).stdout.strip()
    assert digest == source_hash() and len(digest) == 64
    assert 'find "$CONTROLLER" -type f ! -path \'*/__pycache__/*\' ! -name \'*.pyc\' | LC_ALL=C sort' in \
        (REPO_ROOT / "containers/desktop/build.sh").read_text()


@pytest.mark.parametrize("bad", ["1920", "axb", (10, 10), (1920, 1080, 3), None])
def test_bad_screen_size_is_refused(bad):
    with pytest.raises(ValueError, match="screen_size"):
        DockerProvider(screen_size=bad)


def test_no_socket_says_how_to_start_one(tmp_path):
    pytest.importorskip("docker", reason="the docker SDK is not installed (pip install \"rla[docker]\")")
    provider = DockerProvider(base_url=f"unix://{tmp_path}/no-such.sock")
    with pytest.raises(DesktopContainerError, match="start-docker-api.sh"):
        provider.start()
    provider.close()
    assert provider.container_id is None


# ----------------------------------------------------------------- against a Docker-API socket


@pytest.mark.docker
def test_missing_image_says_how_to_build_it(api):
    with pytest.raises(DesktopContainerError, match="containers/desktop/build.sh"):
        DockerProvider("rla-desktop-no-such-image:never", client=api).start()


@pytest.mark.docker
def test_stale_image_is_refused(api, monkeypatch):
    image_or_skip(api)
    monkeypatch.setattr(docker_provider, "source_hash", lambda root=None: "0" * 64)
    provider = DockerProvider(client=api)
    with pytest.raises(DesktopContainerError, match="rebuild it with containers/desktop/build.sh"):
        provider.start()
    assert containers_of(api, provider) == []


@pytest.mark.docker
def test_container_that_exits_reports_its_log(api):
    image_or_skip(api)

    class Failing(DockerProvider):
        def _command(self):
            return ["/bin/sh", "-c", "echo controller-broke-here >&2; exit 3"]

    provider = Failing(client=api, start_timeout=30)
    with pytest.raises(DesktopContainerError, match=r"(?s)exited with code 3.*controller-broke-here"):
        provider.start()
    assert containers_of(api, provider) == [], "a failed start must not leave its container"


@pytest.mark.docker
def test_port_is_published_on_loopback_only(provider):
    ports = provider.container.attrs["NetworkSettings"]["Ports"][f"{docker_provider.CONTROLLER_PORT}/tcp"]
    assert ports and {binding["HostIp"] for binding in ports} == {"127.0.0.1"}
    host_port = int(ports[0]["HostPort"])
    assert provider.client.base_url == f"http://127.0.0.1:{host_port}"
    # podman's conmon (or Docker's docker-proxy) holds the host port; it must be bound to 127.0.0.1 only
    # (0100007F in /proc/net/tcp), never to 0.0.0.0 or ::. A pure-NAT engine shows no listener at all.
    listeners = [address for _, address in listening_addresses(host_port)]
    assert all(address == "0100007F" for address in listeners), f"host port {host_port} listens on {listeners}"


@pytest.mark.docker
def test_request_without_the_token_is_refused(provider):
    base = provider.client.base_url
    assert httpx.get(f"{base}/platform", timeout=10).status_code == 401
    assert httpx.get(f"{base}/platform", headers={"Authorization": "Bearer not-the-token"},
                     timeout=10).status_code == 401
    assert httpx.post(f"{base}/execute", json={"command": ["id"]}, timeout=10).status_code == 401
    assert provider.client.platform() == "Linux"


@pytest.mark.docker
def test_screenshot_has_the_screen_size(provider):
    client = provider.client
    pixels = client.screenshot_array()
    assert pixels.dtype == np.uint8 and pixels.shape == (SCREEN[1], SCREEN[0], 3)
    assert client.screen_size() == SCREEN
    assert client.screenshot().startswith(b"\x89PNG\r\n\x1a\n")


@pytest.mark.docker
def test_session_runs_as_user_with_the_desktop_runtime(provider):
    reply = provider.client.execute("id -un; echo $HOME; python -c 'import pyautogui, mss; print(\"ok\")'",
                                    shell=True)
    assert reply["returncode"] == 0, reply
    assert reply["output"].split() == ["user", "/home/user", "ok"]


def _running(client, program: str) -> bool:
    return client.execute(["pgrep", "-x", program])["returncode"] == 0


@pytest.mark.docker
def test_has_app_answers_for_the_image_not_the_host(provider):
    assert provider.has_app("mousepad") and provider.has_app("localc") and provider.has_app("google-chrome")
    assert not provider.has_app("code")    # VS Code is not in the image
    assert not provider.has_app("pytest")  # on this host's PATH, not in the image


@pytest.mark.docker
def test_type_save_read_back_then_reset(provider):
    client = provider.client
    path = "/home/user/notes.txt"
    client.upload(path, b"first line\n")
    client.open_file(path)
    assert _running(client, "mousepad")
    reply = client.run_pyautogui("pyautogui.hotkey('ctrl', 'end'); pyautogui.write('typed in docker', interval=0.01); "
                                 "pyautogui.hotkey('ctrl', 's')")
    assert reply["status"] == "success", reply
    saved = wait_until(lambda: (client.get_file(path) or b"") if b"typed in docker" in (client.get_file(path) or b"")
                       else b"", timeout=20.0, interval=0.2)
    assert saved.startswith(b"first line") and b"typed in docker" in saved, saved

    provider.reset()
    assert not _running(client, "mousepad"), "reset must close the apps of the session"
    assert client.get_file(path) is None, "reset must restore /home/user"
    assert client.platform() == "Linux"


@pytest.mark.docker
def test_close_leaves_no_container(api):
    image_or_skip(api)
    provider = DockerProvider(client=api, screen_size="1024x768")
    client = provider.start()
    assert provider.start() is client, "start() is idempotent"
    assert [c.id for c in containers_of(api, provider)] == [provider.container_id]
    base_url = client.base_url
    provider.close()
    provider.close()
    assert containers_of(api, provider) == []
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"{base_url}/platform", timeout=3)


@pytest.mark.docker
def test_remove_leftovers_removes_only_containers_whose_owner_died(api, provider, monkeypatch):
    finished = subprocess.Popen(["true"])
    finished.wait()  # its pid is no longer a live process (pids are not reused this quickly)
    monkeypatch.setattr(docker_provider, "_owner_pid", lambda: finished.pid)
    orphan = DockerProvider(client=api, screen_size="800x600")
    orphan.start()
    monkeypatch.undo()
    try:
        name = orphan.container.name
        assert name in docker_provider.remove_leftovers(client=api)
        assert containers_of(api, orphan) == []
        assert [c.id for c in containers_of(api, provider)] == [provider.container_id], "a live owner's container stays"
    finally:
        orphan.close()


# ----------------------------------------------------------------- recovery and confinement in the container

@pytest.mark.docker
@pytest.mark.parametrize("action", list(WEDGING_ACTIONS.values()), ids=list(WEDGING_ACTIONS))
def test_an_action_that_wedges_or_ends_its_process_leaves_a_container_that_resets(provider, action):
    from rla_envs.desktop.env import OSWorldEnv

    env = OSWorldEnv(provider=provider, max_steps=10, accessibility_tree=False, action_timeout=3.0)
    env.reset(options={"task": "rla-os-make-dirs"})
    _, _, terminated, truncated, info = env.step(action)
    assert not (terminated or truncated)
    assert info["invalid_action"] or "scroll" in str(action).lower(), info
    started = time.monotonic()
    env.reset(options={"task": "rla-os-make-dirs"})
    print(f"{action!r}: reset {time.monotonic() - started:.2f} s")
    assert time.monotonic() - started < RECOVERY_BOUND_S
    assert not env.step("pyautogui.moveTo(123, 321)")[4]["invalid_action"]
    assert provider.client.cursor_position() == (123, 321)


@pytest.mark.docker
def test_agent_code_in_the_container_has_no_capabilities(provider):
    code = ("status = dict(line.split(':', 1) for line in open('/proc/self/status'))\n"
            "open('/home/user/caps', 'w').write(status['CapEff'].strip() + ' ' + status['CapBnd'].strip())")
    assert provider.client.run_pyautogui(code) == {"status": "success", "error": ""}
    assert provider.client.get_file("/home/user/caps") == b"0000000000000000 0000000000000000"


@pytest.mark.docker
def test_nothing_the_agent_writes_outside_the_home_reaches_the_next_episode_in_a_container(provider):
    from tests.rla_envs.desktop.test_reset_restores import check_nothing_planted_survives_a_reset

    check_nothing_planted_survives_a_reset(provider)


@pytest.mark.docker
def test_by_default_every_reset_starts_a_new_container(api):
    image_or_skip(api)
    provider = DockerProvider(client=api, screen_size="800x600")  # fresh_sessions: the default
    try:
        client = provider.start()
        first, first_instance = provider.container_id, provider.instance
        assert client.run_pyautogui("open('/tmp/planted', 'w').write('x')")["status"] == "success"
        provider.reset()
        assert provider.container_id != first and len(containers_of(api, provider)) == 1
        assert containers_of(api, provider, instance=first_instance) == []
        assert provider.client.get_file("/tmp/planted") is None
    finally:
        provider.close()
    assert containers_of(api, provider) == []


@pytest.mark.docker
def test_a_container_whose_controller_was_killed_is_replaced_on_reset(api):
    image_or_skip(api)
    provider = DockerProvider(client=api, screen_size="800x600", fresh_sessions=False)
    try:
        client = provider.start()
        first = provider.container_id
        reply = None
        try:
            reply = client.run_pyautogui("import os, signal; os.kill(os.getppid(), signal.SIGKILL)", timeout=10)
        except docker_provider.ControllerError:
            pass
        assert reply is None or reply["status"] == "error"
        provider.reset()
        assert provider.container_id != first and containers_of(api, provider) != []
        assert provider.client.run_pyautogui("pyautogui.moveTo(7, 8)") == {"status": "success", "error": ""}
    finally:
        provider.close()
