"""OSWorld's own evaluator functions (``desktop-env`` 1.0.2) as a test oracle for our metrics.

``oracle_metric("slides", "compare_pptx_files")`` returns desktop-env's function of that name from
``desktop_env/evaluators/metrics/slides.py`` (``oracle_getter_module`` the same for getters), or skips the test
saying why when desktop-env is not installed (``scripts/install-osworld-oracle.sh`` installs it; CI runs
``python -m pytest -m oracle``).

desktop-env is never a runtime dependency: it is installed with ``--no-deps`` (its own requirements pin torch
2.5, transformers 4.35 and the cloud SDKs of its VM providers, which clash with ours), next to the few libraries
its metric modules import. Two things make its modules importable alone:

* its package ``__init__`` files import every metric and getter module (and through them easyocr, librosa,
  playwright, Google Drive...), so the packages are entered into ``sys.modules`` as bare namespaces over their
  folders and only the module a test asks for runs;
* a third-party module that a metric module imports at its top but that the metric under test never calls
  (``UNUSED_IMPORTS``) is replaced, only when it is not installed, by a placeholder whose names raise when called, so
  a metric that did need it fails loudly instead of passing.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import sys
import types
from collections.abc import Callable
from typing import Any

import pytest

__all__ = ["oracle_metric", "oracle_getter_module", "ORACLE_VERSION", "UNUSED_IMPORTS"]

ORACLE_VERSION = "1.0.2"
"""The desktop-env release our metrics are compared with."""

UNUSED_IMPORTS = ("easyocr", "borb", "borb.pdf", "librosa", "acoustid", "fastdtw", "playwright",
                  "playwright.sync_api", "pydrive", "pydrive.auth", "pydrive.drive", "PyPDF2")
"""Modules imported at the top of desktop-env's metric/getter modules that the functions we compare never call
(OCR, audio fingerprints, browser automation, Google Drive): placeholders when not installed."""

_PACKAGES = ("desktop_env", "desktop_env.evaluators", "desktop_env.evaluators.metrics",
             "desktop_env.evaluators.getters")


class _MissingName:
    """A name imported from a placeholder module: importing it works, using it raises."""

    def __init__(self, qualified: str) -> None:
        self._qualified = qualified

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"the OSWorld oracle used {self._qualified}, which is not installed; install it or "
                           f"compare another function")

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _MissingName(f"{self._qualified}.{name}")


class _Unavailable(types.ModuleType):
    """A placeholder for a module desktop-env imports but the oracle does not install: its names raise when used."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _MissingName(f"{self.__name__}.{name}")


@functools.cache
def _why_unavailable() -> str | None:
    spec = importlib.util.find_spec("desktop_env")
    if spec is None or not spec.submodule_search_locations:
        return ("OSWorld's desktop-env is not installed (the differential tests' oracle): "
                "run scripts/install-osworld-oracle.sh")
    from importlib.metadata import version

    found = version("desktop-env")
    if found != ORACLE_VERSION:
        return f"the oracle is desktop-env {ORACLE_VERSION}, found {found}: run scripts/install-osworld-oracle.sh"
    return None


def _enter_packages() -> None:
    """Put desktop-env's packages into sys.modules without running their ``__init__`` files."""
    for name in _PACKAGES:
        if name in sys.modules:
            continue
        parent, _, leaf = name.rpartition(".")
        locations = (importlib.util.find_spec(name).submodule_search_locations if not parent
                     else [f"{sys.modules[parent].__path__[0]}/{leaf}"])
        package = types.ModuleType(name)
        package.__path__ = list(locations)
        package.__package__ = name
        sys.modules[name] = package
    for name in UNUSED_IMPORTS:
        if name not in sys.modules and not _importable(name):
            sys.modules[name] = _Unavailable(name)


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a parent that is itself missing, or a placeholder without a spec
        return False


def _module(kind: str, module: str) -> types.ModuleType:
    why = _why_unavailable()
    if why:
        pytest.skip(why)
    _enter_packages()
    return importlib.import_module(f"desktop_env.evaluators.{kind}.{module}")


def oracle_metric(module: str, name: str) -> Callable[..., Any]:
    """desktop-env's metric ``name`` from ``desktop_env/evaluators/metrics/<module>.py`` (skips without it)."""
    return getattr(_module("metrics", module), name)


def oracle_getter_module(module: str) -> types.ModuleType:
    """desktop-env's getter module ``desktop_env/evaluators/getters/<module>.py`` (skips without it)."""
    return _module("getters", module)
