"""One compiled TextWorld game, loaded once and played for many episodes, with a safe command path.

The z-machine behind textworld has sharp edges that an agent's free text must never reach: a newline,
``.`` or ``then`` queues a second command for the next turn; ``quit``/``restart`` open a yes/no prompt
that a later ``y`` answers (and the emulator halts); ``tw-*`` commands switch textworld's tracing off.
:func:`sanitize_command` reduces any text to one plain ASCII command, meta commands are refused before
they reach the game, and if the emulator halts anyway the episode is restored by replaying it.
"""

from __future__ import annotations

import re
import unicodedata
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rla_envs.core.env import Transition
from rla_envs.core.errors import InvalidTask

__all__ = ["TextWorldGame", "sanitize_command", "normalize_command", "walkthrough_of", "check_expert_wins", "META_COMMANDS",
           "MAX_COMMAND_CHARS"]


def normalize_command(text: str) -> str:
    """A command as textworld spells admissible commands: lower case, single spaces."""
    return " ".join(text.lower().split())


def walkthrough_of(game) -> list[str]:
    """The commands that win a ``textworld.Game`` from its start (its walkthrough, else its quests' policy)."""
    return list(game.walkthrough or [])


MAX_COMMAND_CHARS = 120  # jericho truncates input at 198 bytes; no textworld command comes close
META_COMMANDS = frozenset({
    "quit", "q", "restart", "restore", "save", "undo", "script", "unscript", "transcript", "noscript",
})
_SEPARATORS = re.compile(r"[.,;:!?\n\r\t]|\bthen\b")
_UNSAFE = re.compile(r"[^a-z0-9' -]+")
_HALTED = "Emulator halted"
REFUSED_FEEDBACK = "That command is not available in this game. Type one of the admissible commands."


def sanitize_command(text: str) -> str:
    """Reduce any text to one plain command the z-machine can take: ASCII, lower case, no separators."""
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii").lower()
    text = _SEPARATORS.split(text, maxsplit=1)[0]
    text = _UNSAFE.sub(" ", text)
    return " ".join(text.split())[:MAX_COMMAND_CHARS].strip()


def _is_meta(command: str) -> bool:
    first = command.split(" ", 1)[0]
    return first in META_COMMANDS or first.startswith("tw-")


class TextWorldGame:
    """A compiled game (``.z8`` + ``.json``) kept loaded; ``reset``/``step`` play episodes of it.

    Args:
        path: the ``.z8`` file; textworld's ``.json`` must sit beside it.
    """

    def __init__(self, path: str | Path):
        import textworld

        self.path = Path(path)
        infos = textworld.EnvInfos(admissible_commands=True, won=True, lost=True)
        try:
            with warnings.catch_warnings():  # jericho calls every textworld game "not fully supported"
                warnings.simplefilter("ignore")
                self._env = textworld.start(str(self.path), request_infos=infos)
        except Exception as exc:
            raise InvalidTask(f"textworld could not load {self.path}: {type(exc).__name__}: {exc}. "
                              "Pass a .z8 game compiled by textworld with its .json beside it.") from exc
        self._state: Any = None
        self.game = None  # the textworld.Game, known after the first reset
        self._inform7 = None
        self._seed = 1
        self._sent: list[str] = []
        self._actions: list[Any] = []
        self._last_action: Any = None
        self._admissible_set: frozenset[str] = frozenset()

    # ----------------------------------------------------------------- episode
    def reset(self, seed: int = 1) -> tuple[str, dict[str, Any]]:
        """Start a new episode; the first observation and ``{"admissible_actions": [...]}``."""
        self._seed = max(1, int(seed) % (2**31 - 1))  # jericho treats 0 as "seed from the clock"
        self._env.seed(self._seed)
        self._state = self._env.reset()
        if self.game is None:
            self.game = self._state["game"]
        self._sent = []
        self._actions = []
        self._last_action = None
        self._admissible_set = frozenset(self._state["admissible_commands"])
        return self._state.feedback, {"admissible_actions": self._state["admissible_commands"]}

    def step(self, action: str) -> Transition:
        """Play one text action; inadmissible text still gets the game's answer, flagged invalid."""
        command = " ".join(action.lower().split())
        if command in self._admissible_set:
            return self._send(command, invalid=False)
        command = sanitize_command(action)
        if _is_meta(command):
            return Transition(REFUSED_FEEDBACK, invalid_action=True, info=self.current_info())
        return self._send(command, invalid=True)

    def _send(self, command: str, *, invalid: bool) -> Transition:
        state, _, _ = self._env.step(command)
        if _HALTED in state.feedback:  # should not happen after sanitizing; recover the episode anyway
            self._replay()
            return Transition(REFUSED_FEEDBACK, invalid_action=True, info=self.current_info())
        self._state = state
        self._sent.append(command)
        last_action = state["_last_action"]
        if last_action is not None and last_action is not self._last_action:
            self._actions.append(last_action)
            self._last_action = last_action
        admissible = state["admissible_commands"]
        self._admissible_set = frozenset(admissible)
        return Transition(state.feedback, won=bool(state["won"]), lost=bool(state["lost"]),
                          invalid_action=invalid, info={"admissible_actions": admissible})

    def _replay(self) -> None:
        sent = list(self._sent)
        self.reset(self._seed)
        for command in sent:
            self._send(command, invalid=False)

    def current_info(self) -> dict[str, Any]:
        """Family info keys for the current state (no action played)."""
        return {"admissible_actions": list(self._state["admissible_commands"]) if self._state else []}

    @property
    def objective(self) -> str:
        """The game's objective text."""
        return self.game.objective if self.game is not None else ""

    # ----------------------------------------------------------------- expert
    @property
    def walkthrough(self) -> list[str]:
        """The commands that win the game from its start."""
        return walkthrough_of(self.game) if self.game is not None else []

    def expert_actions(self) -> list[str]:
        """Commands that win from the current state ([] once the game cannot be won any more).

        While the episode has followed the walkthrough this is the rest of it; after a detour the plan
        is recomputed from textworld's quest tracking, replaying the episode's actions.
        """
        walkthrough = [normalize_command(c) for c in self.walkthrough]
        done = len(self._sent)
        if self._sent == walkthrough[:done]:
            return walkthrough[done:]
        from textworld.generator.game import GameProgression
        from textworld.generator.inform7 import Inform7Game

        progression = GameProgression(self.game, track_quests=True)
        for action in self._actions:
            progression.update(action)
        if set(progression.state.facts) != set(self._state["_facts"]):
            warnings.warn("TextWorld expert: the replayed state differs from the game's (a command played "
                          "several actions at once); the plan may be wrong", RuntimeWarning, stacklevel=2)
        policy = progression.winning_policy
        if not policy:
            return []
        if self._inform7 is None:
            self._inform7 = Inform7Game(self.game)
        return list(self._inform7.gen_commands_from_actions(policy))

    def close(self) -> None:
        """Free the emulator."""
        self._env.close()


def check_expert_wins(path: str | Path, walkthrough: Sequence[str] | None = None,
                      max_steps: int | None = None) -> list[str]:
    """Play the walkthrough on a compiled game; return it, or raise ``InvalidTask`` saying where it failed."""
    game = TextWorldGame(path)
    try:
        observation, _ = game.reset()
        if game._state["won"]:
            raise InvalidTask(f"{path}: the game is already won before any command; its quest changes nothing")
        commands = list(walkthrough if walkthrough is not None else game.walkthrough)
        if not commands:
            raise InvalidTask(f"{path}: the game has no walkthrough and its quests give no winning policy")
        if max_steps is not None and len(commands) > max_steps:
            raise InvalidTask(f"{path}: the walkthrough needs {len(commands)} steps, more than max_steps={max_steps}")
        transition = None
        for index, command in enumerate(commands):
            transition = game.step(command)
            if transition.lost:
                raise InvalidTask(f"{path}: walkthrough command {index + 1} {command!r} loses the game")
            if transition.won and index < len(commands) - 1:
                break
        if transition is None or not transition.won:
            raise InvalidTask(f"{path}: the walkthrough {commands} does not win the game "
                              f"(last feedback: {transition.observation.strip()[:200] if transition else ''!r})")
        return commands
    finally:
        game.close()
