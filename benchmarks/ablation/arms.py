"""The ablation's arms: RLAnything's training modes in their order, plus judges of known accuracy.

Table 1 of the method orders ``outcome_only < policy < policy+reward < policy+reward+env``; ``reward_only``
(the policy rewarded by the judge's step votes alone) sits outside that order. The noisy-oracle arms
(``train.mode=policy`` with ``reward_model.kind=noisy_oracle``: the step-label oracle with each vote flipped with
probability 1 − a) calibrate the integrated reward: at a = 0.5 the votes carry no information, so that arm must
match ``outcome_only`` within noise; at a = 0.8 it shows what an informative judge buys. Any accuracy can be named
as ``oracle@A`` (gate B of the learning issue runs ``oracle@0.9`` and ``oracle@0.75``); ``oracle@A-persistent`` errs
on the same steps on every visit, all votes alike, as a learned judge does (``reward_model.oracle_noise=persistent``,
:mod:`rla_train.reward_model.oracle`; the real stack only). ``control`` is
``outcome_only`` again from the same warm start with another training random stream (``train.training_stream=1``):
its difference from ``outcome_only`` is run-to-run noise, the yardstick for every other difference. ``gigpo`` is
the step-credit baseline without a judge (verl-agent's GiGPO, ``train.mode=gigpo``): what a learned judge has to
beat. ``judge@ExK`` is the learned judge in gate B's design: ``train.mode=policy`` (the judge gives votes and is not
trained) with a fresh judge that the arm's run warm-starts first on the planner's labels of E episodes (half the
searching expert's, half the seed's warm-started policy's) for K steps, as the main job's judge starts
(``reward_model.warm_start_episodes`` / ``warm_start_steps``; ``judge@144x300`` is the CPU default's);
``judge@ExK-linear`` decays the warm start's learning rate linearly to 0 (``reward_model.warm_start_schedule=linear``,
what gate C's largest warm start, ``judge@1296x32000-linear``, takes); ``judge+reward@ExK[-linear]`` is the same
judge co-trained beside the policy (``train.mode=policy+reward``, the reward model's objective as configured:
``labelled_balanced`` by default), to keep it right on the states the moving policy reaches; ``judge+reward+env@ExK[-linear]``
adds the environment's adaptation (``train.mode=policy+reward+env``: the full method with that judge), so that Table 1's
arms can all run with one warm-started judge; set their other options (the label rule, the learning rate) with ``--set``. The synthetic family has no warm
start: there it is the ``policy`` arm.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass

from rla_train.config.fields import MODES

__all__ = ["Arm", "ARMS", "ORDERED", "DEFAULT_ARMS", "QUICK_ARMS", "get_arms", "oracle_arm", "judge_arm",
           "table1_order"]


@dataclass(frozen=True)
class Arm:
    """One arm: its name in tables, its ``train.mode``, and the judge (``model`` or a noisy oracle of accuracy a);
    ``judge_warm_start`` = (episodes, steps): the arm warm-starts a fresh judge of its own before training instead
    of judging with the seed's shared warm start's; ``judge_warm_start_schedule`` its learning rate's schedule (None:
    the run's config decides)."""

    name: str
    mode: str
    judge: str = "model"
    oracle_accuracy: float | None = None
    oracle_noise: str = "independent"
    training_stream: int = 0
    judge_warm_start: tuple[int, int] | None = None
    judge_warm_start_schedule: str | None = None

    def overrides(self) -> list[str]:
        """The ``section.field=value`` config overrides that select this arm on the real stack."""
        values = [f"train.mode={self.mode}", f"reward_model.kind={self.judge}"]
        if self.oracle_accuracy is not None:
            values.append(f"reward_model.oracle_accuracy={self.oracle_accuracy}")
        if self.oracle_noise != "independent":
            values.append(f"reward_model.oracle_noise={self.oracle_noise}")
        if self.training_stream:
            values.append(f"train.training_stream={self.training_stream}")
        if self.judge_warm_start is not None:
            episodes, steps = self.judge_warm_start
            values += [f"reward_model.warm_start_episodes={episodes}", f"reward_model.warm_start_steps={steps}"]
        if self.judge_warm_start_schedule is not None:
            values.append(f"reward_model.warm_start_schedule={self.judge_warm_start_schedule}")
        return values

    @property
    def uses_judge(self) -> bool:
        """Whether the policy's reward reads the judge's votes (every mode but outcome_only and gigpo)."""
        return MODES[self.mode].reward_model

    @property
    def trains_judge(self) -> bool:
        """Whether the judge itself learns in this arm (the modes that train the reward model)."""
        return MODES[self.mode].train_reward_model and self.judge == "model"

    @property
    def adapts_env(self) -> bool:
        """Whether tasks are rewritten in this arm (the full method)."""
        return MODES[self.mode].adapt_env

    @property
    def advantage(self) -> str:
        """How the policy's advantages are formed: ``grpo``, or ``gigpo`` for the GiGPO arm."""
        return MODES[self.mode].advantage


ARMS: dict[str, Arm] = {arm.name: arm for arm in (
    Arm("outcome_only", "outcome_only"),
    Arm("policy", "policy"),
    Arm("policy+reward", "policy+reward"),
    Arm("policy+reward+env", "policy+reward+env"),
    Arm("reward_only", "reward_only"),
    Arm("oracle@0.5", "policy", judge="noisy_oracle", oracle_accuracy=0.5),
    Arm("oracle@0.8", "policy", judge="noisy_oracle", oracle_accuracy=0.8),
    Arm("control", "outcome_only", training_stream=1),
    Arm("gigpo", "gigpo"),
)}
"""Every arm by name."""

ORDERED = ("outcome_only", "policy", "policy+reward", "policy+reward+env")
"""Table 1's order: each arm adds one part to the one before; the trend test runs along it."""

DEFAULT_ARMS = tuple(ARMS)
QUICK_ARMS = ("outcome_only", "policy", "policy+reward+env", "oracle@0.5")
"""What ``--quick`` trains on the real stack: the two ends, the plain judge and the a = 0.5 calibration."""


def oracle_arm(name: str) -> Arm | None:
    """The arm ``oracle@A`` (mode ``policy``, a noisy step-label oracle of accuracy A in [0, 1]), ``oracle@A-persistent``
    (the same accuracy, its errors on the same steps on every visit), or None."""
    prefix, _, accuracy = name.partition("@")
    accuracy, dash, noise = accuracy.partition("-")
    if prefix != "oracle" or (dash and noise != "persistent"):
        return None
    try:
        value = float(accuracy)
    except ValueError:
        return None
    if not 0.0 <= value <= 1.0 or accuracy != f"{value:g}":
        return None
    return Arm(name, "policy", judge="noisy_oracle", oracle_accuracy=value, oracle_noise=noise or "independent")


JUDGE_ARM_MODES = {"judge": "policy", "judge+reward": "policy+reward", "judge+reward+env": "policy+reward+env"}
"""The learned-judge arms' prefixes and their ``train.mode``: the judge only votes, or it is co-trained as well, or
the tasks are rewritten too (Table 1's order with one judge)."""


def judge_arm(name: str) -> Arm | None:
    """The arm ``judge@ExK`` (mode ``policy``, a judge the arm warm-starts on E labelled episodes for K steps, both
    whole numbers > 0 written without leading zeros), or ``judge@ExK-linear`` (its learning rate decaying linearly
    to 0); ``judge+reward@...`` the same judge co-trained with the policy (mode ``policy+reward``);
    ``judge+reward+env@...`` the full method with it (mode ``policy+reward+env``); or None."""
    prefix, _, size = name.partition("@")
    size, dash, schedule = size.partition("-")
    episodes, _, steps = size.partition("x")
    if prefix not in JUDGE_ARM_MODES or (dash and schedule != "linear") or not all(
            part.isascii() and part.isdigit() and part == str(int(part)) and int(part) > 0 for part in (episodes, steps)):
        return None
    return Arm(name, JUDGE_ARM_MODES[prefix], judge_warm_start=(int(episodes), int(steps)),
               judge_warm_start_schedule=schedule or None)


def table1_order(arm_names: Sequence[str]) -> list[str]:
    """The arms named that stand along Table 1's order, in that order: ``outcome_only < policy < policy+reward <
    policy+reward+env`` where any of the last three is named; otherwise, when the learned-judge arms named share one
    judge warm start S, ``outcome_only < judge@S < judge+reward@S < judge+reward+env@S`` (the same order with the arm's
    own judge). Judges of different warm starts are not one order: then only ``outcome_only`` stands on it.

    >>> table1_order(["judge+reward@9x9", "outcome_only", "judge@9x9", "oracle@0.9"])
    ['outcome_only', 'judge@9x9', 'judge+reward@9x9']
    >>> table1_order(["outcome_only", "judge@9x9", "judge@4x4"])
    ['outcome_only']
    """
    if any(name in arm_names for name in ORDERED[1:]):
        return [name for name in ORDERED if name in arm_names]
    judges = {name: arm for name in arm_names if (arm := judge_arm(name)) is not None}
    warm_starts = {(arm.judge_warm_start, arm.judge_warm_start_schedule) for arm in judges.values()}
    by_mode = {arm.mode: name for name, arm in judges.items()} if len(warm_starts) == 1 else {}
    return [name for name in ("outcome_only", *(by_mode.get(mode) for mode in ORDERED[1:])) if name in arm_names]


def get_arms(names: Sequence[str] | None) -> list[Arm]:
    """The arms named (default: all), in the order given; ``oracle@A[-persistent]`` for any accuracy A in [0, 1] and
    ``judge@ExK`` for any warm start; unknown names raise with the closest known one."""
    arms = []
    for name in names or DEFAULT_ARMS:
        if name not in ARMS and (arm := oracle_arm(name) or judge_arm(name)) is not None:
            arms.append(arm)
            continue
        if name not in ARMS:
            close = difflib.get_close_matches(name, ARMS, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise ValueError(f"unknown arm {name!r}; known arms: {', '.join(ARMS)}.{hint}")
        arms.append(ARMS[name])
    if len({a.name for a in arms}) != len(arms):
        raise ValueError(f"arms listed twice: {[a.name for a in arms]}; name each arm once")
    return arms
