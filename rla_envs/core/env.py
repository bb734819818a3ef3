"""TaskEnv: the Gymnasium base class that every rla env family subclasses."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import gymnasium as gym

from rla_envs.core.errors import InvalidTask, ResetNeeded, TaskNotFound, did_you_mean
from rla_envs.core.spaces import PrintableText, is_printable_text
from rla_envs.core.task import Task

__all__ = ["TaskEnv", "Transition"]


@dataclass
class Transition:
    """What a family's game returns for one action: the observation and the facts the base env needs."""

    observation: Any
    won: bool = False
    lost: bool = False
    invalid_action: bool = False
    info: dict[str, Any] = field(default_factory=dict)
    truncated: bool = False
    """The game stopped the episode without the agent ending it (a desktop session that died, a desktop
    task evaluated at the step limit): truncated, not terminated, even when ``won``."""
    reward: float | None = None
    """A graded outcome in [0, 1] (OSWorld's score); None: 1.0 when ``won``, else 0.0."""


class TaskEnv(gym.Env):
    """Base env: tasks in through ``reset(options={"task": ...})``, text out, outcome reward.

    Subclasses set ``family`` and implement :meth:`default_tasks`, :meth:`_begin` and :meth:`_play`
    (and :meth:`_current_info` when they add info keys). This class handles task resolution, seeding,
    bad actions, truncation at ``max_steps``, the info contract (``task_id``, ``instruction``, ``won``,
    ``step``, ``invalid_action``) and the reward (1.0 when the task is won, else 0.0).
    """

    family: ClassVar[str] = ""
    metadata = {"render_modes": ["ansi", "human"], "render_fps": 4}

    def __init__(
        self,
        tasks: Iterable[Task | Mapping[str, Any]] | None = None,
        *,
        max_steps: int = 50,
        max_action_length: int = 1_000,
        render_mode: str | None = None,
    ):
        if max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {max_steps}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or None, got {render_mode!r}")
        self.max_steps = int(max_steps)
        self.max_action_length = int(max_action_length)
        self.render_mode = render_mode
        self.observation_space = PrintableText()
        self.action_space = PrintableText(max_length=self.max_action_length)
        self._given_tasks = None if tasks is None else [self._coerce_task(t) for t in tasks]
        self._task_set: list[Task] | None = self._given_tasks
        self._task_index: dict[str, Task] | None = None
        self.task: Task | None = None
        self._step_count = 0
        self._episode_over = True
        self._reset_failure: str | None = None  # why the last reset() failed, for step()'s error
        self._last_observation = ""

    # ----------------------------------------------------------------- family API
    def default_tasks(self) -> Sequence[Task]:
        """The tasks that ``reset()`` draws from when no task is given."""
        raise NotImplementedError

    def _begin(self, task: Task) -> tuple[str, dict[str, Any]]:
        """Start an episode of ``task``; return the first observation and family info keys."""
        raise NotImplementedError

    def _play(self, action: str) -> Transition:
        """Apply one (printable, not too long) text action to the running game."""
        raise NotImplementedError

    def _current_info(self) -> dict[str, Any]:
        """Family info keys for the current state, used when an action never reached the game."""
        return {}

    def expert_action(self) -> str:
        """The expert's next command in the current state (for demonstrations, step labels, the player).

        Families override this; ``python -m rla_envs.play --agent expert`` calls it every step.
        """
        raise NotImplementedError(f"{type(self).__name__} has no expert")

    # ----------------------------------------------------------------- tasks
    @property
    def tasks(self) -> list[Task]:
        """The env's task set (the tasks given to the constructor, else :meth:`default_tasks`)."""
        if self._task_set is None:
            self._task_set = list(self.default_tasks())
            if not self._task_set:
                raise InvalidTask(f"{type(self).__name__} has an empty default task set")
        return self._task_set

    def get_task(self, task_id: str) -> Task:
        """The task with this id from the env's task set; ``TaskNotFound`` names the closest ids."""
        if self._task_index is None:
            self._task_index = {t.id: t for t in self.tasks}
        try:
            return self._task_index[task_id]
        except KeyError:
            hint = did_you_mean(task_id, self._task_index, n=3, cutoff=0.5)
            raise TaskNotFound(
                f"no task with id {task_id!r} in {type(self).__name__}'s task set of {len(self._task_index)} tasks."
                f"{hint} Pass the Task itself (or its dict) as options['task'] to play a task outside the set."
            ) from None

    def _coerce_task(self, value: Task | Mapping[str, Any] | str) -> Task:
        if isinstance(value, Task):
            task = value
        elif isinstance(value, Mapping):
            task = Task.from_dict(value)
        elif isinstance(value, str):
            task = self.get_task(value)
        else:
            raise InvalidTask(f"options['task'] must be a Task, a task dict or a task id, got {type(value).__name__}")
        if task.family != self.family:
            raise InvalidTask(f"{type(self).__name__} plays {self.family!r} tasks; task {task.id} is a {task.family!r} task")
        return task

    # ----------------------------------------------------------------- gymnasium API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        self.task = None  # no episode until the new one has begun: a failed reset leaves nothing to step()
        self._episode_over = True
        self._reset_failure = "reset() is running"
        try:
            super().reset(seed=seed)
            if options is not None and not isinstance(options, Mapping):
                raise InvalidTask(f"reset(options=...) takes a dict such as {{'task': task}} or None, "
                                  f"got {type(options).__name__} {options!r:.60}")
            if (options or {}).get("task") is not None:
                task = self._coerce_task(options["task"])
            else:
                task = self.tasks[int(self.np_random.integers(len(self.tasks)))]
            observation, family_info = self._begin(task)
        except BaseException as exc:
            self._reset_failure = f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
            raise
        self._reset_failure = None
        self.task = task
        self._step_count = 0
        self._episode_over = False
        self._last_observation = observation
        info = self._info(won=False, invalid_action=False, family_info=family_info)
        self._render_if_human()
        return observation, info

    def step(self, action: Any):
        self._check_episode_running()
        self._step_count += 1
        problem = self._action_problem(action)
        if problem is not None:
            transition = Transition(observation=problem, invalid_action=True, info=self._current_info())
        else:
            transition = self._play(action)
        terminated = bool(transition.won or transition.lost) and not transition.truncated
        truncated = not terminated and (transition.truncated or self.at_step_limit)
        self._episode_over = terminated or truncated
        self._last_observation = transition.observation
        reward = transition.reward if transition.reward is not None else (1.0 if transition.won else 0.0)
        info = self._info(won=transition.won, invalid_action=transition.invalid_action, family_info=transition.info)
        self._render_if_human()
        return transition.observation, reward, terminated, truncated, info

    def render(self):
        if self.render_mode == "ansi":
            return self._last_observation
        if self.render_mode == "human":
            print(self._last_observation)
        return None

    # ----------------------------------------------------------------- helpers
    @property
    def at_step_limit(self) -> bool:
        """Whether the step being played is the episode's last (``max_steps`` reached): it is truncated after it."""
        return self._step_count >= self.max_steps

    def _check_episode_running(self) -> None:
        """Raise ``ResetNeeded`` saying why no episode runs: never reset, the last reset failed, or it ended."""
        name = type(self).__name__
        if self.task is None and self._reset_failure:
            raise ResetNeeded(f"{name}.step(): the last reset() failed ({self._reset_failure}); "
                              "reset again, with a valid task")
        if self.task is None:
            raise ResetNeeded(f"{name}.step() called before reset(); call env.reset() first")
        if self._episode_over:
            raise ResetNeeded(f"{name}.step() called after the episode ended; call env.reset()")

    def _action_problem(self, action: Any) -> str | None:
        """Feedback text when an action cannot be sent to the game at all, else None."""
        if not isinstance(action, str):
            return f"Invalid action: actions are text, got {type(action).__name__}. Type a command such as 'look'."
        if len(action) > self.max_action_length:
            return (f"Invalid action: {len(action)} characters is longer than the limit of "
                    f"{self.max_action_length}. Type one short command.")
        if not is_printable_text(action):
            return "Invalid action: it contains control characters. Type a command in plain text."
        return None

    def _info(self, *, won: bool, invalid_action: bool, family_info: dict[str, Any]) -> dict[str, Any]:
        assert self.task is not None
        info = dict(family_info)
        info.update(
            task_id=self.task.id,
            instruction=self.task.instruction,
            won=bool(won),
            step=self._step_count,
            invalid_action=bool(invalid_action),
        )
        return info

    def _render_if_human(self) -> None:
        if self.render_mode == "human":
            self.render()
