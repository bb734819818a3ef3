"""The docker sandbox's image: what it carries, the digest of those sources, and the check before use.

The image (``containers/code-sandbox``, built by its ``build.sh``) holds only the sandbox package and
the two core modules it imports, under :data:`IMAGE_CODE_ROOT`; ``build.sh`` labels it with
:func:`source_hash` of those files, so a host never drives an agent of other code than its own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rla_envs.code.sandbox.base import SandboxError
from rla_envs.code.sandbox.docker_protocol import PROTOCOL
from rla_envs.core.docker import ImageKind, check_image, sources_digest

__all__ = ["DEFAULT_IMAGE", "IMAGE", "IMAGE_CODE_ROOT", "source_files", "source_hash", "checked_image"]

DEFAULT_IMAGE = "rla-code-sandbox:latest"
IMAGE_CODE_ROOT = "/opt/rla"
"""Where the image holds ``rla_envs/...``."""
IMAGE = ImageKind(name="sandbox", label="rla.sandbox", protocol=PROTOCOL,
                  build_script="containers/code-sandbox/build.sh", sources="sandbox sources", error=SandboxError)
_CORE_FILES = ("rla_envs/core/errors.py", "rla_envs/core/closing.py")  # what the sandbox modules import from core
_REPO_ROOT = Path(__file__).resolve().parents[3]


def source_files(root: str | Path | None = None) -> list[str]:
    """The files the image carries (relative to the repository root), sorted."""
    root = Path(root) if root is not None else _REPO_ROOT
    sandbox = [f"rla_envs/code/sandbox/{p.name}" for p in (root / "rla_envs/code/sandbox").glob("*.py")]
    return sorted([*_CORE_FILES, *sandbox])


def source_hash(root: str | Path | None = None) -> str:
    """Digest of the sandbox sources; ``build.sh`` stores the same digest in the image label
    ``rla.sandbox.source-hash``."""
    root = Path(root) if root is not None else _REPO_ROOT
    return sources_digest(root, source_files(root))


def checked_image(client: Any, image: str, check_sources: bool) -> Any:
    """The sandbox image ``image`` (a docker SDK Image) once it is known to speak this protocol and, with
    ``check_sources``, to carry this checkout's sandbox code; :class:`SandboxError` saying how to build it otherwise."""
    return check_image(client, image, IMAGE, source_hash() if check_sources else None)
