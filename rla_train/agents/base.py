"""ChatAgent: turns an episode so far into a chat for the policy, and the policy's answer into an action.

An agent is two functions of plain data, so the rollout engine, the evaluator and user code share it::

    chat = agent.prompt(episode)                  # Trajectory so far -> list of {"role", "content"}
    parsed = agent.parse(completion, info)        # text -> ParsedAction(action, error)

The chat is system message, then the task's first observation, then one assistant turn (the model's own
completion, exactly as generated) and one user turn (the env's answer) per step. With
``history_window=None`` every turn is kept and each prompt extends the previous one (the whole episode
can then be trained as one sequence); with ``history_window=k`` only the last k steps are shown.
Families subclass and say how an observation reads (:meth:`first_message`, :meth:`feedback`) and how an
answer parses (:meth:`parse`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from rla_envs.core.trajectory import Trajectory
from rla_train.agents.parsing import ParsedAction

__all__ = ["ChatAgent"]


class ChatAgent:
    """Base of the family agents: chat building with a history window; subclasses render and parse.

    Args:
        system_prompt: replaces the family's default system message.
        history_window: how many past steps the prompt shows (None = all).
    """

    kind: ClassVar[str] = ""
    """The agent kind a family names in its ``FamilySpec.agent`` to be played by this class."""
    default_system_prompt: ClassVar[str] = ""
    default_history_window: ClassVar[int | None] = None

    def __init__(self, *, system_prompt: str | None = None, history_window: int | None | str = "default"):
        if history_window == "default":
            history_window = self.default_history_window
        if history_window is not None and (type(history_window) is not int or history_window < 0):
            raise ValueError(f"history_window must be an int >= 0 or None (all steps), got {history_window!r}")
        self.system_prompt = self.default_system_prompt if system_prompt is None else system_prompt
        self.history_window = history_window

    # ----------------------------------------------------------------- family hooks
    def first_message(self, observation: Any, info: Mapping[str, Any]) -> Any:
        """The user message that opens the episode (the reset observation)."""
        raise NotImplementedError

    def feedback(self, observation: Any, info: Mapping[str, Any]) -> Any:
        """The user message after a step (the env's answer)."""
        raise NotImplementedError

    def parse(self, completion: str, info: Mapping[str, Any]) -> ParsedAction:
        """The action in ``completion``; ``info`` is the env's latest info (admissible actions, ...)."""
        raise NotImplementedError

    # ----------------------------------------------------------------- chat
    def prompt(self, episode: Trajectory) -> list[dict[str, Any]]:
        """The chat the policy answers next, from the episode so far (at least the reset observation)."""
        if not episode.observations:
            raise ValueError("the episode has no observation yet: reset the env before asking for a prompt")
        infos = episode.infos or [{}] * len(episode.observations)
        chat: list[dict[str, Any]] = []
        if self.system_prompt:
            chat.append({"role": "system", "content": self.system_prompt})
        chat.append({"role": "user", "content": self.first_message(episode.observations[0], infos[0])})
        taken = len(episode.actions)
        start = 0 if self.history_window is None else max(0, taken - self.history_window)
        if start:
            chat.append({"role": "user", "content": f"({start} earlier steps not shown)"})
        for index in range(start, taken):
            chat.append({"role": "assistant", "content": self._said(episode, index)})
            chat.append({"role": "user", "content": self.feedback(episode.observations[index + 1],
                                                                    infos[index + 1] if index + 1 < len(infos) else {})})
        return chat

    @staticmethod
    def _said(episode: Trajectory, index: int) -> str:
        """What the model said at step ``index``: its completion when recorded, else the action."""
        steps = getattr(episode, "steps", None)
        if steps and index < len(steps):
            return steps[index].completion
        return str(episode.actions[index])
