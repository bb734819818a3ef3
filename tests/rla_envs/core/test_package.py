"""Package-level promises: registration by string entry point, no torch on import."""

import subprocess
import sys

import gymnasium as gym
import pytest

import rla_envs
from rla_envs.core import get_family


def test_import_registers_envs_and_does_not_import_heavy_modules():
    code = ("import sys, rla_envs, gymnasium as gym; "
            "print(sorted(k for k in gym.registry if k.startswith('rla/'))); "
            "print([m for m in ('torch', 'textworld', 'alfworld', 'fast_downward', 'httpx') if m in sys.modules]); "
            "print(' '.join(m for m in sys.modules if m.startswith('rla_envs.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.splitlines()
    assert out[0] == "['rla/AlfWorld-v0', 'rla/Code-v0', 'rla/OSWorld-v0', 'rla/TextWorld-v0']"
    assert out[1] == "[]"
    # only the core and each family's package and light registration module: no env, engine, sandbox or desktop code
    families = ("alfworld", "code", "desktop", "textworld")
    allowed = {"rla_envs.core"} | {f"rla_envs.{f}" for f in families} | {f"rla_envs.{f}.registration" for f in families}
    loaded = set(out[2].split())
    assert loaded - allowed == {m for m in loaded if m.startswith("rla_envs.core.")}


def test_entry_points_are_strings():
    for spec in rla_envs.families().values():
        for env_id in spec.env_ids:
            assert isinstance(gym.spec(env_id).entry_point, str)


def test_unknown_family_suggests_closest():
    with pytest.raises(KeyError, match="alfworld"):
        get_family("alfwrld")
