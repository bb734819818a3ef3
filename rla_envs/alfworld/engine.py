"""A fast ALFWorld game engine whose transcripts are identical to textworld's stock PDDL env.

ALFWorld games (``game.tw-pddl`` files: a PDDL domain, a text grammar, a PDDL problem and a
walkthrough) are played by textworld's ``PddlEnv`` wrapped in alfworld's ``AlfredDemangler``. That
stack is slow for three reasons, all fixed without changing a single character of output:

1. every ``load`` re-parses the grammar document with tatsu: :func:`~rla_envs.alfworld.grammar.game_logic`
   parses each distinct domain and grammar once (module :mod:`rla_envs.alfworld.grammar`);
2. every ``reset`` re-translates PDDL to SAS twice: :func:`~rla_envs.alfworld.translation.translate`
   does it once per problem and :class:`~rla_envs.alfworld.translation.CachedPddlState` starts from
   the cached result (module :mod:`rla_envs.alfworld.translation`);
3. every step derives text with deep copies and re-parsed templates:
   :class:`~rla_envs.alfworld.grammar.GrammarDeriver` derives the same text from cached parses.

This module puts them together in :class:`AlfWorldEngine` (and re-exports the names above, which
used to live here).

Global state. ``fast_downward.load_lib()`` copies ``libdownward.so`` (33 MB) to a temporary path
before loading it, so each :class:`AlfWorldEngine` owns a private copy of the planner's C state
(the current SAS task and search state): two engines hold two games in one process without
interfering. What *is* shared by the whole process is Python-side: the translator's module-level
``options`` (and ``pddl2sas`` overwrites ``sys.argv``, which ``translate`` restores), textworld's
tatsu parsers, and the parse and translation caches. All of those are guarded by one process-wide
lock (:data:`~rla_envs.alfworld.grammar.SHARED_LOCK`).
Library copies are never unloaded (unloading one crashes the next load): a closed or collected
engine returns its copy to a pool that the next engine takes from.

Threads. An engine is **not thread-safe**: use one engine per thread (or, better, one per process).
Calling an engine from a second thread while it is busy raises :class:`EngineInUse` instead of
corrupting its state.
"""

from __future__ import annotations

import functools
import json
import os
import threading
import weakref
from collections.abc import Mapping
from typing import Any

import fast_downward
import textworld
from textworld.core import EnvInfos, GameState
from textworld.envs.pddl import PddlEnv
from textworld.generator.game import EntityInfo

# CACHE_SIZE and CachedPddlState are imported for code that imported them from here before the split.
from rla_envs.alfworld.grammar import CACHE_SIZE, GrammarDeriver, clear_grammar_caches, game_logic  # noqa: F401
from rla_envs.alfworld.grammar import SHARED_LOCK as _SHARED_LOCK
from rla_envs.alfworld.translation import CachedPddlState, Translation, translate  # noqa: F401
from rla_envs.core.errors import InvalidTask, RlaError

__all__ = ["AlfWorldEngine", "EngineInUse", "GrammarDeriver", "Translation", "game_logic", "translate",
           "clear_caches", "cache_info", "read_game"]


class EngineInUse(RlaError, RuntimeError):
    """An :class:`AlfWorldEngine` was called from a second thread while it was busy."""


# --------------------------------------------------------------------------- the engine
def _exclusive(method):
    """Run ``method`` holding the engine's busy lock; a concurrent call raises EngineInUse."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        if not self._busy.acquire(blocking=False):
            raise EngineInUse(
                f"{type(self).__name__}.{method.__name__}() was called while another thread was using this engine. "
                "An engine is not thread-safe: give each thread (or better, each process) its own engine."
            )
        try:
            return method(self, *args, **kwargs)
        finally:
            self._busy.release()

    return wrapper


def read_game(game: str | os.PathLike | Mapping[str, Any]) -> dict[str, Any]:
    """A game dict from a ``game.tw-pddl`` path or a dict, checked for the keys an engine needs."""
    if isinstance(game, Mapping):
        data = dict(game)
    else:
        try:
            with open(game, encoding="utf-8") as handle:
                data = json.load(handle)
        except OSError as exc:
            raise InvalidTask(f"cannot read the ALFWorld game file {os.fspath(game)!r}: {exc}") from None
    missing = [key for key in ("pddl_domain", "grammar", "pddl_problem") if not isinstance(data.get(key), str)]
    if missing:
        raise InvalidTask(f"an ALFWorld game needs string fields pddl_domain, grammar and pddl_problem; "
                          f"missing or not text: {missing} (keys present: {sorted(data)})")
    return data


class AlfWorldEngine(PddlEnv):
    """textworld's ``PddlEnv`` + alfworld's ``AlfredDemangler``, with cached parsing and translation.

    A drop-in textworld ``Environment``: ``load(game)`` takes a ``game.tw-pddl`` path or dict,
    ``reset()`` and ``step(command)`` return the same ``GameState`` contents as the stock stack
    (feedback, admissible commands, won, facts, ...). Not thread-safe (see the module docstring).

    Args:
        infos: what to put in each game state (textworld ``EnvInfos``); default: admissible commands and won.
        demangle: name entities as ALFWorld does ("apple 1"), like wrapping the stock env in ``AlfredDemangler``.
    """

    def __init__(self, infos: EnvInfos | None = None, *, demangle: bool = True):
        # Not PddlEnv.__init__: it would load a fresh 33 MB copy of the planner library every time.
        textworld.Environment.__init__(self, infos or EnvInfos(admissible_commands=True, won=True))
        self.downward_lib = _acquire_planner()
        self._release = weakref.finalize(self, _release_planner, self.downward_lib)
        self.demangle = demangle
        self._busy = threading.Lock()
        self._translation: Translation | None = None
        self._deriver: GrammarDeriver | None = None
        self._command_templates: list[str] = []
        self.state: GameState | None = None

    @_exclusive
    def load(self, game: str | os.PathLike | Mapping[str, Any]) -> None:
        """Load a game (path or dict); parsing and translation are reused from earlier loads."""
        data = read_game(game)
        logic = game_logic(data["pddl_domain"], data["grammar"])
        translation = translate(data["pddl_domain"], data["pddl_problem"])  # both raise before any change
        self._game_file = None if isinstance(game, Mapping) else os.fspath(game)
        self._game_data = data
        self.walkthrough = data.get("walkthrough", None)
        self._logic, self._translation = logic, translation
        self._pddl_state = CachedPddlState(self.downward_lib, self._translation, self._logic)
        self._entity_infos = self._make_entity_infos()
        self._deriver = GrammarDeriver(self._logic.grammar, self._entity_infos)
        self._command_templates = sorted(set(action.template for action in self._logic.actions.values()))
        self.state = None

    def _make_entity_infos(self) -> dict[str, EntityInfo]:
        translation = self._translation
        if translation.entities is None:
            infos = self._get_entity_infos()
            if self.demangle:
                from alfworld.agents.utils.misc import Demangler

                demangler = Demangler(game_infos=infos, shuffle=False)
                for info in infos.values():
                    info.name = demangler.demangle_alfred_name(info.id)
            entities = [(info.id, info.type, info.name) for info in infos.values()]
            if self.demangle:
                translation.entities = entities
        else:
            entities = translation.entities
        result = {}
        for entity_id, entity_type, name in entities:
            info = EntityInfo(entity_id, entity_type)
            info.name = name if self.demangle else entity_id
            info.definite, info.indefinite = "the", "a"
            result[entity_id] = info
        return result

    def _derive(self, start: str, mapping: dict) -> str:
        variables = {ph.name: self._entity_infos[var.name] for ph, var in mapping.items()}
        return self._deriver.derive(start, self._pddl_state, variables, mapping)

    def _gather_infos(self):
        state = self.state
        state["command_templates"] = list(self._command_templates)
        state["won"] = self._pddl_state.check_goal()
        state["lost"] = False
        state["_entity_infos"] = dict(self._entity_infos)
        state["_facts"] = list(self._pddl_state.facts)
        if self.request_infos.facts:
            state["facts"] = list(map(self._get_human_readable_fact, state["_facts"]))
        state["last_action"] = None
        state["_last_action"] = self._last_action
        state["_valid_actions"] = list(self._pddl_state.all_applicable_actions())
        names = {key: info.name for key, info in self._entity_infos.items()}
        commands = []
        for action in state["_valid_actions"]:
            action.command_template = self._derive(action.command_template, action.mapping)
            commands.append(action.format_command(names))
        state["_valid_commands"] = commands
        state["admissible_commands"] = sorted(set(commands))
        if self.request_infos.moves:
            state["moves"] = self._moves
        if self.request_infos.policy_commands:
            state["policy_commands"] = self._pddl_state.replan(self._entity_infos)

    def _keep_infos(self) -> None:
        """After a command that changed nothing, reuse what ``_gather_infos`` computed for this state."""
        for key, value in self.prev_state.items():
            if key not in ("feedback", "raw", "last_command", "extra.walkthrough", "score", "done"):
                self.state[key] = type(value)(value) if isinstance(value, (list, dict)) else value
        self.state["last_action"] = self.state["_last_action"] = None

    @_exclusive
    def reset(self) -> GameState:
        """Start the loaded game again; returns the first game state (no re-parsing, no re-translation)."""
        if self._translation is None:
            raise RuntimeError("AlfWorldEngine.reset() called before load(game) (or after close())")
        self._pddl_state = CachedPddlState(self.downward_lib, self._translation, self._logic)
        self.prev_state = None
        self.state = GameState()
        self._last_action = None
        self._moves = 0
        self.state.feedback = self._deriver.derive("#intro#", self._pddl_state, {}, {})
        self.state.raw = self.state.feedback
        self._gather_infos()
        if "walkthrough" in self.request_infos.extras:
            self.state["extra.walkthrough"] = self.walkthrough or self._pddl_state.replan(self._entity_infos)
        return self.state

    @_exclusive
    def step(self, command: str) -> tuple[GameState, float, bool]:
        """Apply one text command; anything that is not an admissible command gives "Nothing happens."."""
        if self.state is None:
            raise RuntimeError("AlfWorldEngine.step() called before reset()")
        command = command.strip()
        self.prev_state = self.state
        self.state = GameState()
        self.state.last_command = command
        self._last_action = None
        try:
            index = self.prev_state["_valid_commands"].index(command)
        except ValueError:
            self.state.feedback = "Nothing happens."
            self.state.raw = self.state.feedback
            self._keep_infos()
        else:
            self._last_action = self.prev_state["_valid_actions"][index]
            self._pddl_state.apply(self._last_action)
            self.state.feedback = self._derive(self._last_action.feedback_rule, self._last_action.mapping)
            self._moves += 1
            self.state.raw = self.state.feedback
            self._gather_infos()
        if "walkthrough" in self.request_infos.extras:
            self.state["extra.walkthrough"] = self.prev_state["extra.walkthrough"]
        self.state["score"] = 1 if self.state["won"] else 0
        self.state["done"] = self.state["won"] or self.state["lost"]
        return self.state, self.state["score"], self.state["done"]

    @property
    def last_command_applied(self) -> bool:
        """Whether the last ``step`` command was admissible (and so changed the game)."""
        return self._last_action is not None

    def close(self) -> None:
        """Hand this engine's copy of the planner library back to the process pool; the engine is done."""
        self._release()
        self.downward_lib = None
        self._translation = None
        self.state = None


# Copies of the planner library not in use by any engine. dlclose()-ing a copy (fast_downward.close_lib)
# makes the next dlopen of a copy crash the process, so copies are never unloaded: a closed (or garbage-
# collected) engine hands its copy back here and the next engine reuses it (each reset reloads its task).
_FREE_PLANNERS: list[Any] = []


def _acquire_planner() -> Any:
    with _SHARED_LOCK:
        if _FREE_PLANNERS:
            return _FREE_PLANNERS.pop()
        return fast_downward.load_lib()


def _release_planner(lib: Any) -> None:
    with _SHARED_LOCK:
        _FREE_PLANNERS.append(lib)



def clear_caches() -> None:
    """Forget every cached grammar parse and translation (e.g. to free memory)."""
    with _SHARED_LOCK:
        clear_grammar_caches()
        translate.cache_clear()


def cache_info() -> dict[str, Any]:
    """Hits, misses and sizes of the per-process game-logic and translation caches."""
    return {"logic": game_logic.cache_info(), "translation": translate.cache_info()}
