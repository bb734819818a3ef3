"""The co-trainer's command lines say which extra to install when `pip install rla` (the envs alone) lacks it."""

import importlib.util

import pytest

import rla_train


@pytest.mark.parametrize("module_path", ["rla_train.run", "rla_train.collect", "benchmarks.evaluate.cli",
                                         "benchmarks.ablation.cli"])
def test_each_command_line_stops_at_the_door_naming_the_train_extra(module_path, monkeypatch, capsys):
    main = importlib.import_module(module_path).main
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *args: None if name in ("trl", "yaml") else real_find_spec(name, *args))
    assert main([]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("python -m ") and "(trl, yaml not installed)" in error
    assert error.endswith('pip install "rla[train]"') and "\n" not in error


def test_nothing_is_missing_in_the_dev_install():
    assert rla_train.missing_train_extra("x") is None


@pytest.mark.parametrize("module_path", ["rla_train.run", "benchmarks.evaluate.cli"])
def test_an_old_python_is_refused_at_the_door_with_the_version_it_needs(module_path, monkeypatch, capsys):
    import sys

    main = importlib.import_module(module_path).main
    monkeypatch.setattr(sys, "version_info", (3, 10, 14, "final", 0))
    assert main([]) == 2
    error = capsys.readouterr().err.strip()
    assert "needs Python >= 3.11" in error and "this is Python 3.10.14" in error and "\n" not in error
