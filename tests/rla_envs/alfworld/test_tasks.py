"""ALFWorld task sets: generated tasks (seeded, cached), real-data loading, Task <-> game conversions."""

from __future__ import annotations

import json

import pytest

from rla_envs.core.errors import DataNotFound, InvalidTask
from rla_envs.core.task import Task
from rla_envs.alfworld import generated as generated_module
from rla_envs.alfworld.generate import UNSEEN_FLOOR_PLANS, generate_game, split_jobs
from rla_envs.alfworld.scene import TASK_TYPES, render_problem
from rla_envs.alfworld.generated import DEFAULT_N_PER_TYPE, generated_tasks
from rla_envs.alfworld.tasks import (
    dataset_tasks, domain_and_grammar, game_from_scene, game_from_task, scene_from_task, task_from_game,
)
from rla_envs.alfworld.walkthrough import play_walkthrough

SPEC_KEYS = {"pddl_problem", "goal", "task_type", "pddl_params", "walkthrough", "floor_plan"}


# ------------------------------------------------------------------------------------------ generated

def test_generated_tasks_are_alfworld_tasks_with_a_complete_spec(alfworld_tasks):
    for task in alfworld_tasks:
        assert task.family == "alfworld" and task.origin == "generated"
        assert set(task.spec) == SPEC_KEYS
        assert task.instruction == task.spec["goal"]
        assert task.spec["floor_plan"] in UNSEEN_FLOOR_PLANS
        assert task.meta["split"] == "valid_unseen" and task.meta["source"] == "generated"
        assert "pddl_domain" not in task.spec and "grammar" not in task.spec
        assert Task.from_json(task.to_json()) == task
    assert len({t.id for t in alfworld_tasks}) == len(TASK_TYPES)


def test_a_second_call_reads_the_cache_without_generating(alfworld_tasks, monkeypatch):
    def fail(*args, **kwargs):
        raise AssertionError("generated again instead of reading the cache")

    monkeypatch.setattr(generated_module, "generate_split", fail)
    again = generated_tasks("valid_unseen", n_per_type=1, seed=0, workers=2, progress=False)
    assert again == alfworld_tasks
    with pytest.raises(AssertionError, match="generated again"):
        generated_tasks("valid_unseen", n_per_type=1, seed=1, progress=False)  # another seed is not cached


def test_cache_holds_one_playable_game_file_per_task(alfworld_tasks, alfworld_cache):
    for task in alfworld_tasks:
        path = task.meta["game_file"]
        assert path.startswith(str(alfworld_cache))
        with open(path) as handle:
            game = json.load(handle)
        assert game["pddl_problem"] == task.spec["pddl_problem"] and game["solvable"] is True


def test_generated_tasks_are_seeded(alfworld_tasks):
    task = alfworld_tasks[TASK_TYPES.index("pick_cool_then_place_in_recep")]
    job = (task.spec["floor_plan"], task.spec["task_type"], task.meta["seed"])
    rebuilt = task_from_game(generate_game(*job), origin="generated", meta=dict(task.meta))
    assert rebuilt.id == task.id and rebuilt == task


def test_an_interrupted_generation_keeps_the_games_it_finished(alfworld_cache, monkeypatch):
    real_generate_split = generated_module.generate_split
    jobs = split_jobs("train", 1, seed=3)

    def killed_after_two_games(*args, **kwargs):
        for count, item in enumerate(real_generate_split(*args, **kwargs)):
            if count == 2:
                raise KeyboardInterrupt("killed")
            yield item

    monkeypatch.setattr(generated_module, "generate_split", killed_after_two_games)
    with pytest.raises(KeyboardInterrupt):
        generated_tasks("train", n_per_type=1, seed=3, workers=1, progress=False)
    (folder,) = (alfworld_cache / "alfworld").rglob("*-train-n1-seed3")
    games = [folder / "games" / f"{task_type}-{plan}-{game_seed}.tw-pddl" for plan, task_type, game_seed in jobs]
    assert [path.exists() for path in games] == [True, True] + [False] * (len(jobs) - 2)
    finished = {path: path.read_text() for path in games[:2]}
    games[1].write_text(finished[games[1]][:100])  # a damaged file (not from our atomic writes) is redone

    regenerated = _record_generated_jobs(monkeypatch, real_generate_split)
    tasks = generated_tasks("train", n_per_type=1, seed=3, workers=1, progress=False)
    assert regenerated == jobs[1:]  # the intact finished game was reused, not generated again
    assert games[0].read_text() == finished[games[0]] and games[1].read_text() == finished[games[1]]
    assert [(t.spec["floor_plan"], t.spec["task_type"], t.meta["seed"]) for t in tasks] == jobs
    assert tasks[0] == task_from_game(json.loads(finished[games[0]]), origin="generated", meta=dict(tasks[0].meta))


def _record_generated_jobs(monkeypatch, real_generate_split) -> list:
    """Make ``generate_split`` record each job it generates; returns the (growing) list of jobs."""
    generated = []

    def recording(*args, **kwargs):
        for job, game in real_generate_split(*args, **kwargs):
            generated.append(job)
            yield job, game

    monkeypatch.setattr(generated_module, "generate_split", recording)
    return generated


def test_generating_some_task_types_makes_the_same_games_as_the_full_set(alfworld_tasks, alfworld_cache, monkeypatch):
    generated = _record_generated_jobs(monkeypatch, generated_module.generate_split)
    wanted = ["pick_cool_then_place_in_recep", "look_at_obj_in_light"]
    some = generated_tasks("valid_unseen", n_per_type=2, seed=5, task_types=wanted, workers=1, progress=False)
    assert sorted({job[1] for job in generated}) == sorted(wanted) and len(generated) == 4  # nothing else was made
    assert [t.spec["task_type"] for t in some] == [w for w in TASK_TYPES if w in wanted for _ in range(2)]
    every = generated_tasks("valid_unseen", n_per_type=2, seed=5, workers=1, progress=False)
    assert len(generated) == 2 * len(TASK_TYPES)  # the full set reused the four games already made
    assert some == [t for t in every if t.spec["task_type"] in wanted]
    assert generated_tasks("valid_unseen", n_per_type=2, seed=5, task_types=wanted[::-1], progress=False) == some
    with pytest.raises(ValueError, match="task_types must name some of"):
        generated_tasks("valid_unseen", n_per_type=2, seed=5, task_types=["pick_and_fly"], progress=False)


def test_default_size_and_bad_split():
    assert DEFAULT_N_PER_TYPE >= 1
    with pytest.raises(ValueError, match="unknown split 'test'"):
        generated_tasks("test", 1)


# ------------------------------------------------------------------------------------------ conversions

def test_game_from_task_rebuilds_the_game_file(alfworld_tasks):
    task = alfworld_tasks[0]
    game = game_from_task(task)
    domain, grammar = domain_and_grammar()
    assert game["pddl_domain"] == domain
    assert game["grammar"] == grammar.replace("UNKNOWN GOAL", task.instruction)
    assert game["walkthrough"] == list(task.spec["walkthrough"]) and game["solvable"] is True
    assert game_from_task(task.to_dict()) == game
    with pytest.raises(InvalidTask, match="expected an 'alfworld' task"):
        game_from_task(Task(family="textworld", instruction="x", spec={}))


def test_goal_text_that_the_grammar_would_mangle_is_refused(alfworld_tasks):
    task = alfworld_tasks[0]
    for bad_goal in ("put a mug in [cabinet 1]", 'put a "mug" in cabinet', "#intro#", ""):
        spec = dict(task.spec, goal=bad_goal)
        with pytest.raises(InvalidTask, match="cannot go into the ALFWorld grammar"):
            game_from_task(Task(family="alfworld", instruction=bad_goal, spec=spec))
    hinted = dict(task.spec, goal=task.instruction + ". Hint: look in cabinet 1, then drawer 2")
    assert "Hint: look in cabinet 1, then drawer 2" in game_from_task(Task("alfworld", hinted["goal"], hinted))["grammar"]


def test_scene_from_task_edits_and_rerenders(alfworld_tasks):
    task = alfworld_tasks[TASK_TYPES.index("pick_and_place_simple")]
    scene = scene_from_task(task)
    assert render_problem(scene) == task.spec["pddl_problem"]
    assert scene.goal.text == task.instruction
    edited = scene.copy()
    target = edited.objects_of_type(edited.goal.object_target)[0]
    target.receptacle = next(r.id for r in edited.receptacles if r.id != target.receptacle and r.openable)
    game = game_from_scene(edited)
    assert game["pddl_problem"] != task.spec["pddl_problem"]
    assert render_problem(scene) == task.spec["pddl_problem"]  # the copy did not touch the original
    assert play_walkthrough(game).won


# ------------------------------------------------------------------------------------------ real data

def _write_trial(root, split, task_dir, game, traj=None, solvable=True):
    trial = root / "json_2.1.1" / split / task_dir / "trial_T20190000_000000_000000"
    trial.mkdir(parents=True)
    stock_keys = {k: game[k] for k in ("pddl_domain", "grammar", "pddl_problem", "walkthrough")}
    (trial / "game.tw-pddl").write_text(json.dumps({**stock_keys, "solvable": solvable}))
    if traj is not None:
        (trial / "traj_data.json").write_text(json.dumps(traj))


def _task(tasks, task_type):
    return tasks[TASK_TYPES.index(task_type)]


@pytest.fixture
def fake_alfworld_data(tmp_path, alfworld_tasks, alfworld_games):
    """A tiny json_2.1.1 tree in ALFWorld's layout, made of generated games (stock game.tw-pddl keys only)."""
    clean = alfworld_games["pick_clean_then_place_in_recep"]
    look = alfworld_games["look_at_obj_in_light"]
    spec = _task(alfworld_tasks, "pick_clean_then_place_in_recep").spec
    traj = {"task_type": spec["task_type"], "pddl_params": dict(spec["pddl_params"]),
            "scene": {"floor_plan": spec["floor_plan"]}}
    _write_trial(tmp_path, "valid_seen", "pick_clean_then_place_in_recep-X-None-Y-1", clean, traj)
    _write_trial(tmp_path, "valid_seen", "look_at_obj_in_light-Z-None-DeskLamp-2", look)  # no traj_data.json
    _write_trial(tmp_path, "valid_seen", "pick_and_place_with_movable_recep-A-Bowl-B-3", clean, traj)
    _write_trial(tmp_path, "valid_seen", "pick_heat_then_place_in_recep-AppleSliced-None-C-4", clean, traj)
    _write_trial(tmp_path, "valid_seen", "pick_cool_then_place_in_recep-D-None-E-5", clean, traj, solvable=False)
    return tmp_path


def test_dataset_tasks_load_real_layout_and_skip_like_alfworld(fake_alfworld_data, alfworld_tasks, alfworld_games):
    tasks = dataset_tasks(fake_alfworld_data, "valid_seen")
    assert [t.spec["task_type"] for t in tasks] == ["look_at_obj_in_light", "pick_clean_then_place_in_recep"]
    look, clean = tasks
    assert all(t.origin == "dataset" and t.meta["source"] == "alfworld" for t in tasks)
    generated_clean = _task(alfworld_tasks, "pick_clean_then_place_in_recep")
    assert clean.instruction == generated_clean.instruction
    assert clean.spec == generated_clean.spec  # same content: same id, whatever the origin
    assert clean.id == generated_clean.id
    assert clean.meta["game_file"].endswith("game.tw-pddl")
    # Without traj_data.json the task type and targets are read from the PDDL goal.
    generated_look = _task(alfworld_tasks, "look_at_obj_in_light")
    assert look.spec["pddl_params"] == generated_look.spec["pddl_params"]
    assert look.instruction == generated_look.instruction and look.spec["floor_plan"] == ""
    assert game_from_task(look)["grammar"] == alfworld_games["look_at_obj_in_light"]["grammar"]


def test_dataset_root_from_env_or_json_folder(fake_alfworld_data, monkeypatch):
    monkeypatch.setenv("ALFWORLD_DATA", str(fake_alfworld_data))
    from_env = dataset_tasks(split="valid_seen")
    assert from_env == dataset_tasks(fake_alfworld_data / "json_2.1.1", "valid_seen")
    assert len(from_env) == 2


def test_missing_data_says_what_to_do(tmp_path, fake_alfworld_data, monkeypatch):
    monkeypatch.setenv("ALFWORLD_DATA", str(tmp_path / "nowhere"))
    with pytest.raises(DataNotFound, match="ALFWORLD_DATA.*alfworld-download"):
        dataset_tasks(split="train")
    with pytest.raises(DataNotFound, match="splits present.*valid_seen"):
        dataset_tasks(fake_alfworld_data, "train")
    empty = tmp_path / "empty"
    (empty / "json_2.1.1" / "train" / "some_task").mkdir(parents=True)
    with pytest.raises(DataNotFound, match="no solvable game.tw-pddl"):
        dataset_tasks(empty, "train")
