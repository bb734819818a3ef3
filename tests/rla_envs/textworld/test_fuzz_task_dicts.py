"""Fuzz: malformed TextWorld task dicts and game files handed to ``reset`` end in one-line rla errors."""

from __future__ import annotations

import shutil

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rla_envs.core.errors import ResetNeeded, RlaError
from tests.fuzz.strategies import FUZZ, assert_clear_error, edited, outcome

SPEC_KEYS = ("generator", "settings", "seed", "game_file", "quest", "objective", "hints", "nb_rooms", "recipe")


class _WouldGenerate(Exception):
    """Raised instead of running textworld's generator: the spec passed every check (generation costs ~10 s)."""


@pytest.fixture()
def no_generation(monkeypatch):
    def refuse(spec):
        raise _WouldGenerate(spec)

    monkeypatch.setattr("rla_envs.textworld.generate._make_base_game", refuse)


@settings(FUZZ, max_examples=400)
@given(data=st.data())
def test_reset_on_edited_task_dicts_raises_only_rla_errors(tw_env, tw_tasks, no_generation, data):
    from rla_envs.textworld.tasks import game_file_for

    bases = [t.to_dict() for t in tw_tasks]
    bases.append({**bases[0], "id": "", "spec": {"game_file": str(game_file_for(tw_tasks[0]))}})
    task = data.draw(edited(data.draw(st.sampled_from(bases)), extra_keys=SPEC_KEYS))
    error = outcome(tw_env.reset, options={"task": task})
    if error is not None and isinstance(error.__cause__, _WouldGenerate):
        return  # a well-formed spec of a game this machine has not built yet
    assert_clear_error(error, allowed=(RlaError,))
    if error is not None:
        with pytest.raises(ResetNeeded, match="reset"):
            tw_env.step("look")


@pytest.mark.parametrize("damage", ["truncate", "not_json", "wrong_shape", "not_utf8"])
def test_a_damaged_game_json_names_the_file(tw_env, tw_tasks, tmp_path, damage):
    from rla_envs.textworld.tasks import game_file_for

    source = game_file_for(tw_tasks[0])
    game = tmp_path / "game.z8"
    shutil.copy(source, game)
    text = source.with_suffix(".json").read_text()
    damaged = {"truncate": text[: len(text) // 2], "not_json": "{nope", "wrong_shape": '{"world": 5}',
               "not_utf8": None}[damage]
    if damaged is None:
        game.with_suffix(".json").write_bytes(b"\xff\xfe" + text.encode())
    else:
        game.with_suffix(".json").write_text(damaged)
    task = {"family": "textworld", "instruction": "x", "spec": {"game_file": str(game)}}
    error = outcome(tw_env.reset, options={"task": task})
    assert error is not None
    assert_clear_error(error, allowed=(RlaError,), names=(str(game),))
