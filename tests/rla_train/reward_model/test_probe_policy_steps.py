"""The reward model's probe holds the policy's own steps too, and reports the judge on them apart (issue 24).

On the toy corridor family (tests/rla_train/cotrainer/test_toy_family.py): ``forward`` is good, ``back`` bad
(except at the start, where it changes nothing), the oracle is exact.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from rla_train.backends.scripted import ScriptedBackend
from rla_train.cotrainer.judge_metrics import PROBE_POLICY_FILE, extend_probe, load_probe_extension
from rla_train.cotrainer.run_dir import RunDirError
from rla_train.reward_model.oracle import NoisyOracleJudge
from rla_train.reward_model.probe import (POLICY_SOURCE, build_probe, policy_probe_steps, probe_reward_model,
                                          steps_from_json, steps_to_json)
from tests.rla_train.cotrainer.test_toy_family import corridor_tasks


def key(step):
    return step.task.id, tuple(step.trajectory.actions), step.step, step.good, step.source


@pytest.fixture(scope="module")
def probe():
    return build_probe(corridor_tasks(), epsilons=(0.0, 1.0), episodes_per_task=4, seed=0, max_steps=4)


def scripted_policy():
    # on each corridor: forward (good), back (bad), forward, forward
    return ScriptedBackend(["forward", "back", "forward", "forward"])


def test_the_policys_labelled_steps_join_the_probe_and_are_measured_apart(probe):
    steps = policy_probe_steps(corridor_tasks(), scripted_policy(), None, seed=0, max_steps=4)
    # two episodes of 4 steps labelled [good, bad, good, good]: both bad ones kept, 2 good per bad = 4 good ones
    assert [s.source for s in steps] == [POLICY_SOURCE] * 6 and sum(not s.good for s in steps) == 2
    extended = probe.extended(steps)
    assert len(extended) == len(probe) + 6 and extended.counts["by_source"][POLICY_SOURCE] == {"good": 4, "bad": 2}
    assert len(probe.steps) == len(extended) - 6  # the probe it came from is unchanged
    right = probe_reward_model(NoisyOracleJudge(1.0, judgments_per_step=2, seed=0), extended)
    wrong = probe_reward_model(NoisyOracleJudge(0.0, judgments_per_step=2, seed=0), extended)
    assert right["policy"]["vote_balanced_accuracy"] == 1.0 and right["policy"]["steps"] == 6
    assert right["policy"]["good"] == 4 and right["policy"]["bad"] == 2 and right["steps"] == len(extended)
    assert wrong["policy"]["vote_balanced_accuracy"] == 0.0 and wrong["policy"]["balanced_accuracy"] == 0.0
    assert "policy" not in probe_reward_model(NoisyOracleJudge(1.0, seed=0), probe)  # no policy step, no entry


def test_the_policys_probe_steps_are_kept_in_the_run_dir_and_a_resume_reads_the_same_ones(probe, tmp_path):
    fresh = SimpleNamespace(probe=probe)
    added = extend_probe(fresh, tmp_path, scripted_policy(), None, episodes=2, seed=0, max_steps=4, split="train")
    assert added == 6 and (tmp_path / PROBE_POLICY_FILE).is_file()
    resumed = SimpleNamespace(probe=probe)
    assert load_probe_extension(resumed, tmp_path) == 6
    assert [key(s) for s in resumed.probe.steps] == [key(s) for s in fresh.probe.steps]
    assert load_probe_extension(SimpleNamespace(probe=probe), tmp_path / "elsewhere") == 0  # nothing saved there
    assert load_probe_extension(SimpleNamespace(probe=probe), tmp_path / "elsewhere", expected=0) == 0
    assert load_probe_extension(SimpleNamespace(probe=probe), tmp_path, expected=6) == 6
    # a run's checkpoints copied without the file beside them, or another run's file: refused, naming the file
    with pytest.raises(RunDirError, match="added 6 .* the file is missing"):
        load_probe_extension(SimpleNamespace(probe=probe), tmp_path / "elsewhere", expected=6)
    with pytest.raises(RunDirError, match="added 3 .* the file holds 6"):
        load_probe_extension(SimpleNamespace(probe=probe), tmp_path, expected=3)
    assert load_probe_extension(None, tmp_path / "elsewhere", expected=6) == 0  # no probe on this rank or run
    # at most one episode per probe game: 5 asked, 2 games, 2 played; 1 asked: the first game's 1 bad + 2 good steps
    assert extend_probe(SimpleNamespace(probe=probe), tmp_path / "five", scripted_policy(), None, episodes=5, seed=0,
                        max_steps=4, split="train") == 6
    assert extend_probe(SimpleNamespace(probe=probe), tmp_path / "one", scripted_policy(), None, episodes=1, seed=0,
                        max_steps=4, split="train") == 3
    steps = fresh.probe.steps[len(probe):]
    assert [key(s) for s in steps_from_json(steps_to_json(steps))] == [key(s) for s in steps]


def test_overwrite_removes_the_policys_probe_steps_of_the_earlier_run(tmp_path):
    from rla_train.cotrainer.run_dir import claim_run_dir

    (tmp_path / PROBE_POLICY_FILE).write_text("[]")  # an earlier run's, which a --resume of the new run would read
    with claim_run_dir(tmp_path, overwrite=True):
        assert not (tmp_path / PROBE_POLICY_FILE).exists()
