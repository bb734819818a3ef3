"""Rewriters on real ALFWorld tasks: mutator determinism and grading, LLM prompts and parsing."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest

from rla_envs.core.task import Task
from rla_envs.curriculum.rewriters import LLMRewriter, MutatorRewriter, Proposal, Rewriter, build_prompt


@pytest.fixture(scope="module")
def tasks(tmp_path_factory):
    """Six generated ALFWorld tasks (one per type) in a cache shared by this session's curriculum tests."""
    patch = pytest.MonkeyPatch()
    patch.setenv("RLA_CACHE", str(tmp_path_factory.getbasetemp() / "rla-cache-curriculum"))
    from rla_envs.alfworld.generated import generated_tasks

    yield generated_tasks("valid_unseen", n_per_type=1, seed=0, workers=2, progress=False)
    patch.undo()


@pytest.fixture(scope="module")
def family():
    from rla_envs.alfworld.family import AlfWorldFamily

    return AlfWorldFamily()


class Echo:
    """A picklable generator that returns fixed answers in turn and records the prompts it saw."""

    def __init__(self, *answers):
        self.answers, self.prompts = list(answers), []

    def __call__(self, prompt):
        self.prompts.append(prompt)
        return self.answers[(len(self.prompts) - 1) % len(self.answers)]


def test_mutator_is_deterministic_for_a_seed_and_graded(tasks, family):
    rewriter = MutatorRewriter(family, strengths=(1, 2))
    task = tasks[0]
    first = rewriter.propose(task, "harder", rng=np.random.default_rng(7))
    again = rewriter.propose(task, "harder", rng=np.random.default_rng(7))
    assert [p.task.id if p.ok else p.reason for p in first] == [p.task.id if p.ok else p.reason for p in again]
    assert [p.strength for p in first] == [1, 2]
    made = [p for p in first if p.ok]
    assert made, [p.reason for p in first]
    for proposal in made:
        assert proposal.task.parent == task.id and proposal.task.origin == "mutated"
        assert len(proposal.task.meta["stacked_mutations"]) == proposal.strength
        family.validate(proposal.task)
    slight = MutatorRewriter(family, strengths=(1,))
    other_seeds = {p.task.id for seed in range(4) for p in slight.propose(task, "harder", rng=seed) if p.ok}
    assert len(other_seeds) > 1  # the seed matters


def test_mutator_easier_adds_help(tasks, family):
    proposals = MutatorRewriter(family, strengths=(1,)).propose(tasks[5], "easier", rng=0)
    assert proposals[0].ok, proposals[0].reason
    assert proposals[0].task.meta["direction"] == "easier"


def test_mutator_rejection_is_a_proposal_with_reason(tasks):
    class NoMutations:
        name = "alfworld"

        def mutate(self, task, direction, rng):
            from rla_envs.core.errors import RewriteRejected

            raise RewriteRejected("none of them applies")

    proposals = MutatorRewriter(NoMutations(), strengths=(1, 3)).propose(tasks[0], "easier", rng=0)
    assert [p.ok for p in proposals] == [False, False]
    assert proposals[1].reason == "mutation 1 of 3 failed: none of them applies"


class RecordingFamily:
    """A family whose mutate records the diagnoses it was given and marks the task with them."""

    name = "alfworld"

    def __init__(self):
        self.seen = []

    def mutate(self, task, direction, rng, *, diagnoses=()):
        self.seen.append(tuple(diagnoses))
        meta = {"mutation": "edit", "guided_by": list(diagnoses[:1])}
        return task.derive(instruction=task.instruction + f" {len(self.seen)}", spec=task.spec, origin="mutated",
                           meta=meta)


class LegacyFamily:
    """A family written before mutate took diagnoses."""

    name = "alfworld"

    def mutate(self, task, direction, rng):
        return task.derive(instruction=task.instruction + " x", spec=task.spec, origin="mutated",
                           meta={"mutation": "edit"})


def test_mutator_passes_the_diagnoses_to_every_stacked_mutation(tasks):
    family, diagnoses = RecordingFamily(), ["3/4 failed runs never found the apple"]
    proposals = MutatorRewriter(family, strengths=(1, 2)).propose(tasks[0], "easier", diagnoses=diagnoses, rng=0)
    assert family.seen == [tuple(diagnoses)] * 3  # 1 + 2 stacked calls
    assert [list(p.task.meta["stacked_guided"]) for p in proposals] == [[True], [True, True]]
    family.seen.clear()
    MutatorRewriter(family, strengths=(1,)).propose(tasks[0], "easier", rng=0)
    assert family.seen == [()]


def test_mutator_calls_a_family_without_the_diagnoses_keyword_as_before(tasks):
    proposals = MutatorRewriter(LegacyFamily(), strengths=(1,)).propose(
        tasks[0], "easier", diagnoses=["3/4 failed runs never found the apple"], rng=0)
    assert proposals[0].ok and "stacked_guided" not in proposals[0].task.meta


def test_mutator_on_alfworld_lets_the_diagnoses_choose_the_edit(tasks, family):
    simple = next(t for t in tasks if t.spec["task_type"] == "pick_and_place_simple")
    diagnoses = ["4/4 failed runs: step judged bad by all 3 judgments: 'take mug 1 from countertop 1'"]
    rewriter = MutatorRewriter(family, strengths=(1,))
    for seed in range(2):
        proposal = rewriter.propose(simple, "easier", diagnoses=diagnoses, rng=seed)[0]
        assert proposal.ok, proposal.reason
        assert proposal.task.meta["mutation"] == "remove_distractors"  # what a wrong "take" asks for first
        assert list(proposal.task.meta["guided_by"]) == diagnoses
        assert list(proposal.task.meta["stacked_guided"]) == [True]


def test_prompt_carries_description_direction_rate_diagnoses_and_strength(tasks, family):
    echo = Echo("object: mug")
    rewriter = LLMRewriter(echo, attempts=3, family=family)
    rewriter.propose(tasks[0], "easier", success_rate=0.125, diagnoses=["3/4 failed runs never found the dishsponge"])
    assert len(echo.prompts) == 3
    for prompt, word in zip(echo.prompts, ("slight", "moderate", "strong")):
        assert family.describe(tasks[0]) in prompt
        assert "succeeds on this task 12% of the time" in prompt or "13% of the time" in prompt
        assert "- 3/4 failed runs never found the dishsponge" in prompt
        assert f"Make the task {word}ly easier" in prompt


def test_llm_valid_answer_gives_a_validated_rewritten_task(tasks, family):
    rewriter = LLMRewriter(Echo('Sure!\n```json\n{"object": "Apple", "receptacle": "Fridge"}\n```'), attempts=2,
                           family=family)
    proposals = rewriter.propose(tasks[0], "harder", success_rate=0.9)
    assert proposals[0].ok, proposals[0].reason
    new = proposals[0].task
    assert new.parent == tasks[0].id and new.origin == "rewritten"
    assert new.spec["pddl_params"]["object_target"] == "Apple" and new.spec["pddl_params"]["parent_target"] == "Fridge"
    family.validate(new)
    assert not proposals[1].ok and proposals[1].reason.startswith("duplicate")


def test_llm_batch_mode_and_bad_batches(tasks, family):
    class Batch:
        def __init__(self, answers):
            self.answers = answers

        def __call__(self, prompts):
            assert isinstance(prompts, list)
            return self.answers

    short = LLMRewriter(Batch(['{"object": "Apple", "receptacle": "Fridge"}']), attempts=3, batch=True, family=family)
    reasons = [p.reason for p in short.propose(tasks[0], "harder")]
    assert reasons[0] is None and reasons[1].startswith("no answer: the batch generator returned 1 texts for 3")
    wrong_type = LLMRewriter(Batch(None), attempts=2, batch=True, family=family)
    assert all(p.reason.startswith("not text") for p in wrong_type.propose(tasks[0], "harder"))


@pytest.mark.parametrize("answer, reason", [
    ("", "rejected by alfworld.apply_rewrite: unparseable"),
    ("I cannot help with that.", "rejected by alfworld.apply_rewrite: unparseable"),
    ('{"object": "Dragon"}', "rejected by alfworld.apply_rewrite: unknown type"),
    ('{"object": "DishSponge", "receptacle": "SinkBasin"}', "rejected by alfworld.apply_rewrite"),
    (12, "not text"),
    ("x" * 30_000, "too long: 30000 characters"),
])
def test_llm_garbage_is_rejected_with_reason(tasks, family, answer, reason):
    proposals = LLMRewriter(Echo(answer), attempts=1, family=family).propose(tasks[0], "harder")
    assert not proposals[0].ok
    assert proposals[0].reason.startswith(reason), proposals[0].reason


def test_llm_generator_errors_propagate(tasks, family):
    def broken(prompt):
        raise ConnectionError("backend down")

    with pytest.raises(ConnectionError):
        LLMRewriter(broken, family=family).propose(tasks[0], "easier")


def test_arguments_are_checked_and_rewriters_pickle(tasks, family):
    with pytest.raises(ValueError, match="direction"):
        MutatorRewriter(family).propose(tasks[0], "sideways")
    with pytest.raises(ValueError, match="strengths"):
        MutatorRewriter(strengths=(0,))
    with pytest.raises(TypeError, match="callable"):
        LLMRewriter("not a function")
    with pytest.raises(ValueError, match="attempts"):
        LLMRewriter(Echo("x"), attempts=0)
    for rewriter in (MutatorRewriter(family), LLMRewriter(Echo("x"), family=family)):
        assert isinstance(rewriter, Rewriter)
        assert isinstance(pickle.loads(pickle.dumps(rewriter)), type(rewriter))
    with pytest.raises(ValueError, match="either a task or a rejection"):
        Proposal(tasks[0], "harder", 1)
    assert "unknown rate" in build_prompt("d", "harder", None, [], 1)
    assert json.loads(json.dumps(LLMRewriter(Echo("x")).strengths())) == [1, 2, 3]


def test_llm_answer_keeps_parent_link(tasks):
    class Fake:
        name = "fake"

        def describe(self, task):
            return "a fake task"

        def apply_rewrite(self, task, text):
            return Task(family=task.family, instruction=text, spec=dict(task.spec), origin="rewritten")

    task = Task(family="fake", instruction="start", spec={"n": 1})
    proposal = LLMRewriter(Echo("other"), attempts=1, family=Fake()).propose(task, "harder")[0]
    assert proposal.task.parent == task.id and proposal.task.instruction == "other"


def test_thousand_garbage_answers_on_alfworld_are_rejected_and_leave_the_pool_as_it_was(tasks, family, tmp_path):
    """Random text, broken JSON, JSON with impossible swaps, huge strings: all refused with a reason."""
    from alfworld.gen import constants

    from rla_envs.alfworld import goals
    from rla_envs.alfworld.tasks import scene_from_task
    from rla_envs.curriculum.adapt import adapt
    from rla_envs.curriculum.pool import TaskPool
    from rla_envs.curriculum.pool_config import PoolConfig

    task = tasks[0]  # pick_and_place_simple: DishSponge -> SinkBasin
    scene = scene_from_task(task)
    absent_objects = sorted(set(constants.OBJECTS) - set(goals.object_types(scene)))
    absent_receptacles = sorted(set(constants.RECEPTACLES) - set(goals.receptacle_types(scene)))
    rng = np.random.default_rng(0)
    alphabet = list("abcdefghijklmnopqrstuvwxyz {}[]\":,0123456789\n`")

    def garbage(i):
        kind = i % 6
        if kind == 0:
            return "".join(rng.choice(alphabet, size=int(rng.integers(0, 300))))
        if kind == 1:
            return '```json\n{"object": "' + "".join(rng.choice(alphabet, size=6)) + '", "receptacle": '
        if kind == 2:
            return json.dumps({"object": str(rng.choice(absent_objects))})
        if kind == 3:
            return json.dumps({"object": "Apple", "receptacle": str(rng.choice(absent_receptacles))})
        if kind == 4:
            return "object: " + "z" * int(rng.integers(20_001, 100_000))
        return json.dumps({"object": [1, 2]} if i % 2 else {"receptacle": {"x": None}, "object": 7})

    answers = iter([garbage(i) for i in range(1000)])
    pool = TaskPool([task], PoolConfig(seed=0))
    pool.record_group(task.id, [1.0] * 16)
    assert pool.candidates_for_rewrite() == [(task.id, "harder")]
    before = json.loads(pool.save(tmp_path / "before.json").read_text())

    def never(task, n):
        raise AssertionError("garbage must not be measured")

    report = adapt(pool, LLMRewriter(lambda prompt: next(answers), attempts=1000, family=family), never,
                   family=family)
    assert len(report.attempts) == 1000 and not report.accepted and report.rollouts == 0
    assert all(a.stage == "rewrite" and a.reason for a in report.attempts)
    reasons = {a.reason.split(":")[0] for a in report.attempts}
    assert reasons == {"rejected by alfworld.apply_rewrite", "too long"}
    after = json.loads(pool.save(tmp_path / "after.json").read_text())
    assert after.pop("counters") == {**before.pop("counters"), "generated": 1000, "invalid": 1000,
                                     "invalid:rewrite": 1000}
    assert after == before  # tasks, slots, stats, history, rng state: unchanged
