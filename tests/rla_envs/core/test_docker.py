"""The docker helper both docker backends use: connecting, checking an image's labels, the source digest."""

from __future__ import annotations

import subprocess
from types import SimpleNamespace

import pytest

from rla_envs.code.sandbox.docker_image import source_files, source_hash
from rla_envs.core.docker import ImageKind, check_image, connect, sources_digest
from rla_envs.core.errors import RlaError
from tests.paths import REPO_ROOT


class ImageTrouble(RlaError, RuntimeError):
    pass


KIND = ImageKind(name="toy", label="rla.toy", protocol="3", build_script="containers/toy/build.sh",
                 sources="toy sources", error=ImageTrouble)


def test_the_sandbox_digest_is_the_one_build_sh_labels_the_image_with():
    # the file list and the digest exactly as containers/code-sandbox/build.sh makes them
    script = ('cd "$1"; . containers/common.sh; FILES=$({ echo rla_envs/core/errors.py; echo rla_envs/core/closing.py; '
              'ls rla_envs/code/sandbox/*.py; } | LC_ALL=C sort); sources_digest "$1" $FILES')
    digest = subprocess.run(["bash", "-c", script, "bash", str(REPO_ROOT)], capture_output=True, text=True,
                            check=True).stdout.strip()
    assert digest == source_hash() == sources_digest(REPO_ROOT, source_files()) and len(digest) == 64
    assert "ls rla_envs/code/sandbox/*.py; } | LC_ALL=C sort" in (REPO_ROOT / "containers/code-sandbox/build.sh").read_text()


def test_sources_digest_by_hand(tmp_path):
    import hashlib

    (tmp_path / "a.py").write_text("x = 1\n")
    content_digest = hashlib.sha256(b"x = 1\n").hexdigest()
    expected = hashlib.sha256(f"a.py\n{content_digest}\n".encode()).hexdigest()
    assert sources_digest(tmp_path, ["a.py"]) == expected


def test_no_socket_raises_the_backends_error_saying_how_to_start_one(tmp_path):
    pytest.importorskip("docker", reason='the docker SDK is not installed (pip install "rla[docker]")')
    with pytest.raises(ImageTrouble, match=r"no Docker-API server answers at unix://.*start-docker-api\.sh"):
        connect(f"unix://{tmp_path}/no-such.sock", error=ImageTrouble, timeout=5)


def _client_with(labels: dict | None):
    """A stand-in Docker client holding one image with ``labels`` (None: no image at all)."""
    import docker.errors

    def get(name):
        if labels is None:
            raise docker.errors.ImageNotFound(f"no such image: {name}")
        return SimpleNamespace(id="sha256:abc", labels=labels, attrs={"Config": {"Labels": labels}})

    return SimpleNamespace(images=SimpleNamespace(get=get))


def test_check_image_refuses_a_missing_foreign_or_stale_image_and_says_how_to_build_it():
    pytest.importorskip("docker", reason='the docker SDK is not installed (pip install "rla[docker]")')
    with pytest.raises(ImageTrouble, match="the toy image 'toy:1' is not on the Docker-API server; build it with "
                                           "containers/toy/build.sh"):
        check_image(_client_with(None), "toy:1", KIND, None)
    with pytest.raises(ImageTrouble, match="not an rla toy image of protocol 3"):
        check_image(_client_with({"rla.toy.protocol": "2"}), "toy:1", KIND, None)
    stale = _client_with({"rla.toy.protocol": "3", "rla.toy.source-hash": "1" * 64})
    with pytest.raises(ImageTrouble, match=r"other toy sources than this checkout's \(image 111111111111, here "
                                           r"000000000000\); rebuild it with containers/toy/build.sh"):
        check_image(stale, "toy:1", KIND, "0" * 64)
    assert check_image(stale, "toy:1", KIND, None).id == "sha256:abc"  # check_image=False: the hash is not asked
    assert check_image(stale, "toy:1", KIND, "1" * 64).id == "sha256:abc"
