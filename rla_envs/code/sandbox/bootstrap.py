"""The ``python -c`` program that starts a sandbox process (the local fork server, the docker agent).

It registers the packages on the way to :mod:`rla_envs.code.sandbox` as bare namespaces instead of
running their ``__init__`` files (which import gymnasium and numpy, and which the docker image does
not hold): a lean process forks faster, and the sandboxed program starts from a near-bare interpreter.
The program's first argument is the directory holding ``rla_envs``.
"""

from __future__ import annotations

__all__ = ["bootstrap_program"]

_PROLOGUE = """
import sys, types
root = sys.argv[1]
for name in ("rla_envs", "rla_envs.core", "rla_envs.code", "rla_envs.code.sandbox"):
    package = types.ModuleType(name)
    package.__path__ = [root + "/" + name.replace(".", "/")]
    sys.modules[name] = package
"""


def bootstrap_program(entry: str) -> str:
    """Python source that imports the sandbox package from ``sys.argv[1]`` and then runs ``entry``
    (a statement, e.g. ``"from rla_envs.code.sandbox.forkserver import main; main(int(sys.argv[2]))"``)."""
    return _PROLOGUE + entry + "\n"
