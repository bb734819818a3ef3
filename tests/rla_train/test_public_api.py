"""``import rla_train`` exposes the names a user needs, each loaded from its module on first use."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest

import rla_train


def test_all_lists_every_public_name_and_the_helpers():
    assert set(rla_train.__all__) == {*rla_train.PUBLIC_API, "missing_train_extra", "TRAIN_MODULES",
                                     "TRAIN_MIN_PYTHON"}
    assert {"TrainConfig", "load_config", "train", "RolloutEngine", "make_agent", "make_backend",
            "RewardModel"} <= set(rla_train.PUBLIC_API)


@pytest.mark.parametrize("name", sorted(rla_train.PUBLIC_API))
def test_each_public_name_is_the_object_its_module_defines(name):
    module = importlib.import_module(rla_train.PUBLIC_API[name])
    assert getattr(rla_train, name) is getattr(module, name)
    assert name in dir(rla_train)


def test_an_unknown_name_raises_attribute_error_naming_it():
    with pytest.raises(AttributeError, match="'not_a_name'"):
        rla_train.not_a_name  # noqa: B018


def test_importing_the_package_and_its_config_loads_no_trainer_stack():
    code = ("import json, sys, rla_train, rla_train.config; from rla_train import TrainConfig, make_agent; "
            "print(json.dumps([m for m in ('torch', 'transformers', 'trl', 'datasets') if m in sys.modules]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.splitlines()[-1]) == []
