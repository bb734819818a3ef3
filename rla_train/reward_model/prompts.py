"""Step-judge prompts: one compact chat per (trajectory, step) asking for ``\\boxed{1}`` or ``\\boxed{-1}``.

The generative reward model judges one step at a time. :func:`judge_chat` builds the chat for step ``i``
of a :class:`~rla_envs.core.trajectory.Trajectory` (or an :class:`~rla_train.rollout.episode.Episode`)
from its plain fields: ``observations[0]`` is the reset observation, ``actions[i]`` the step's action,
``observations[i + 1]`` and ``infos[i + 1]`` what followed it, ``infos[i]`` what the agent saw when it chose
(``admissible_actions`` for text games). Each agent kind (a family's ``FamilySpec.agent``) has its own user
message:

* ``text_game`` (ALFWorld, TextWorld): the task, the start of the game, the last ``max_history`` earlier steps
  (action -> observation, oldest dropped first, and the prompt says how many were dropped), the step's
  action, what followed, and the admissible actions at that step when the infos carry them.
* ``code``: the problem (:func:`rla_envs.code.env.problem_text`), the verdicts of earlier attempts, the
  submitted program and the env's verdict on it.
* ``desktop``: the instruction, the earlier actions, the pyautogui action and an excerpt of the next
  observation (its accessibility tree when the observation is a dict, the text when it is text).

Every prompt asks for brief reasoning that ends with exactly ``\\boxed{1}`` (good step) or ``\\boxed{-1}``
(bad step); :func:`rla_train.reward_model.parsing.parse_verdict` reads the answer. Prompts are kept short
(tiny models have short contexts): each observation is clipped to ``max_chars`` characters.

``style="compact"`` (:data:`PROMPT_STYLES`) is for tiny judges that pick a verdict by likelihood
(``reward_model.verdict_mode=choice``): ~5x fewer tokens, and what decides a step sits next to the verdict.
For text games it is one short user turn: the goal, what the agent knew before the step (the
:class:`~rla_train.agents.text_games.GameMemory` the compact policy prompt shows: where it is, what it holds,
the goal's objects it saw and those at its place, all read from the texts it saw, nothing privileged),
the step's action and the start of what followed, then the two verdicts to choose from
(:data:`~rla_train.reward_model.verdicts.VERDICTS`). Kinds without a compact form get their full prompt.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from rla_envs.core.errors import did_you_mean
from rla_envs.core.registry import families
from rla_envs.core.task import Task
from rla_envs.core.trajectory import Trajectory

__all__ = ["PROMPT_KINDS", "PROMPT_STYLES", "DEFAULT_MAX_HISTORY", "DEFAULT_MAX_CHARS", "SYSTEM_PROMPT",
           "VERDICT_INSTRUCTION", "COMPACT_SYSTEM_PROMPT", "judge_chat"]

DEFAULT_MAX_HISTORY = 6
"""Earlier steps shown in a step-judge prompt (the most recent ones)."""
DEFAULT_MAX_CHARS = 600
"""Longest observation (characters) shown in a prompt; longer ones are clipped with ``...``."""
_MAX_ADMISSIBLE = 40  # admissible actions listed at most
_COMPACT_AFTER_CHARS = 160  # characters of the observation after the step in a compact prompt

PROMPT_STYLES = ("full", "compact")
"""``full``: task, start, history, step, admissible actions, reasoning asked; ``compact``: see the module docstring."""
_MAX_PROGRAM_CHARS = 4000

SYSTEM_PROMPT = ("You are a strict reward model. You judge ONE step of an agent's attempt at a task: "
                 "is this step a sensible move toward completing the task?")
VERDICT_INSTRUCTION = ("Reason briefly (at most three sentences) about whether this step moves the agent "
                       "toward completing the task. Then end your answer with exactly \\boxed{1} if it is a "
                       "good step or \\boxed{-1} if it is a bad step.")
COMPACT_SYSTEM_PROMPT = "Judge one step of a household text game: does it move toward the goal?"


def judge_chat(task: Task, trajectory: Trajectory, step_index: int, *, max_history: int = DEFAULT_MAX_HISTORY,
               max_chars: int = DEFAULT_MAX_CHARS, style: str = "full") -> list[dict[str, str]]:
    """The chat asking a judge whether step ``step_index`` of ``trajectory`` (a run of ``task``) was good.

    ``style``: ``"full"`` (default) or ``"compact"`` (see the module docstring; ``max_history`` does not
    apply to it). Raises ``ValueError`` for a ``task.family`` without a prompt (naming the closest registered one),
    style or a bad window, and ``IndexError`` when the trajectory has no step ``step_index``.
    """
    if style not in PROMPT_STYLES:
        raise ValueError(f"style must be one of {PROMPT_STYLES} (reward_model.prompt_style), got {style!r}"
                         f"{did_you_mean(str(style), PROMPT_STYLES)}")
    spec = families().get(task.family)
    kind = spec.agent if spec is not None else None
    builder = _BUILDERS.get(kind)
    if builder is None:
        raise ValueError(f"no step-judge prompt for family {task.family!r} (task {task.id}): prompts exist for the "
                         f"agent kinds {list(_BUILDERS)}, and the family is "
                         + ("not registered" if spec is None else f"played by {kind!r}")
                         + f".{did_you_mean(task.family, families())}")
    if type(max_history) is not int or max_history < 0:
        raise ValueError(f"max_history must be an int >= 0 (earlier steps shown), got {max_history!r}")
    if type(max_chars) is not int or max_chars < 20:
        raise ValueError(f"max_chars must be an int >= 20 (characters per observation), got {max_chars!r}")
    steps = len(trajectory.actions)
    if type(step_index) is not int or not 0 <= step_index < steps:
        raise IndexError(f"step_index must be in [0, {steps}) for a trajectory of {steps} steps "
                         f"(task {trajectory.task_id}), got {step_index!r}")
    if style == "compact" and kind in _COMPACT_BUILDERS:
        return [{"role": "system", "content": COMPACT_SYSTEM_PROMPT},
                {"role": "user", "content": _COMPACT_BUILDERS[kind](task, trajectory, step_index, max_chars)}]
    user = builder(task, trajectory, step_index, max_history, max_chars)
    return [{"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": user + "\n\n" + VERDICT_INSTRUCTION}]


# --------------------------------------------------------------------------- families

def _text_game(task: Task, trajectory: Trajectory, step: int, max_history: int, max_chars: int) -> str:
    """Text games (ALFWorld, TextWorld): task, start, windowed history, the step, what followed, admissible actions."""
    parts = [f"Task: {_clip(_instruction(task, trajectory), max_chars)}",
             f"Start of the game:\n{_clip(_observation(trajectory, 0), max_chars)}"]
    parts.append(_history(trajectory, step, max_history, max_chars,
                          lambda i: f"> {_clip(_action(trajectory, i), 200)}\n"
                                    f"{_clip(_observation(trajectory, i + 1), max_chars)}"))
    parts.append(f"Step {step + 1} (the one to judge):\n> {_clip(_action(trajectory, step), 200)}\n"
                 f"What followed:\n{_clip(_observation(trajectory, step + 1), max_chars)}")
    admissible = _info(trajectory, step).get("admissible_actions")
    if isinstance(admissible, (list, tuple)) and admissible:
        shown = [str(a) for a in admissible[:_MAX_ADMISSIBLE]]
        more = f" (+{len(admissible) - len(shown)} more)" if len(admissible) > len(shown) else ""
        parts.append(f"Admissible actions at this step: {', '.join(shown)}{more}")
    if _info(trajectory, step + 1).get("invalid_action"):
        parts.append("The game did not accept this action.")
    return "\n\n".join(parts)


def _code(task: Task, trajectory: Trajectory, step: int, max_history: int, max_chars: int) -> str:
    """Code: the problem, earlier verdicts, the submitted program and the env's verdict on it."""
    from rla_envs.code.answer import extract_program
    from rla_envs.code.env import problem_text

    parts = [f"Problem:\n{_clip(problem_text(task), 3 * max_chars)}"]
    if step:
        parts.append(_history(trajectory, step, max_history, max_chars,
                              lambda i: f"Attempt {i + 1}: {_clip(_observation(trajectory, i + 1), 200)}"))
    answer = _action(trajectory, step)
    extracted = extract_program(answer)
    program = extracted.program if extracted.program else answer
    parts.append(f"Submitted answer (attempt {step + 1}, the one to judge):\n```python\n"
                 f"{_clip(program, _MAX_PROGRAM_CHARS).rstrip()}\n```")
    parts.append(f"Verdict of the tests:\n{_clip(_observation(trajectory, step + 1), max_chars)}")
    return "\n\n".join(parts)


def _desktop(task: Task, trajectory: Trajectory, step: int, max_history: int, max_chars: int) -> str:
    """Desktop: the instruction, earlier actions, the pyautogui action, an excerpt of what followed."""
    parts = [f"Task on the computer: {_clip(_instruction(task, trajectory), max_chars)}"]
    parts.append(_history(trajectory, step, max_history, max_chars,
                          lambda i: f"- {_clip(_action(trajectory, i), 200)}"))
    parts.append(f"Step {step + 1} (the one to judge), pyautogui action:\n{_clip(_action(trajectory, step), 600)}")
    parts.append(f"Screen after the action (accessibility tree excerpt):\n"
                 f"{_clip(_observation(trajectory, step + 1), max_chars)}")
    return "\n\n".join(parts)


def _compact_text_game(task: Task, trajectory: Trajectory, step: int, max_chars: int) -> str:
    """Text games, compact: goal, the agent's memory before the step, the step, what followed."""
    from rla_train.agents.text_games import GameMemory
    from rla_train.reward_model.verdicts import VERDICTS

    observations = [_observation(trajectory, i) for i in range(step + 1)]
    memory = GameMemory.from_transcript(observations, [_action(trajectory, i) for i in range(step)])
    goal = memory.goal or _clip(_instruction(task, trajectory), max_chars)
    known = [line for line in memory.lines() if line.startswith(("Seen: ", "At: ", "Here: "))]
    after = " ".join(_observation(trajectory, step + 1).split())
    if _info(trajectory, step + 1).get("invalid_action"):
        after = "(not accepted) " + after
    return "\n".join([f"Goal: {goal}", *known, f"Step: {_clip(_action(trajectory, step), 200)}",
                      f"Then: {_clip(after, min(max_chars, _COMPACT_AFTER_CHARS))}",
                      f"Good step: {VERDICTS[0]} Bad step: {VERDICTS[1]}"])


_COMPACT_BUILDERS: dict[str, Callable[[Task, Trajectory, int, int], str]] = {"text_game": _compact_text_game}

_BUILDERS: dict[str, Callable[[Task, Trajectory, int, int, int], str]] = {
    "text_game": _text_game, "code": _code, "desktop": _desktop,
}
PROMPT_KINDS = tuple(_BUILDERS)
"""The agent kinds (``FamilySpec.agent``) :func:`judge_chat` has prompts for."""


# --------------------------------------------------------------------------- pieces

def _history(trajectory: Trajectory, step: int, max_history: int, max_chars: int,
             line: Callable[[int], str]) -> str:
    """The last ``max_history`` steps before ``step`` (oldest dropped first), saying how many were dropped."""
    if step == 0:
        return "Earlier steps: none (this is the first step)."
    first = max(0, step - max_history)
    if first == step:
        return f"Earlier steps: {step} (not shown)."
    header = "Earlier steps:" if first == 0 else \
        f"Earlier steps (the last {step - first} of {step}; {first} older omitted):"
    return "\n".join([header] + [line(i) for i in range(first, step)])


def _instruction(task: Task, trajectory: Trajectory) -> str:
    info = _info(trajectory, 0)
    return str(task.instruction or info.get("instruction") or "(no instruction recorded)")


def _action(trajectory: Trajectory, index: int) -> str:
    action = trajectory.actions[index]
    return action if isinstance(action, str) else repr(action)


def _observation(trajectory: Trajectory, index: int) -> str:
    """Observation ``index`` as text: the text itself, a dict's accessibility tree / text, or a placeholder."""
    if index >= len(trajectory.observations):
        return "(not recorded)"
    observation = trajectory.observations[index]
    if isinstance(observation, str):
        return observation
    if isinstance(observation, Mapping):
        for key in ("accessibility_tree", "a11y_tree", "text", "observation"):
            if isinstance(observation.get(key), str):
                return observation[key]
        return "(no text in this observation)"
    return "(non-text observation)"


def _info(trajectory: Trajectory, index: int) -> Mapping[str, Any]:
    if index < len(trajectory.infos) and isinstance(trajectory.infos[index], Mapping):
        return trajectory.infos[index]
    return {}


def _clip(text: str, limit: int) -> str:
    """``text`` stripped and cut to ``limit`` characters (with ``...`` when cut)."""
    text = str(text).strip()
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."
