"""The family registry: specs checked when built, registration with gym ids, lookup with a hint, lazy hooks."""

from __future__ import annotations

import gymnasium as gym
import pytest

from rla_envs.core.errors import UnknownFamily
from rla_envs.core.registry import FamilySpec, families, family_spec, register_family, tasks_family
from rla_envs.core.task import Task

ENTRY = "rla_envs.textworld.env:TextWorldEnv"


def test_built_in_families_say_what_they_offer():
    assert {"alfworld", "textworld", "code", "desktop"} <= set(families())
    alfworld = family_spec("rla/AlfWorld-v0")
    assert alfworld.name == "alfworld" and alfworld.text_game and alfworld.agent == "text_game"
    assert alfworld.splits == ("valid_seen", "valid_unseen") and alfworld.split_option == "split"
    assert family_spec("code").step_labels is None and family_spec("code").expert_options is None
    assert family_spec("rla/TextWorld-v0").step_labels is not None and not family_spec("desktop").text_game


def test_unknown_names_suggest_the_closest():
    with pytest.raises(UnknownFamily, match="Did you mean 'textworld'"):
        family_spec("textwrld")
    with pytest.raises(KeyError, match="Did you mean 'rla/Code-v0'"):
        family_spec("rla/Code-v1")


@pytest.mark.parametrize("fields, match", [
    ({"name": ""}, "needs a name"),
    ({"env_ids": {}}, "at least one env id"),
    ({"env_ids": {"x/Y-v0": "no_colon"}}, "'module:attribute'"),
    ({"step_labels": "module_only"}, "step_labels must be a 'module:attribute'"),
    ({"agent": ""}, "agent kind"),
    ({"splits": ("a",)}, "splits and split_option go together"),
])
def test_bad_specs_fail_when_built(fields, match):
    with pytest.raises(ValueError, match=match):
        FamilySpec(**{"name": "bad", "env_ids": {"bad/Bad-v0": ENTRY}, "agent": "text_game", **fields})


def test_registration_registers_the_gym_ids_once_and_refuses_clashes():
    spec = FamilySpec(name="registry-test", env_ids={"registry-test/Game-v0": ENTRY}, agent="text_game")
    assert register_family(spec) is spec
    assert register_family(FamilySpec(name="registry-test", env_ids={"registry-test/Game-v0": ENTRY},
                                       agent="text_game")) is spec  # an equal spec again: nothing changes
    assert gym.spec("registry-test/Game-v0").entry_point == ENTRY and family_spec("registry-test/Game-v0") is spec
    with pytest.raises(ValueError, match="already registered"):
        register_family(FamilySpec(name="registry-test", env_ids={"registry-test/Game-v0": ENTRY}, agent="code"))
    with pytest.raises(ValueError, match="already belongs to family 'alfworld'"):
        register_family(FamilySpec(name="other", env_ids={"rla/AlfWorld-v0": ENTRY}, agent="text_game"))
    with pytest.raises(NotImplementedError, match="'registry-test' has no expert"):
        spec.expert_env([])
    with pytest.raises(NotImplementedError, match="no step_labels hook"):
        spec.hook("step_labels")


def test_hooks_load_on_first_use_and_tasks_name_their_family():
    assert family_spec("alfworld").hook("task_family").__name__ == "AlfWorldFamily"
    code = Task(family="code", instruction="add", spec={"prompt": "def add(a, b):"})
    assert tasks_family([code, code]).name == "code"
    with pytest.raises(ValueError, match=r"one family, got families \['alfworld', 'code'\]"):
        tasks_family([code, Task(family="alfworld", instruction="x", spec={})])
