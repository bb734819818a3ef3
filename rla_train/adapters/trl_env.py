"""Any rla env as a TRL ``environment_factory``: train on our envs with TRL's GRPOTrainer alone.

TRL's contract (``trl.GRPOTrainer(environment_factory=...)``, trl 1.16): the factory is called with no
arguments, once per concurrent rollout (instances are pooled and reused across batches); before each
rollout the trainer calls ``instance.reset(**row)`` with **every column of the dataset row** (``prompt``
included) and appends the returned string to the last message of the prompt (``None`` appends nothing);
every public method of the instance's class other than ``reset`` and ``get_reward`` becomes a tool whose
schema comes from its type hints and Google-style docstring, and whatever the tool returns becomes a
``tool`` message (``str(result)``; a raised exception becomes ``{"error": ...}``); ``get_reward()`` is
called once per finished rollout and logged as a reward column named after the instance's class (weight
1). A completion without a tool call simply ends the rollout: the episode is unfinished, so the reward is
0.0. Hence the classes below have exactly three public methods — anything else must start with ``_``.

::

    import rla_envs
    from trl import GRPOConfig, GRPOTrainer
    from rla_train.adapters.trl_env import environment_factory, task_dataset

    factory = environment_factory("rla/AlfWorld-v0", n_per_type=2)
    trainer = GRPOTrainer(model, args=GRPOConfig(...), train_dataset=task_dataset("rla/AlfWorld-v0", 12),
                          environment_factory=factory)

The chat template must render tool calls and TRL must know how to parse them; for a ChatML tokenizer
without tool support (such as :mod:`rla_train.backends.tiny`'s) :func:`with_tool_template` installs TRL's
Qwen2.5 template.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
from gymnasium.envs.registration import registry

import rla_envs  # noqa: F401  (registers the rla/* ids)
from rla_envs.core.errors import ResetNeeded, did_you_mean
from rla_envs.core.registry import family_spec
from rla_envs.core.task import Task

__all__ = ["environment_factory", "EnvironmentFactory", "RlaEnvironment", "TextGameEnvironment",
           "CodeEnvironment", "task_dataset", "with_tool_template", "EPISODE_OVER"]

EPISODE_OVER = "The episode is over: no more actions are accepted. Stop calling tools."
"""What a tool returns when it is called after the episode ended (it never raises)."""


class RlaEnvironment:
    """One rla env behind TRL's environment contract: ``reset(**row)``, one tool method, ``get_reward()``.

    Subclasses add the tool (a public method with type hints and a Google-style docstring). Instances
    pickle as their configuration (``env_id``, ``env_kwargs``): an unpickled instance builds a fresh env
    on its next ``reset``; the running episode is not carried over.
    """

    guide: str = ""
    """System-prompt text telling the model how to play (used by :func:`task_dataset`)."""

    def __init__(self, env_id: str, env_kwargs: Mapping[str, Any] | None = None):
        self._env_id = env_id
        self._env_kwargs = dict(env_kwargs or {})
        self._env: gym.Env | None = None
        self._info: dict[str, Any] = {}
        self._reward = 0.0
        self._over = True
        self._started = False

    # ----------------------------------------------------------------- TRL contract
    def reset(self, **row: Any) -> str | None:
        """Start the episode of the dataset row's ``task`` (a Task, task dict, JSON string or task id).

        ``seed`` (an int) seeds the env; every other column (``prompt`` among them) is ignored, except
        that when the row's prompt already ends with this episode's opening text (as in rows built by
        :func:`task_dataset`) nothing is returned, so the text is not shown twice. Without ``task`` the
        env draws one from its default set.

        Returns:
            The opening observation to append to the prompt's last message, or None.
        """
        task = _coerce_task(row.get("task"))
        seed = row.get("seed")
        options = {"task": task} if task is not None else None
        observation, info = self._gym_env.reset(seed=None if seed is None else int(seed), options=options)
        self._info, self._reward, self._over, self._started = dict(info), 0.0, False, True
        opening = self._opening(observation, info)
        shown = _last_content(row.get("prompt"))
        if shown is not None and shown.rstrip().endswith(opening.rstrip()):
            return None
        return opening if not shown else "\n\n" + opening

    def get_reward(self) -> float:
        """The episode's outcome: 1.0 when the task was won, else 0.0 (also for an unfinished episode)."""
        return self._reward

    # ----------------------------------------------------------------- read-only state (not tools)
    @property
    def env(self) -> gym.Env:
        """The wrapped Gymnasium env (built on first use)."""
        return self._gym_env

    @property
    def info(self) -> dict[str, Any]:
        """The env's ``info`` after the last reset or step."""
        return dict(self._info)

    @property
    def done(self) -> bool:
        """Whether the episode has ended (or none has started)."""
        return self._over

    # ----------------------------------------------------------------- plumbing
    @property
    def _gym_env(self) -> gym.Env:
        if self._env is None:
            self._env = gym.make(self._env_id, **{"disable_env_checker": True, **self._env_kwargs})  # see EnvSpec
        return self._env

    def _step(self, action: str) -> str:
        """Send ``action`` to the env; the text the tool returns."""
        if not self._started:
            raise ResetNeeded(f"{type(self).__name__}: call reset() before using the tool")
        if self._over:
            return EPISODE_OVER
        observation, reward, terminated, truncated, info = self._gym_env.step(action)
        self._info = dict(info)
        self._reward = max(self._reward, float(reward))
        self._over = bool(terminated or truncated)
        return self._feedback(observation, info, terminated=bool(terminated), truncated=bool(truncated))

    def _opening(self, observation: str, info: Mapping[str, Any]) -> str:
        return observation

    def _feedback(self, observation: str, info: Mapping[str, Any], *, terminated: bool, truncated: bool) -> str:
        if info.get("won"):
            return f"{observation}\n\nYou solved the task. The episode is over."
        if truncated:
            return f"{observation}\n\nThe episode is over: the step limit is reached."
        if terminated:
            return f"{observation}\n\nThe episode is over."
        return observation

    def _close(self) -> None:
        """Close the wrapped env (its game or sandbox)."""
        if self._env is not None:
            env, self._env = self._env, None
            env.close()

    def __del__(self):
        try:
            self._close()
        except Exception:  # interpreter shutdown or a half-built env: nothing left to free
            pass

    def __getstate__(self) -> dict[str, Any]:
        return {"env_id": self._env_id, "env_kwargs": self._env_kwargs}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["env_id"], state["env_kwargs"])

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._env_id!r}, {self._env_kwargs!r})"


class TextGameEnvironment(RlaEnvironment):
    """A text game (agent kind ``text_game``: ALFWorld, TextWorld) whose tool is ``act(command)``."""

    guide = ("You are playing a text game. Call the `act` tool with exactly one command at a time, chosen "
             "from the admissible commands, until the task is done.")

    def act(self, command: str) -> str:
        """Send one command to the game and read what happens.

        Args:
            command: One command, copied exactly from the admissible commands, e.g. "go to countertop 1".

        Returns:
            The game's answer and the commands admissible next.
        """
        return self._step(command)

    def _opening(self, observation: str, info: Mapping[str, Any]) -> str:
        return _with_commands(observation, info)

    def _feedback(self, observation: str, info: Mapping[str, Any], *, terminated: bool, truncated: bool) -> str:
        if terminated or truncated:
            return super()._feedback(observation, info, terminated=terminated, truncated=truncated)
        return _with_commands(observation, info)


class CodeEnvironment(RlaEnvironment):
    """A programming problem (``rla/Code-v0``) whose tool is ``submit(program)``."""

    guide = ("You are solving a programming problem. Call the `submit` tool with your complete Python "
             "program; it is run against hidden tests.")

    def submit(self, program: str) -> str:
        """Submit a complete Python program as the answer; it is run against the problem's hidden tests.

        Args:
            program: The full Python source code of the solution.

        Returns:
            The verdict, and feedback when attempts are left.
        """
        return self._step(program)


_TOOL_CLASSES: dict[str, type[RlaEnvironment]] = {"text_game": TextGameEnvironment, "code": CodeEnvironment}
"""Agent kind (a family's ``FamilySpec.agent``) -> adapter class (the class's name is the reward column TRL logs)."""


class EnvironmentFactory:
    """A picklable no-argument callable that TRL's ``environment_factory=`` calls to get one env instance."""

    def __init__(self, env_id: str, **env_kwargs: Any):
        self.env_id = env_id
        self.env_kwargs = env_kwargs
        self.environment_class = _tool_class(env_id)

    def __call__(self) -> RlaEnvironment:
        return self.environment_class(self.env_id, self.env_kwargs)

    def __repr__(self) -> str:
        return f"EnvironmentFactory({self.env_id!r}, **{self.env_kwargs!r})"


def environment_factory(env_id: str, **env_kwargs: Any) -> EnvironmentFactory:
    """A TRL ``environment_factory`` for ``gym.make(env_id, **env_kwargs)``.

    The result is picklable (as long as ``env_kwargs`` is), so keep kwargs plain data: pass task dicts
    rather than open sandboxes. The env id is checked here; the env itself is built on first ``reset``.
    """
    return EnvironmentFactory(env_id, **env_kwargs)


def task_dataset(env_id: str, n: int | None = None, seed: int = 0, **env_kwargs: Any):
    """A ``datasets.Dataset`` of GRPO prompt rows for ``n`` tasks of the env (all of them when ``n`` is None).

    Each row has ``prompt`` (a system message with the family's guide, then a user message holding the
    episode's opening text: the observation and, for text games, the admissible commands), ``task`` (the
    Task as JSON, which :meth:`RlaEnvironment.reset` plays) and ``task_id``. Tasks are drawn without
    replacement from the env's task set with ``seed``.
    """
    from datasets import Dataset

    if n is not None and n < 1:
        raise ValueError(f"n must be >= 1 (or None for every task), got {n}")
    adapter = EnvironmentFactory(env_id, **env_kwargs)()
    try:
        tasks = list(adapter.env.unwrapped.tasks)
        if n is not None:
            if n > len(tasks):
                raise ValueError(f"n={n} is more than the {len(tasks)} tasks of {env_id}; pass n <= {len(tasks)}")
            tasks = random.Random(seed).sample(tasks, n)
        rows: dict[str, list] = {"prompt": [], "task": [], "task_id": []}
        for task in tasks:
            opening = adapter.reset(task=task)
            rows["prompt"].append([{"role": "system", "content": adapter.guide},
                                   {"role": "user", "content": opening}])
            rows["task"].append(task.to_json())
            rows["task_id"].append(task.id)
    finally:
        adapter._close()
    return Dataset.from_dict(rows)


def with_tool_template(tokenizer):
    """Make ``tokenizer`` usable for TRL tool calling; returns it (changed in place when needed).

    A tokenizer whose chat template already renders tool calls is returned unchanged. A ChatML one
    without tool support (``<|im_start|>``/``<|im_end|>``, like :mod:`rla_train.backends.tiny`'s) gets TRL's
    Qwen2.5 template, which TRL recognises and parses (``<tool_call>{json}</tool_call>``). Anything else
    raises ``ValueError``: set a tool-capable template and a ``response_template`` yourself.
    """
    from trl.chat_template_utils import qwen2_5_chat_template, supports_tool_calling

    if supports_tool_calling(tokenizer):
        return tokenizer
    template = tokenizer.chat_template or ""
    if "<|im_start|>" not in template or "<|im_start|>" not in tokenizer.get_vocab():
        raise ValueError("the tokenizer's chat template cannot render tool calls and is not ChatML; set a "
                         "tool-calling chat_template and a response_template (see TRL's chat_template_utils)")
    tokenizer.chat_template = qwen2_5_chat_template
    return tokenizer


# --------------------------------------------------------------------- helpers
def _tool_class(env_id: str) -> type[RlaEnvironment]:
    """The adapter class for a registered family's env id, chosen by the family's agent kind."""
    if env_id not in registry:
        ids = sorted(name for name in registry if name.startswith("rla/"))
        raise gym.error.UnregisteredEnv(f"no env registered as {env_id!r}.{did_you_mean(env_id, ids)}"
                                        f" rla envs: {ids}")
    spec = family_spec(env_id)
    if spec.agent not in _TOOL_CLASSES:
        raise ValueError(f"{env_id} (family {spec.name!r}, agent kind {spec.agent!r}) has no TRL adapter; supported "
                         f"agent kinds: {sorted(_TOOL_CLASSES)}")
    return _TOOL_CLASSES[spec.agent]


def _coerce_task(value: Any) -> Task | Mapping[str, Any] | str | None:
    """A row's ``task`` as something ``env.reset(options={"task": ...})`` accepts (JSON text is parsed)."""
    if value is None or isinstance(value, (Task, Mapping)):
        return value
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("{"):
            try:
                return json.loads(text)
            except json.JSONDecodeError as error:
                raise ValueError(f"the row's task looks like JSON but does not parse: {error}") from None
        return text
    raise TypeError(f"the row's task must be a Task, a task dict, its JSON or a task id, got {type(value).__name__}")


def _last_content(prompt: Any) -> str | None:
    """The text of a conversational prompt's last message (None when there is no such text)."""
    if isinstance(prompt, list) and prompt and isinstance(prompt[-1], Mapping):
        content = prompt[-1].get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            return "".join(part.get("text", "") for part in content if isinstance(part, Mapping))
    return None


def _with_commands(observation: str, info: Mapping[str, Any]) -> str:
    commands = info.get("admissible_actions")
    if not commands:
        return observation
    return f"{observation}\n\nAdmissible commands: " + ", ".join(commands)
