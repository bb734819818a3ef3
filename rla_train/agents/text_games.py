"""The agent for text games (ALFWorld, TextWorld): observation + admissible commands in, one command out.

Two prompt styles. ``"chat"`` (default) replays the episode as a chat (the env's texts and the model's
answers, with a history window). ``"compact"`` shows one short user turn per step, the same size at
step 1 and step 40: the goal, a running memory of the episode (where the agent is, what it holds and
what it did to it, what it placed, which places it has not visited yet, where it saw the objects the goal
names), the last command and the env's answer, and the admissible commands. The memory is read only from
the texts the agent saw (:class:`GameMemory`), never from the game state, so it is no privileged hint; it
is what lets a tiny policy with no history imitate an expert that searches (it knows what it searched).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rla_train.agents.base import ChatAgent
from rla_train.agents.parsing import ParsedAction, parse_action_index, parse_free_text

__all__ = ["TextGameAgent", "GameMemory", "ACTION_FORMATS", "PROMPT_STYLES"]

ACTION_FORMATS = ("text", "index")
"""``text``: answer with the command itself; ``index``: answer with its number in the admissible list."""

ADMISSIBLE_MODES = ("last", "all", "none")
"""Which user turns list the admissible commands: the latest only, every turn, or none."""

PROMPT_STYLES = ("chat", "compact")
"""``chat``: the episode as a chat with a history window; ``compact``: goal + memory + last answer, one turn."""

_COMPACT_SYSTEM = "Household text game. Reach the goal. Answer with one admissible action."

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
        prompt_style: ``"chat"`` (default: the episode as a chat) or ``"compact"`` (one user turn: goal,
            :class:`GameMemory` of the episode, last command and answer, admissible commands; ~4x shorter
            prompts on ALFWorld, and Markovian, so ``history_window`` does not apply). With
            ``show_admissible="none"`` the commands are not printed but carried in the user turn's
            ``"admissible_actions"`` key, where :class:`~rla_train.backends.choice.ChoiceBackend` reads its candidates.
        system_prompt, history_window: see :class:`~rla_train.agents.base.ChatAgent` (default window: 10 steps).
    """

    kind = "text_game"
    default_system_prompt = _SYSTEM
    default_history_window = 10

    def __init__(self, *, action_format: str = "text", show_admissible: str = "last", prompt_style: str = "chat",
                 **options: Any):
        if prompt_style not in PROMPT_STYLES:
            raise ValueError(f"prompt_style must be one of {PROMPT_STYLES}, got {prompt_style!r}")
        if prompt_style == "compact" and options.get("system_prompt") is None:
            options["system_prompt"] = _COMPACT_SYSTEM
        if action_format not in ACTION_FORMATS:
            raise ValueError(f"action_format must be one of {ACTION_FORMATS}, got {action_format!r}")
        if show_admissible not in ADMISSIBLE_MODES:
            raise ValueError(f"show_admissible must be one of {ADMISSIBLE_MODES}, got {show_admissible!r}")
        if action_format == "index" and show_admissible == "none":
            raise ValueError("action_format='index' needs the admissible list shown (the model picks a number from it)")
        super().__init__(**options)
        self.action_format = action_format
        self.show_admissible = show_admissible
        self.prompt_style = prompt_style

    def prompt(self, episode) -> list[dict[str, Any]]:
        """The chat (see :class:`ChatAgent`); with ``show_admissible="last"`` only its last turn lists commands."""
        if self.prompt_style == "compact":
            return self._compact_prompt(episode)
        chat = super().prompt(episode)
        if self.show_admissible == "last":
            info = episode.infos[-1] if episode.infos else {}
            chat[-1] = {**chat[-1], "content": chat[-1]["content"] + self._listing(info)}
        return chat

    def _compact_prompt(self, episode) -> list[dict[str, Any]]:
        """System message + one user turn: goal, memory, last command and answer, admissible commands."""
        if not episode.observations:
            raise ValueError("the episode has no observation yet: reset the env before asking for a prompt")
        observations = [str(o) for o in episode.observations]
        actions = [str(a) for a in episode.actions]
        memory = GameMemory.from_transcript(observations, actions)
        # the goal, the commands, then the state, nearest to the answer where a tiny model attends best
        head = f"Goal: {memory.goal}" if memory.goal else "Start: " + _strip_banner(observations[0])
        lines = memory.lines()[1 if memory.goal else 0:]
        if actions:  # the last answer, then where the agent is now (the memory's last lines)
            at = next(i for i, line in enumerate(lines) if line.startswith("At: "))
            lines.insert(at, f"Last: {actions[-1]} -> {' '.join(observations[-1].split())}")
        info = episode.infos[-1] if episode.infos else {}
        chat = [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
        if self.show_admissible == "none":  # the commands travel beside the text, for a choice policy to score
            admissible = list(info.get("admissible_actions") or ())
            return chat + [{"role": "user", "content": head + "\n" + "\n".join(lines),
                            "admissible_actions": admissible}]
        return chat + [{"role": "user", "content": head + self._listing(info) + "\n\n" + "\n".join(lines)}]

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


# ------------------------------------------------------------------------------------------ memory
_BANNER = re.compile(r"^\s*-=.*?=-\s*", re.S)
_ROOM = re.compile(r"Looking quickly around you, you see (.*?)\.\s*(?:\n|$)", re.S)
_GOAL = re.compile(r"Your task is to: (.*?)\s*$", re.S)
_ARRIVE = re.compile(r"You arrive at (?:loc \d+\. )?(?:the )?(.+?)\.(?: |$)")
_CONTENTS = re.compile(r"(?:On the (.+?)|In it), you see (.*?)\.(?: |$)")
_STATE = re.compile(r"The (.+?) is (open|closed)\.")
_OPEN = re.compile(r"You open the (.+?)\.")
_TAKE = re.compile(r"You pick up the (.+?) from the (.+?)\.")
_PLACE = re.compile(r"You (?:move|put) the (.+?) (?:to|in|on|in/on) the (.+?)\.")
_CHANGE = re.compile(r"You (heat|cool|clean) the (.+?) using the (.+?)\.")
_DONE = {"heat": "hot", "cool": "cool", "clean": "clean"}


def _strip_banner(text: str) -> str:
    return " ".join(_BANNER.sub("", text).split())


def _things(listing: str) -> list[str]:
    """``"a bowl 1, a mug 2, and a egg 1"`` -> ``["bowl 1", "mug 2", "egg 1"]`` (``"nothing"`` -> [])."""
    items = []
    for part in re.split(r",\s*(?:and\s+)?|\s+and\s+", listing.strip()):
        part = re.sub(r"^(?:a|an|some|the)\s+", "", part.strip())
        if part and part != "nothing":
            items.append(part)
    return items


def _kind(name: str) -> str:
    """``"plate 1"`` -> ``"plate"``."""
    return re.sub(r"\s+\d+$", "", name)


def _place_order(name: str) -> tuple[str, int]:
    """``"drawer 10"`` -> ``("drawer", 10)``: places sort by kind, then number (2 before 10)."""
    number = re.search(r"(\d+)$", name)
    return _kind(name), int(number.group(1)) if number else 0


@dataclass
class GameMemory:
    """What an ALFWorld agent knows from the texts it saw: place, hands, visited places, sightings.

    Built by :meth:`from_transcript` from the observations and commands of an episode so far (reading
    ALFWorld's sentences: "You arrive at ...", "On the X, you see ...", "You pick up the O from the X.",
    ...); texts it does not recognise change nothing. :meth:`lines` renders it for the compact prompt.
    """

    goal: str = ""
    places: list[str] = field(default_factory=list)        # the room's places, in the opening's order
    visited: list[str] = field(default_factory=list)
    location: str | None = None
    states: dict[str, str] = field(default_factory=dict)    # place -> "open" / "closed"
    holding: str | None = None
    changed: dict[str, str] = field(default_factory=dict)   # object -> "hot" / "cool" / "clean"
    placed: list[str] = field(default_factory=list)          # "apple 1 in fridge 1"
    seen: dict[str, str] = field(default_factory=dict)       # object -> where it was last seen

    @classmethod
    def from_transcript(cls, observations: Sequence[str], actions: Sequence[str]) -> "GameMemory":
        """The memory after the opening ``observations[0]`` and each (action, observation) pair after it."""
        memory = cls()
        opening = str(observations[0]) if observations else ""
        if (room := _ROOM.search(opening)) is not None:
            memory.places = _things(room.group(1))
        if (goal := _GOAL.search(opening)) is not None:
            memory.goal = " ".join(goal.group(1).split())
        for action, observation in zip(actions, observations[1:]):
            memory.update(str(action), str(observation))
        return memory

    def update(self, action: str, observation: str) -> None:
        """Read one step: the command sent and the env's answer."""
        text = " ".join(observation.split())
        if (arrive := _ARRIVE.search(text)) is not None:
            self.location = arrive.group(1)
            if self.location not in self.visited:
                self.visited.append(self.location)
        for state in _STATE.finditer(text):
            self.states[state.group(1)] = state.group(2)
        if (opened := _OPEN.search(text)) is not None:  # opening needs the agent there
            self.location = opened.group(1)
            self.states[self.location] = "open"
            if self.location not in self.visited:
                self.visited.append(self.location)
        for contents in _CONTENTS.finditer(text):
            where = contents.group(1) or (_OPEN.search(text).group(1) if _OPEN.search(text) else self.location)
            if where is None:
                continue
            for name in [n for n, w in self.seen.items() if w == where]:
                del self.seen[name]  # what is there now replaces what was seen there before
            for name in _things(contents.group(2)):
                self.seen[name] = where
        if (take := _TAKE.search(text)) is not None:
            self.holding = take.group(1)
            self.seen.pop(self.holding, None)
        if (place := _PLACE.search(text)) is not None:
            self.placed.append(f"{place.group(1)} in {place.group(2)}")
            self.holding = None if self.holding == place.group(1) else self.holding
        if (change := _CHANGE.search(text)) is not None:
            self.changed[change.group(2)] = _DONE[change.group(1)]

    def lines(self) -> list[str]:
        """The memory as short lines: goal, placed, places not visited, sightings, place and hands, goal objects."""
        lines = [f"Goal: {self.goal}"] if self.goal else []
        wanted = set(re.findall(r"[a-z]+", self.goal.lower()))
        if self.placed:
            lines.append("Placed: " + ", ".join(self.placed) + ".")
        if self.places:
            unvisited = sorted((p for p in self.places if p not in self.visited), key=_place_order)
            lines.append("Not visited: " + (", ".join(f"go to {p}" for p in unvisited) if unvisited else "none") + ".")
        sightings = [f"{name} at {at}" for name, at in self.seen.items() if _kind(name) in wanted]
        if sightings:
            lines.append("Seen: " + ", ".join(sightings) + ".")
        where = "the middle of the room" if self.location is None else self.location
        if self.location is not None and self.location in self.states:
            where += f" ({self.states[self.location]})"
        held = "nothing" if self.holding is None else self.holding
        if self.holding in self.changed:
            held += f" ({self.changed[self.holding]})"
        lines.append(f"At: {where}. Holding: {held}.")
        here = [name for name, at in self.seen.items() if at == self.location and _kind(name) in wanted]
        if here:
            lines.append("Here: " + ", ".join(here) + ".")
        return lines
