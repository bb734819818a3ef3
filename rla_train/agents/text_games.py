"""The agent for text games (ALFWorld, TextWorld): observation + admissible commands in, one command out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rla_train.agents.base import ChatAgent
from rla_train.agents.parsing import ParsedAction, parse_action_index, parse_free_text

__all__ = ["TextGameAgent", "ACTION_FORMATS"]

ACTION_FORMATS = ("text", "index")
"""``text``: answer with the command itself; ``index``: answer with its number in the admissible list."""

ADMISSIBLE_MODES = ("last", "all", "none")
"""Which user turns list the admissible commands: the latest only, every turn, or none."""

_SYSTEM = ("You are an agent in a text-based household game. Each turn you see what happened and the commands "
           "you can use. Reach the goal in as few steps as possible.")


class TextGameAgent(ChatAgent):
    """Plays ALFWorld / TextWorld: each user turn holds the env's text and the admissible commands.

    Args:
        action_format: ``"text"`` (answer with one command, default) or ``"index"`` (answer with its
            number in the list).
        show_admissible: ``"last"`` (default: only the turn to answer lists the admissible commands, which
            keeps prompts short), ``"all"`` (every turn keeps the list it had, so that with
            ``history_window=None`` each prompt extends the previous one) or ``"none"``.
        system_prompt, history_window: see :class:`~rla_train.agents.base.ChatAgent` (default window: 10 steps).
    """

    family = "alfworld"
    default_system_prompt = _SYSTEM
    default_history_window = 10

    def __init__(self, *, action_format: str = "text", show_admissible: str = "last", **options: Any):
        if action_format not in ACTION_FORMATS:
            raise ValueError(f"action_format must be one of {ACTION_FORMATS}, got {action_format!r}")
        if show_admissible not in ADMISSIBLE_MODES:
            raise ValueError(f"show_admissible must be one of {ADMISSIBLE_MODES}, got {show_admissible!r}")
        if action_format == "index" and show_admissible == "none":
            raise ValueError("action_format='index' needs the admissible list shown (the model picks a number from it)")
        super().__init__(**options)
        self.action_format = action_format
        self.show_admissible = show_admissible

    def prompt(self, episode) -> list[dict[str, Any]]:
        """The chat (see :class:`ChatAgent`); with ``show_admissible="last"`` only its last turn lists commands."""
        chat = super().prompt(episode)
        if self.show_admissible == "last":
            info = episode.infos[-1] if episode.infos else {}
            chat[-1] = {**chat[-1], "content": chat[-1]["content"] + self._listing(info)}
        return chat

    def _commands(self, info: Mapping[str, Any]) -> str:
        return self._listing(info) if self.show_admissible == "all" else ""

    def _listing(self, info: Mapping[str, Any]) -> str:
        admissible: Sequence[str] = info.get("admissible_actions") or ()
        if not admissible:
            return ""
        if self.action_format == "index":
            listing = "\n".join(f"{i}. {command}" for i, command in enumerate(admissible, 1))
            return f"\n\nAdmissible actions:\n{listing}\nAnswer with the number of one action only."
        return "\n\nAdmissible actions: " + ", ".join(admissible) + "\nAnswer with one action only, as written."

    def first_message(self, observation: Any, info: Mapping[str, Any]) -> str:
        """The game's opening text (room and task) with the admissible commands."""
        return f"{str(observation).strip()}{self._commands(info)}"

    def feedback(self, observation: Any, info: Mapping[str, Any]) -> str:
        """The game's answer to the last command, with the admissible commands now."""
        return f"{str(observation).strip()}{self._commands(info)}"

    def parse(self, completion: str, info: Mapping[str, Any]) -> ParsedAction:
        """The command (by text or number) in the completion's first line."""
        admissible = info.get("admissible_actions") or None
        if self.action_format == "index" and admissible:
            return parse_action_index(completion, admissible)
        return parse_free_text(completion, admissible)
