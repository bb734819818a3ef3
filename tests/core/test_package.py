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
            "print([m for m in ('torch', 'textworld', 'alfworld', 'fast_downward', 'rla_envs.code.sandbox', 'rla_envs.desktop', 'httpx') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.splitlines()
    assert out[0] == "['rla/AlfWorld-v0', 'rla/Code-v0', 'rla/OSWorld-v0', 'rla/TextWorld-v0']"
    assert out[1] == "[]"


def test_entry_points_are_strings():
    for env_id in rla_envs.ENV_IDS:
        assert isinstance(gym.spec(env_id).entry_point, str)


def test_unknown_family_suggests_closest():
    with pytest.raises(KeyError, match="alfworld"):
        get_family("alfwrld")
