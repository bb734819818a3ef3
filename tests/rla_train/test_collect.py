"""Collecting trajectories with a real tiny model: batched turns, aligned tokens, judgments, resume."""

from __future__ import annotations

import json

import pytest

from rla_train.backends.base import SamplingParams
from rla_train.backends.hf import TransformersBackend
from rla_train.collect import collect, main
from rla_train.reward_model import RewardModel
from rla_train.rollout.engine import RolloutEngine
from rla_train.rollout.episode import Episode
from tests.rla_envs.alfworld.conftest import alfworld_cache, alfworld_tasks  # noqa: F401  (session fixtures)


class CountingBackend(TransformersBackend):
    """The real transformers backend, recording (prompts, n) per generate call."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls = []

    def generate(self, prompts, n=1, sampling=None):
        self.calls.append((len(prompts), n))
        return super().generate(prompts, n=n, sampling=sampling)


def read_episodes(path):
    return [Episode.from_dict(json.loads(line)) for line in path.read_text().splitlines()]


def recomputed_logprobs(backend, step, temperature):
    """Log-probabilities of the completion tokens by one plain forward pass over prompt + completion."""
    import torch

    ids = torch.tensor([step.input_ids])
    with torch.no_grad():
        logits = backend.model(ids).logits[0, :-1] / temperature
    chosen = torch.log_softmax(logits.float(), dim=-1).gather(1, ids[0, 1:, None])[:, 0]
    return chosen[len(step.prompt_ids) - 1:].tolist()


def test_collect_alfworld_batches_turns_and_lines_up_tokens(tiny_model_path, alfworld_tasks, tmp_path):
    backend = CountingBackend(str(tiny_model_path), device="cpu")
    judge = RewardModel(backend, judgments_per_step=2, sampling=SamplingParams(max_new_tokens=8))
    sampling = SamplingParams(max_new_tokens=10, temperature=0.8)
    with RolloutEngine("rla/AlfWorld-v0", backend=backend, num_envs=4, sampling=sampling, progress=False,
                       env_options={"max_steps": 3}) as engine:
        summary = collect(engine, judge, alfworld_tasks[:2], tmp_path, group_size=2)
    # one policy call per turn for the 4 live episodes, then one judge call for all 12 steps x 2 judgments
    assert backend.calls == [(4, 1), (4, 1), (4, 1), (12, 2)]
    episodes = read_episodes(tmp_path / "trajectories.jsonl")
    assert summary["episodes"] == len(episodes) == 4 and summary["judgments"] == 24
    assert [e.group for e in episodes] == [0, 0, 1, 1] and episodes[0].task_id == episodes[1].task_id
    for episode in episodes:
        assert len(episode.steps) == len(episode.actions) == len(episode.judgments) == 3
        assert all(len(votes) == 2 and set(votes) <= {-1, 0, 1} for votes in episode.judgments)
        assert len(episode.judgment_texts[0]) == 2
        for step in episode.steps:
            assert len(step.logprobs) == len(step.completion_ids) == sum(step.mask) > 0
            assert len(step.mask) == len(step.input_ids)
            assert step.prompt_ids == backend.tokenizer(step.prompt, add_special_tokens=False)["input_ids"]
            assert recomputed_logprobs(backend, step, 0.8) == pytest.approx(step.logprobs, abs=1e-4)


def test_collect_cli_on_code_writes_judged_episodes_and_resumes(tiny_model_path, tmp_path):
    args = ["--env", "rla/Code-v0", "--policy", str(tiny_model_path), "--out", str(tmp_path), "--judgments", "3",
            "--max-new-tokens", "16", "--judge-max-new-tokens", "8", "--num-envs", "2", "--no-progress",
            "--env-option", "levels=[1]"]
    assert main([*args, "--episodes", "2"]) == 0
    first = read_episodes(tmp_path / "trajectories.jsonl")
    assert len(first) == 2 and all(e.num_steps == 1 and len(e.judgments[0]) == 3 for e in first)
    assert all(e.task.family == "code" and e.reward in (0.0, 1.0) for e in first)
    with open(tmp_path / "trajectories.jsonl", "a") as handle:  # a crash mid-write leaves a torn line
        handle.write('{"task_id": "cut')
    assert main([*args, "--episodes", "4"]) == 0  # resumes: plays only the last two tasks
    summary = json.loads((tmp_path / "summary.json").read_text())
    episodes = read_episodes(tmp_path / "trajectories.jsonl")
    assert summary["resumed_after_episodes"] == 2 and summary["episodes"] == 2 and len(episodes) == 4
    assert [e.to_dict() for e in episodes[:2]] == [e.to_dict() for e in first]
    assert len({e.task_id for e in episodes}) == 4


def test_collect_cli_rejects_bad_arguments(tmp_path):
    with pytest.raises(SystemExit, match="multiple of --group-size"):
        main(["--env", "rla/Code-v0", "--policy", "x", "--episodes", "3", "--group-size", "2", "--out", str(tmp_path)])
    with pytest.raises(SystemExit, match="key=value"):
        main(["--env", "rla/Code-v0", "--policy", "x", "--episodes", "2", "--out", str(tmp_path),
              "--env-option", "levels"])
