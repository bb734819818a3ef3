"""The fast ALFWorld engine: transcripts identical to the stock textworld PDDL env, caching, isolation, threads."""

from __future__ import annotations

import random
import sys
import threading

import pytest

from rla_envs.alfworld import engine as engine_module
from rla_envs.alfworld.engine import AlfWorldEngine, EngineInUse, game_logic, translate
from rla_envs.core.errors import InvalidTask

textworld = pytest.importorskip("textworld")

GARBAGE = ["", "   ", "xyzzy", "take", "go to", "GO TO FRIDGE 1", "ouvrir le frigo ñ 冰箱", "look\x00",
           "x" * 1_000_000]


@pytest.fixture(scope="module")
def extra_games():
    """Four more games (train split, four task types), generated without the stock verification."""
    from rla_envs.alfworld.generate import generate_game, split_jobs

    jobs = split_jobs("train", 1, seed=0)
    return [generate_game(*job, verify=False) for job in jobs[:4]]


@pytest.fixture(scope="module")
def stock_env():
    """textworld's stock PddlEnv wrapped in alfworld's AlfredDemangler (what ALFWorld itself plays)."""
    from alfworld.agents.environment.alfred_tw_env import AlfredDemangler
    from textworld.envs.pddl import PddlEnv

    return AlfredDemangler(PddlEnv(textworld.EnvInfos(admissible_commands=True, won=True)), shuffle=False)


def _play(env, game, commands):
    """Load, reset and play ``commands``; returns [(observation, admissible, won)] per step (argv kept)."""
    argv = list(sys.argv)
    env.load(game)
    state = env.reset()
    transcript = [(state.feedback, list(state["admissible_commands"]), bool(state["won"]))]
    for command in commands:
        state, _, _ = env.step(command)
        transcript.append((command, state.feedback, list(state["admissible_commands"]), bool(state["won"])))
    sys.argv[:] = argv
    return transcript


def _commands(game, seed, extra_steps=2):
    """The walkthrough (minus its last command, so random play can continue), then random actions."""
    rng = random.Random(seed)
    commands = list(game["walkthrough"][:-1])
    for _ in range(extra_steps):
        commands.append(rng.choice(GARBAGE[:7] + ["look", "inventory", "help"] + list(game["walkthrough"])))
    return commands


def test_transcripts_are_identical_to_the_stock_engine(alfworld_games, extra_games, stock_env):
    games = list(alfworld_games.values()) + extra_games
    assert len(games) >= 10 and len({g["pddl_problem"] for g in games}) == len(games)
    fast = AlfWorldEngine(textworld.EnvInfos(admissible_commands=True, won=True))
    for index, game in enumerate(games):
        commands = _commands(game, seed=index)
        expected = _play(stock_env, game, commands)
        assert _play(fast, game, commands) == expected, f"game {index} differs from the stock engine"


def test_the_walkthrough_wins_and_random_admissible_play_matches_stock(alfworld_games, stock_env):
    game = alfworld_games["pick_two_obj_and_place"]
    fast = AlfWorldEngine()
    walk = _play(fast, game, game["walkthrough"])
    assert walk[-1][-1] is True and not any(step[-1] for step in walk[:-1])
    # Random admissible commands: the admissible list of every state is exercised.
    fast.load(game)
    state = fast.reset()
    rng, commands = random.Random(7), []
    for _ in range(15):
        commands.append(rng.choice(state["admissible_commands"]))
        state, _, _ = fast.step(commands[-1])
    assert _play(fast, game, commands) == _play(stock_env, game, commands)


@pytest.mark.slow
def test_transcripts_are_identical_to_the_stock_engine_on_thirty_games(stock_env):
    from rla_envs.alfworld.generated import generated_tasks
    from rla_envs.alfworld.tasks import game_from_task

    fast = AlfWorldEngine(textworld.EnvInfos(admissible_commands=True, won=True))
    for index, task in enumerate(generated_tasks("train", n_per_type=5, seed=0, progress=False)):
        game = game_from_task(task)
        fast.load(game)
        state, rng, commands = fast.reset(), random.Random(index), []
        for _ in range(25):  # random admissible play with some garbage, from the start
            commands.append(rng.choice(state["admissible_commands"] + GARBAGE[:7]))
            state, _, _ = fast.step(commands[-1])
        commands += game["walkthrough"]
        assert _play(fast, game, commands) == _play(stock_env, game, commands), f"task {task.id} differs"


def test_reset_restores_the_initial_state(alfworld_games):
    game = alfworld_games["pick_heat_then_place_in_recep"]
    engine = AlfWorldEngine()
    engine.load(game)
    first = engine.reset()
    for command in game["walkthrough"]:
        engine.step(command)
    again = engine.reset()
    assert again.feedback == first.feedback and again["admissible_commands"] == first["admissible_commands"]
    assert not again["won"]


def test_inadmissible_text_changes_nothing(alfworld_games):
    engine = AlfWorldEngine()
    engine.load(alfworld_games["pick_and_place_simple"])
    start = engine.reset()
    for command in GARBAGE:
        state, score, done = engine.step(command)
        assert state.feedback == "Nothing happens." and not engine.last_command_applied
        assert state["admissible_commands"] == start["admissible_commands"] and (score, done) == (0, False)
    engine.step(start["admissible_commands"][0])
    assert engine.last_command_applied


def test_translation_and_parse_are_cached_and_sys_argv_is_restored(alfworld_games):
    game = alfworld_games["pick_cool_then_place_in_recep"]
    argv = list(sys.argv)
    first = translate(game["pddl_domain"], game["pddl_problem"])
    assert sys.argv == argv
    assert translate(game["pddl_domain"], game["pddl_problem"]) is first
    # Games that differ only in their goal sentence share one parse of the domain and grammar.
    other = alfworld_games["pick_clean_then_place_in_recep"]
    logic_a = game_logic(game["pddl_domain"], game["grammar"])
    logic_b = game_logic(other["pddl_domain"], other["grammar"])
    assert logic_a.actions is logic_b.actions and logic_a.grammar._rules["task"] != logic_b.grammar._rules["task"]
    engine = AlfWorldEngine()
    for candidate in (game, other):
        engine.load(candidate)
        goal = candidate["grammar"].split("Your task is to: ", 1)[1].split('."', 1)[0]
        assert engine.reset().feedback.endswith(f"Your task is to: {goal}.")


def test_two_engines_in_one_process_keep_their_own_game(alfworld_games):
    game_a, game_b = alfworld_games["pick_and_place_simple"], alfworld_games["pick_two_obj_and_place"]
    alone_a = _play(AlfWorldEngine(), game_a, game_a["walkthrough"])
    alone_b = _play(AlfWorldEngine(), game_b, game_b["walkthrough"])
    engine_a, engine_b = AlfWorldEngine(), AlfWorldEngine()
    engine_a.load(game_a)
    engine_b.load(game_b)
    states_a, states_b = [engine_a.reset()], [engine_b.reset()]
    for step in range(max(len(game_a["walkthrough"]), len(game_b["walkthrough"]))):
        if step < len(game_a["walkthrough"]):
            states_a.append(engine_a.step(game_a["walkthrough"][step])[0])
        if step < len(game_b["walkthrough"]):
            states_b.append(engine_b.step(game_b["walkthrough"][step])[0])
    assert [s.feedback for s in states_a] == [t[0] if i == 0 else t[1] for i, t in enumerate(alone_a)]
    assert [s.feedback for s in states_b] == [t[0] if i == 0 else t[1] for i, t in enumerate(alone_b)]
    assert states_a[-1]["won"] and states_b[-1]["won"]


def test_engines_in_separate_threads_play_correctly(alfworld_games):
    games = list(alfworld_games.values())[:3]
    expected = [_play(AlfWorldEngine(), game, game["walkthrough"]) for game in games]
    engine_module.clear_caches()  # make the threads parse and translate concurrently
    results: dict[int, object] = {}

    def worker(index):
        try:
            results[index] = _play(AlfWorldEngine(), games[index], games[index]["walkthrough"])
        except Exception as exc:  # reported below
            results[index] = exc

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(games))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [results[i] for i in range(len(games))] == expected


def test_using_a_busy_engine_from_another_thread_raises(alfworld_games):
    engine = AlfWorldEngine()
    engine.load(alfworld_games["look_at_obj_in_light"])
    engine.reset()
    errors = []
    engine._busy.acquire()  # as if another thread were inside step()
    try:
        thread = threading.Thread(target=lambda: errors.append(_catch(lambda: engine.step("look"))))
        thread.start()
        thread.join()
    finally:
        engine._busy.release()
    assert len(errors) == 1 and isinstance(errors[0], EngineInUse) and "not thread-safe" in str(errors[0])
    assert engine.step("look")[0].feedback  # usable again once free


def _catch(function):
    try:
        function()
    except Exception as exc:
        return exc
    return None


def test_closed_engines_hand_their_planner_to_new_ones(alfworld_games):
    game = alfworld_games["pick_and_place_simple"]
    expected = _play(AlfWorldEngine(), game, game["walkthrough"])
    for _ in range(3):  # unloading the planner library here used to crash the next load
        engine = AlfWorldEngine()
        assert _play(engine, game, game["walkthrough"]) == expected
        engine.close()
        with pytest.raises(RuntimeError, match="before load"):
            engine.reset()


def test_bad_games_raise_invalid_task(alfworld_games):
    engine = AlfWorldEngine()
    with pytest.raises(InvalidTask, match="pddl_problem"):
        engine.load({"pddl_domain": "x", "grammar": "y"})
    game = dict(alfworld_games["pick_and_place_simple"], pddl_problem="(define (problem broken)")
    with pytest.raises(InvalidTask, match="could not be translated"):
        engine.load(game)
    with pytest.raises(RuntimeError, match="before"):
        AlfWorldEngine().reset()


def test_a_grammar_expression_that_calls_code_is_refused_not_run(extra_games, tmp_path):
    # A game file is data: its grammar's #{...}# expressions may read attributes, never call anything.
    marker = tmp_path / "grammar-ran"
    hostile = f"__import__('os').mkdir({str(marker)!r}) or r.name"
    game = dict(extra_games[0])
    game["grammar"] = game["grammar"].replace("{r.name}", "{" + hostile + "}")
    assert game["grammar"] != extra_games[0]["grammar"]
    engine = AlfWorldEngine()
    with pytest.raises(InvalidTask, match="not plain data access"):
        engine.load(game)
        engine.reset()
        for command in game["walkthrough"]:
            engine.step(command)
    assert not marker.exists()
