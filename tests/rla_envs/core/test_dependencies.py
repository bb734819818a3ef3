"""The base install (``pip install rla``) is the envs alone: no rla_envs module imports torch or the trainer's stack."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

import rla_envs

PACKAGE_ROOT = Path(rla_envs.__file__).parent
# What no rla_envs module may import: the co-trainer's stack (the `train` and `vllm` extras).
TRAINER_STACK = ("torch", "transformers", "trl", "datasets", "accelerate", "vllm")
# Modules rla_envs code may need that the base install does not bring, and where they come from.
OPTIONAL = {
    **dict.fromkeys(("fastapi", "uvicorn", "pyatspi", "gi", "Xlib", "mss", "pyautogui"),
                    "the desktop controller's runtime (scripts/install-desktop.sh), not the host"),
    "docker": 'the docker extra: pip install "rla[docker]"',
    "openenv": 'the serve extra: pip install "rla[serve]"',
    # app.py is the controller's entry point inside the session, where its own directory is on the path
    "controller": "the desktop controller's runtime (its package is importable inside the session)",
    **dict.fromkeys(("httpx", "openpyxl", "docx", "pandas", "PIL"), 'the desktop extra: pip install "rla[desktop]"'),
}
MODULES = sorted(".".join(path.relative_to(PACKAGE_ROOT.parent).with_suffix("").parts).removesuffix(".__init__")
                 for path in PACKAGE_ROOT.rglob("*.py") if path.stem != "__main__")

IMPORT_ALL = """
import importlib, json, sys, traceback
results = {}
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
        results[name] = None
    except ImportError as error:  # a ModuleNotFoundError, or rla's MissingDependency raised from one
        cause = error if isinstance(error, ModuleNotFoundError) else error.__cause__
        missing = getattr(cause, "name", None) if isinstance(cause, ModuleNotFoundError) else None
        results[name] = {"missing": (missing or "").split(".")[0] or None, "error": traceback.format_exc(limit=3)}
    except Exception:
        results[name] = {"missing": None, "error": traceback.format_exc(limit=3)}
print(json.dumps({"results": results, "loaded": [m for m in %r if m in sys.modules]}))
""" % (TRAINER_STACK,)


@pytest.fixture(scope="module")
def imported_everything():
    """Every rla_envs module imported in one fresh interpreter: each module's failure (or None) and what got loaded."""
    run = subprocess.run([sys.executable, "-c", IMPORT_ALL, *MODULES], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.splitlines()[-1])


def test_the_walk_finds_the_packages_modules():
    assert len(MODULES) > 50 and {"rla_envs", "rla_envs.alfworld.env", "rla_envs.code.sandbox.docker"} <= set(MODULES)


def test_no_module_imports_the_trainer_stack(imported_everything):
    assert imported_everything["loaded"] == []


@pytest.mark.parametrize("module", MODULES)
def test_module_imports_with_the_base_install(imported_everything, module):
    failure = imported_everything["results"][module]
    if failure is None:
        return
    if failure["missing"] in OPTIONAL:
        pytest.skip(f"{module} needs {failure['missing']}, from {OPTIONAL[failure['missing']]}")
    pytest.fail(f"importing {module} failed:\n{failure['error']}")
