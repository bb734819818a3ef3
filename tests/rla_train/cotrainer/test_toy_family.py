"""A family added through the registry alone (defined here, nothing in rla_envs or rla_train names it) co-trains.

The toy family is a corridor: ``forward`` moves one cell toward the door, ``back`` one cell away, ``wait``
stays; the task is won at the door. Its expert always says ``forward``; its step-label oracle measures the
distance to the door. Registering its :class:`FamilySpec` is all it takes for the trainer to warm-start on the
expert's demonstrations, judge steps with the oracle (``reward_model.kind=noisy_oracle``) and train a step.
"""

from __future__ import annotations

import json
import math

import pytest
import torch

from rla_envs.core.env import TaskEnv, Transition
from rla_envs.core.labels import labels_from_distances
from rla_envs.core.registry import FamilySpec, family_spec, register_family
from rla_envs.core.task import Task
from rla_train.agents import TextGameAgent, make_agent
from rla_train.config import load_config

FAMILY = "toy-corridor"
COMMANDS = ("back", "forward", "wait")
MOVES = {"back": -1, "forward": 1, "wait": 0}
LENGTHS = (2, 3)
LABELLED: list[tuple[tuple[str, ...], list[bool | None]]] = []
"""Every call of the step-label oracle in this process: (actions, labels returned)."""


def corridor_tasks() -> list[Task]:
    """One task per corridor length."""
    return [Task(family=FAMILY, instruction=f"Walk to the door, {n} cells ahead.", spec={"length": n}) for n in LENGTHS]


class CorridorEnv(TaskEnv):
    """The toy family's env: text observations, admissible commands, and the expert's command with ``expert=True``."""

    family = FAMILY

    def __init__(self, tasks=None, *, expert: bool = False, max_steps: int = 50, **options):
        super().__init__(tasks, max_steps=max_steps, **options)
        self.expert = bool(expert)
        self.position = self.length = 0

    def default_tasks(self) -> list[Task]:
        return corridor_tasks()

    def _begin(self, task: Task):
        self.position, self.length = 0, task.spec["length"]
        return self._text(), self._current_info()

    def _play(self, action: str) -> Transition:
        if action not in MOVES:
            return Transition(f"Nothing happens. {self._text()}", invalid_action=True, info=self._current_info())
        self.position = min(max(self.position + MOVES[action], 0), self.length)
        return Transition(self._text(), won=self.position == self.length, info=self._current_info())

    def _current_info(self) -> dict:
        info = {"admissible_actions": list(COMMANDS)}
        if self.expert:
            info["expert_action"] = "forward"
        return info

    def _text(self) -> str:
        return f"You are {self.length - self.position} cells from the door."


def corridor_step_labels(task, actions, *, max_expert_steps: int = 50, rule: str = "no_regress") -> list[bool | None]:
    """The toy oracle: d(s) = cells left to the door (the expert walks straight there)."""
    length, position, distances = task.spec["length"], 0, [float(task.spec["length"])]
    for action in actions:
        position = min(max(position + MOVES.get(action, 0), 0), length)
        distances.append(float(length - position) if distances[-1] else None)  # None: after the win
    labels = labels_from_distances(distances, rule)
    LABELLED.append((tuple(actions), labels))
    return labels


SPEC = register_family(FamilySpec(
    name=FAMILY, env_ids={"toy/Corridor-v0": f"{__name__}:CorridorEnv"}, agent="text_game", text_game=True,
    expert_options={"expert": True}, step_labels=f"{__name__}:corridor_step_labels"))

RUN = ["env.id=toy/Corridor-v0", "env.options={}", "env.train_options={}", "env.eval_options={}", "env.max_steps=4",
       "env.num_envs=8", "env.workers=0", "rollout.group_size=4", "rollout.tasks_per_step=2", "train.steps=1",
       "train.mode=policy+reward", "reward_model.kind=noisy_oracle", "reward_model.model=null",
       "reward_model.oracle_accuracy=1.0", "reward_model.warm_start_steps=0", "reward_model.probe_episodes=0",
       "train.warm_start_demos=2", "train.warm_start_sft_steps=2", "train.warm_start_listwise_steps=0",
       "train.eval_episodes=2", "train.eval_every=0", "train.probe_episodes=0", "output.checkpoint_every=1",
       "output.keep_last=null", "policy.history_window=2", "policy.prompt_style=chat", "policy.show_admissible=last",
       "policy.learning_rate=0.01", "policy.temperature=50"]  # near-uniform choices at random init


def weights(path):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(path).state_dict()


def changed(a, b) -> bool:
    return any(not torch.equal(a[k], b[k]) for k in a)


def test_the_registry_alone_makes_the_family_known_everywhere():
    assert family_spec("toy/Corridor-v0") is SPEC and family_spec(FAMILY).env_id == "toy/Corridor-v0"
    assert SPEC.hook("step_labels") is corridor_step_labels  # the very function, imported by its entry point
    assert isinstance(make_agent("toy/Corridor-v0"), TextGameAgent)
    config = load_config(None, RUN, check_hardware=False)
    assert config.family == FAMILY
    with pytest.raises(NotImplementedError, match="toy-corridor.*generate_tasks"):
        SPEC.hook("generate_tasks")


def test_a_config_asking_for_what_the_family_lacks_fails_at_load():
    from rla_train.config import ConfigError

    with pytest.raises(ConfigError, match="probe_episodes .*family toy-corridor .*lacks"):
        load_config(None, [*RUN, "reward_model.probe_episodes=6"], check_hardware=False)  # no task generator
    with pytest.raises(ConfigError, match="warm_start_sft_steps=2 imitates the env's expert, which family textworld"):
        load_config(None, [*RUN, "env.id=rla/TextWorld-v0"], check_hardware=False)  # no expert in info
    with pytest.raises(ConfigError, match="noisy_oracle votes the expert's step labels.*toy-corridor.*not code"):
        load_config(None, [*RUN, "env.id=rla/Code-v0", "policy.action_mode=text", "train.warm_start_sft_steps=0"],
                    check_hardware=False)


def test_one_co_training_step_on_the_toy_family(tmp_path):
    from rla_train.cotrainer.loop import train
    from rla_train.backends.tiny import tiny_model_path

    torch.set_num_threads(1)
    config = load_config(None, [*RUN, f"output.dir={tmp_path}"], check_hardware=False)
    LABELLED.clear()
    summary = train(config, progress=False)

    # the warm start imitated the family's expert: one example per expert step of the 2 won demonstrations (2 + 3)
    assert summary["warm_start"]["warm_start_examples"] == float(sum(LENGTHS))
    start = weights(tiny_model_path(seed=config.train.seed))
    first, last = tmp_path / "checkpoints" / "step-000000", tmp_path / "checkpoints" / "step-000001"
    assert changed(start, weights(first / "policy"))
    # the step: 2 tasks x 4 rollouts, every step judged by the family's oracle (accuracy 1: votes = labels)
    (row,) = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert summary["steps"] == 1 and row["step"] == 1 and row["episodes"] == 8.0
    assert len(LABELLED) == 8 and row["mean_steps"] == sum(len(a) for a, _ in LABELLED) / 8
    labels = [label for _, episode in LABELLED for label in episode]
    assert row["judge_good_vote_fraction"] == pytest.approx(sum(label is True for label in labels) / len(labels))
    assert row["judge_unparseable_fraction"] == pytest.approx(sum(label is None for label in labels) / len(labels))
    assert math.isfinite(row["policy_loss"]) and row["policy_samples"] > 0
    assert changed(weights(first / "policy"), weights(last / "policy"))
