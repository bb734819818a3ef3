"""RolloutEngine on real envs with a scripted backend: batching, groups, workers, failures, token layout."""

from __future__ import annotations

import re

import gymnasium as gym
import pytest

from rla_envs.code.tasks.bundled import bundled_tasks
from rla_train.agents import TextGameAgent
from rla_train.backends.base import SamplingParams
from rla_train.backends.scripted import ScriptedBackend
from rla_train.rollout.engine import RolloutEngine
from rla_train.rollout.envs import EnvSpec
from tests.rla_envs.alfworld.conftest import alfworld_cache, alfworld_tasks  # noqa: F401  (session fixtures)

_LIST = re.compile(r"Admissible actions: (.*)\n")


def first_admissible(prompt: str) -> str:
    """A deterministic policy: the first admissible command of the last user turn."""
    found = _LIST.findall(prompt)
    return found[-1].split(", ")[0] if found else "look"


class FlakyEnv(gym.Wrapper):
    """An ALFWorld env whose step raises on the third action of episodes of one task."""

    def __init__(self, bad_task_id):
        import rla_envs  # noqa: F401

        super().__init__(gym.make("rla/AlfWorld-v0", max_steps=5))
        self.bad_task_id = bad_task_id

    def step(self, action):
        if self.unwrapped.task.id == self.bad_task_id and self.unwrapped._step_count == 2:
            raise RuntimeError("the game engine fell over")
        return self.env.step(action)


def test_one_generate_call_per_turn_for_all_live_episodes(alfworld_tasks):
    backend = ScriptedBackend(first_admissible)
    with RolloutEngine("rla/AlfWorld-v0", backend=backend, num_envs=6, progress=False,
                       env_options={"max_steps": 5}) as engine:
        episodes = engine.run(alfworld_tasks[:3], group_size=2)
    # 6 episodes, 6 envs, every episode truncated after 5 steps: 5 turns of 6 prompts each
    assert backend.batch_sizes == [6] * 5
    assert engine.stats.generate_calls == 5 and engine.stats.env_steps == 30
    assert [e.group for e in episodes] == [0, 0, 1, 1, 2, 2]
    assert [e.task_id for e in episodes] == [t.id for t in alfworld_tasks[:3] for _ in range(2)]
    assert all(e.num_steps == 5 and e.truncated and not e.won and e.error is None for e in episodes)


def test_finished_episodes_free_their_slot_for_queued_ones(alfworld_tasks):
    backend = ScriptedBackend(first_admissible)
    with RolloutEngine("rla/AlfWorld-v0", backend=backend, num_envs=4, progress=False,
                       env_options={"max_steps": 3}) as engine:
        episodes = engine.run(alfworld_tasks[:6])
    assert max(backend.batch_sizes) == 4 and sum(backend.batch_sizes) == 18  # 6 episodes x 3 steps
    assert backend.batch_sizes == [4, 4, 4, 2, 2, 2]
    assert all(len(e.steps) == len(e.actions) == 3 and len(e.observations) == len(e.infos) == 4 for e in episodes)


def test_worker_processes_give_the_same_transcripts(alfworld_tasks):
    runs = []
    for workers in (0, 2):
        with RolloutEngine("rla/AlfWorld-v0", backend=ScriptedBackend(first_admissible), num_envs=4,
                           workers=workers, progress=False, env_options={"max_steps": 4}) as engine:
            runs.append([(e.task_id, e.actions, e.observations) for e in engine.run(alfworld_tasks[:4])])
    assert runs[0] == runs[1]


def test_unparseable_answers_become_invalid_actions_not_exceptions(alfworld_tasks):
    backend = ScriptedBackend(["", "fly to the moon", "look"])
    with RolloutEngine("rla/AlfWorld-v0", backend=backend, num_envs=1, progress=False,
                       env_options={"max_steps": 3}) as engine:
        [episode] = engine.run(alfworld_tasks[:1])
    assert [s.parse_error is None for s in episode.steps] == [False, False, True]
    assert [i["invalid_action"] for i in episode.infos[1:]] == [True, True, False]


def test_an_env_that_raises_ends_only_its_episode(alfworld_tasks):
    bad = alfworld_tasks[1].id
    with RolloutEngine(lambda: FlakyEnv(bad), TextGameAgent(), ScriptedBackend(first_admissible),
                       num_envs=3, progress=False) as engine:
        episodes = engine.run(alfworld_tasks[:3])
    # The env raised on the agent's third action: a lost episode that counts (trained on), not a dropped one.
    assert episodes[1].action_error.startswith("step 2 failed: RuntimeError: the game engine fell over")
    assert episodes[1].error is None and not episodes[1].won
    assert len(episodes[1].steps) == len(episodes[1].actions) == 3 == len(episodes[1].observations) - 1
    assert episodes[1].infos[-1]["env_error"] == episodes[1].action_error
    assert episodes[0].error is None and episodes[2].error is None and episodes[0].num_steps == 5
    assert (engine.stats.action_failures, engine.stats.infrastructure_failures) == (1, 0)


def test_code_env_wins_with_reference_programs():
    tasks = bundled_tasks(1)[:3]
    answers = {t.instruction.strip(): f"```python\n{t.spec['reference_solution'].rstrip()}\n```" for t in tasks}

    def solve(prompt):
        return next((a for key, a in answers.items() if key in prompt), "no idea")

    long_answers = SamplingParams(max_new_tokens=4096)
    with RolloutEngine("rla/Code-v0", backend=ScriptedBackend(solve), num_envs=3, progress=False,
                       sampling=long_answers) as engine:
        episodes = engine.run(tasks, group_size=2)
    assert all(e.won and e.reward == 1.0 and e.num_steps == 1 for e in episodes)
    with RolloutEngine("rla/Code-v0", backend=ScriptedBackend(solve), num_envs=3, progress=False,
                       sampling=SamplingParams(max_new_tokens=20)) as engine:
        cut = engine.run(tasks[:1])[0]  # the answer is cut at 20 tokens: no program, no win
    assert not cut.won and cut.steps[0].finish_reason == "length" and len(cut.steps[0].completion_ids) == 20


def test_full_history_episodes_lay_out_as_one_sequence(alfworld_tasks):
    backend = ScriptedBackend(first_admissible)
    with RolloutEngine("rla/AlfWorld-v0", TextGameAgent(history_window=None, show_admissible="all"), backend, num_envs=2,
                       progress=False, env_options={"max_steps": 4}) as engine:
        episodes = engine.run(alfworld_tasks[:2])
    for episode in episodes:
        for step in episode.steps:
            assert len(step.input_ids) == len(step.mask) == len(step.prompt_ids) + len(step.completion_ids)
            assert len(step.logprobs) == len(step.completion_ids) == sum(step.mask)
        sequence = episode.sequence()
        assert sequence is not None
        total = sequence.prompt_ids + sequence.completion_ids
        assert bytes(total).decode() == episode.steps[-1].prompt + episode.steps[-1].completion
        assert sum(sequence.env_mask) == sum(len(s.completion_ids) for s in episode.steps)
        assert sorted(set(sequence.step_index) - {-1}) == [0, 1, 2, 3]
    windowed = RolloutEngine("rla/AlfWorld-v0", TextGameAgent(history_window=1), backend, num_envs=1, progress=False,
                             env_options={"max_steps": 4})
    with windowed:
        assert windowed.run(alfworld_tasks[:1])[0].sequence() is None


def test_sample_tasks_and_bad_arguments():
    spec = EnvSpec("rla/Code-v0", levels=[1])
    with RolloutEngine(spec, backend=ScriptedBackend(["x"]), num_envs=2, progress=False) as engine:
        tasks = engine.sample_tasks(5, seed=1)
        assert len(tasks) == 5 and len({t.id for t in tasks}) == 5
        assert [t.id for t in engine.sample_tasks(5, seed=1)] == [t.id for t in tasks]
        with pytest.raises(ValueError, match="group_size"):
            engine.run(tasks, group_size=0)
    with pytest.raises(TypeError, match="generation backend"):
        RolloutEngine("rla/Code-v0", backend=None)
    with pytest.raises(ValueError, match="num_envs"):
        RolloutEngine("rla/Code-v0", backend=ScriptedBackend(["x"]), num_envs=0)


class CrashesOnMarker(gym.Wrapper):
    """The Code env, whose step raises (as a grader choking on the program's output would) on a marked action."""

    def __init__(self):
        import rla_envs  # noqa: F401

        super().__init__(gym.make("rla/Code-v0", disable_env_checker=True))

    def step(self, action):
        if "CRASH" in action:
            raise RecursionError("maximum recursion depth exceeded while decoding a JSON array")
        return self.env.step(action)


def test_a_crash_by_the_agents_action_is_trained_on_as_a_wrong_answer():
    from rla_train.agents import make_agent
    from rla_train.signals.samples import RewardSpec, policy_samples

    task = bundled_tasks(1)[0]
    right = f"```python\n{task.spec['reference_solution'].rstrip()}\n```"
    answers = iter([right, right, "```python\nprint('wrong')\n```", "```python\n# CRASH\n```"])
    with RolloutEngine(CrashesOnMarker, make_agent("rla/Code-v0"), ScriptedBackend(lambda prompt: next(answers)),
                       num_envs=4, progress=False, sampling=SamplingParams(max_new_tokens=4096)) as engine:
        group = engine.run([task], group_size=4)
    assert [e.won for e in group] == [True, True, False, False]
    samples, _ = policy_samples([group], RewardSpec(use_judgments=False))
    # outcomes +1, +1, -1, -1: mean 0, std 1, so advantages +1, +1, -1, -1. Dropping the crash would give
    # .707, .707, -1.414 (the wrong answer alone) and the crash nothing: crashing would pay.
    assert [round(s.advantage, 3) for s in samples] == [1.0, 1.0, -1.0, -1.0]
    assert group[3].action_error.startswith("step 0 failed: RecursionError") and group[3].error is None
    assert (engine.stats.action_failures, engine.stats.infrastructure_failures) == (1, 0)


class SeedRecorder(ScriptedBackend):
    """A scripted backend that keeps the sampling seed of every generate call."""

    def __init__(self, respond):
        super().__init__(respond)
        self.seeds: list[int | None] = []

    def generate(self, prompts, n=1, sampling=None):
        self.seeds.append(None if sampling is None else sampling.seed)
        return super().generate(prompts, n, sampling)


def test_the_pools_validation_rollouts_leave_the_training_draws_as_they_were(alfworld_tasks):
    """EngineMeasure samples on a stream of its own: the training rollouts after a validation round get the seeds
    they would have got without it, the round's seeds are none of theirs, and the stream goes on from round to
    round (its turns are what a checkpoint saves)."""
    from rla_train.cotrainer.components import EngineMeasure

    runs = {}
    for validated in (False, True):
        backend = SeedRecorder(first_admissible)
        with RolloutEngine("rla/AlfWorld-v0", backend=backend, num_envs=2, seed=5, progress=False,
                           env_options={"max_steps": 3}) as engine:
            training = [engine.run(alfworld_tasks[:2])]
            calls = len(backend.seeds)
            measure = EngineMeasure(engine)
            if validated:
                assert measure(alfworld_tasks[2], 2) == [0.0, 0.0]  # 3 steps cannot win: measured, lost
                assert measure(alfworld_tasks[3], 2) == [0.0, 0.0]
                validation = backend.seeds[calls:]
                del backend.seeds[calls:]
            training.append(engine.run(alfworld_tasks[:2]))
            runs[validated] = (backend.seeds, engine.turns, [[(e.actions, e.observations) for e in r] for r in training])
    assert runs[True] == runs[False]  # the training draws, counter and transcripts: as if no round had been played
    assert len(validation) == measure.stream.turns == 6 and len(set(validation)) == 6  # 2 rounds x 3 turns
    assert not set(validation) & set(runs[False][0])
