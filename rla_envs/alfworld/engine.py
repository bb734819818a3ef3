"""A fast ALFWorld game engine whose transcripts are identical to textworld's stock PDDL env.

ALFWorld games (``game.tw-pddl`` files: a PDDL domain, a text grammar, a PDDL problem and a
walkthrough) are played by textworld's ``PddlEnv`` wrapped in alfworld's ``AlfredDemangler``. That
stack is slow for three reasons, all fixed here without changing a single character of output:

1. every ``load`` re-parses the grammar document with tatsu, although every ALFWorld game shares
   the same domain and grammar except for the goal sentence. :func:`game_logic` parses each
   distinct (domain, grammar-without-goal) pair once and swaps in the game's own ``task`` rule;
2. every ``reset`` re-translates PDDL to SAS twice (``fast_downward.pddl2sas``). :func:`translate`
   does it once per problem and keeps the result (and the initial facts) in an LRU cache; the
   optimised translation used only for re-planning is made on first need;
3. every step derives the feedback and each admissible command with the context-sensitive grammar,
   which re-parses each template with tatsu and deep-copies its context at every symbol.
   :class:`GrammarDeriver` follows the same derivation rules on cached parses and immutable contexts.

Global state. ``fast_downward.load_lib()`` copies ``libdownward.so`` (33 MB) to a temporary path
before loading it, so each :class:`AlfWorldEngine` owns a private copy of the planner's C state
(the current SAS task and search state): two engines hold two games in one process without
interfering. What *is* shared by the whole process is Python-side: the translator's module-level
``options`` (and ``pddl2sas`` overwrites ``sys.argv``, which :func:`translate` restores), textworld's
tatsu parsers, and this module's caches. All of those are guarded by one process-wide lock.
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
import re
import sys
import threading
import weakref
from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import fast_downward
import textworld
from textworld.core import EnvInfos, GameState
from textworld.envs.pddl import PddlEnv
from textworld.envs.pddl import logic as pddl_logic
from textworld.envs.pddl import textgen
from textworld.generator.game import EntityInfo
from textworld.logic import Proposition, Rule, Signature, Variable

from rla_envs.core.errors import InvalidTask, RlaError

__all__ = ["AlfWorldEngine", "EngineInUse", "GrammarDeriver", "Translation", "game_logic", "translate",
           "clear_caches", "cache_info", "read_game"]

_SHARED_LOCK = threading.RLock()  # guards tatsu parsers, the PDDL translator, sys.argv and the caches
_GOAL_RULE = re.compile(r'("task"\s*:\s*\[\s*\{\s*"rhs"\s*:\s*)("(?:[^"\\]|\\.)*")(\s*\}\s*\])')
_GOAL_SENTINEL = '"Your task is to: RLA_GOAL_PLACEHOLDER."'
#: Games whose parse and translation stay cached per process (env var RLA_ALFWORLD_CACHE_SIZE).
CACHE_SIZE = int(os.environ.get("RLA_ALFWORLD_CACHE_SIZE", "512"))


class EngineInUse(RlaError, RuntimeError):
    """An :class:`AlfWorldEngine` was called from a second thread while it was busy."""


# --------------------------------------------------------------------------- grammar and domain
@functools.lru_cache(maxsize=CACHE_SIZE)
def game_logic(domain: str, grammar: str) -> pddl_logic.GameLogic:
    """The parsed ``GameLogic`` of a game, sharing one parse among games that differ only in the goal.

    Treat the result as read-only (its ``types`` grow as problems are loaded, as in textworld).
    A grammar without an ALFWorld-style ``task`` rule is parsed whole.
    """
    match = _GOAL_RULE.search(grammar)
    if match is None:
        with _SHARED_LOCK:
            return pddl_logic.GameLogic(domain=domain, grammar=grammar)
    generic = grammar[:match.start(2)] + _GOAL_SENTINEL + grammar[match.end(2):]
    return _with_goal(_generic_logic(domain, generic), domain, json.loads(match.group(2)))


@functools.lru_cache(maxsize=8)
def _generic_logic(domain: str, generic_grammar: str) -> pddl_logic.GameLogic:
    with _SHARED_LOCK:
        return pddl_logic.GameLogic(domain=domain, grammar=generic_grammar)


def _with_goal(base: pddl_logic.GameLogic, domain: str, task_rhs: str) -> pddl_logic.GameLogic:
    """A GameLogic sharing ``base``'s actions, types and rules, with its own ``task`` rule."""
    logic = pddl_logic.GameLogic.__new__(pddl_logic.GameLogic)
    logic.domain = domain
    logic.actions = base.actions
    logic.types = base.types
    logic.grammar = textgen.ContextSensitiveGrammar()
    logic.grammar._rules.update(base.grammar._rules)
    with _SHARED_LOCK:
        task_grammar = textgen.ContextSensitiveGrammar.parse(json.dumps({"task": [{"rhs": task_rhs}]}))
    logic.grammar._rules["task"] = list(task_grammar._rules["task"])
    return logic


# --------------------------------------------------------------------------- PDDL -> SAS
@dataclass
class Translation:
    """One problem translated to SAS, with everything a reset needs (shared, read-only)."""

    domain: str
    problem: str
    task: Any  # fast_downward's parsed PDDL task
    sas: str
    init_facts: list[Proposition]
    name2type: dict[str, str]
    state_facts: list[Proposition] | None = None  # filled from the planner on first reset
    entities: list[tuple[str, str, str]] | None = None  # (id, type, demangled name), on first load
    _sas_replan: str | None = field(default=None, repr=False)

    @property
    def sas_replan(self) -> str:
        """The optimised translation used by the planner for re-planning (made on first use)."""
        if self._sas_replan is None:
            self._sas_replan = _pddl2sas(self.domain, self.problem, optimize=True)[1]
        return self._sas_replan


def _pddl2sas(domain: str, problem: str, optimize: bool) -> tuple[Any, str]:
    with _SHARED_LOCK:
        saved_argv = sys.argv
        try:
            return fast_downward.pddl2sas(domain, problem, verbose=False, optimize=optimize)
        finally:
            sys.argv = saved_argv


@functools.lru_cache(maxsize=CACHE_SIZE)
def translate(domain: str, problem: str) -> Translation:
    """The SAS translation of a PDDL problem, made once per process (LRU cache) and reused."""
    try:
        task, sas = _pddl2sas(domain, problem, optimize=False)
    except Exception as exc:  # the translator raises AssertionError, KeyError, ... on bad PDDL
        raise InvalidTask(f"the PDDL problem could not be translated: {type(exc).__name__}: {exc}") from exc
    except SystemExit as exc:  # ... or exits
        raise InvalidTask(f"the PDDL problem could not be translated (the translator exited: {exc})") from None
    name2type = {o.name: o.type_name for o in task.objects}
    init_facts = [fact for fact in (_init_fact(atom, name2type) for atom in task.init) if fact is not None]
    return Translation(domain, problem, task, sas, init_facts, name2type)


def _init_fact(atom: Any, name2type: dict[str, str]) -> Proposition | None:
    """The fact textworld's PddlState makes of one atom of the initial state (None if it skips it)."""
    if isinstance(atom, fast_downward.translate.pddl.conditions.Atom):
        if atom.predicate == "=":
            return None
        return Proposition(atom.predicate, [Variable(arg, name2type[arg]) for arg in atom.args])
    if isinstance(atom, fast_downward.translate.pddl.f_expression.Assign):
        if atom.fluent.symbol == "total-cost":
            return None
        name = "{}".format(atom.expression.value)
        if str.isdigit(name):
            return None
        return Proposition(name, [Variable(arg, name2type[arg]) for arg in atom.fluent.args])
    return None


def _fact_order(prop: Proposition) -> tuple:
    return prop.name, [(var.name, var.type) for var in prop.arguments]


def _bind(placeholders, variables, mapping: dict, used_vars: set) -> bool:
    """Extend ``mapping`` with placeholder -> variable pairs; False at the first conflict."""
    for placeholder, var in zip(placeholders, variables):
        existing = mapping.get(placeholder)
        if existing is None:
            if var in used_vars:
                return False
            mapping[placeholder] = var
            used_vars.add(var)
        elif existing != var:
            return False
    return True


class CachedPddlState(pddl_logic.PddlState):
    """textworld's ``PddlState`` built from a cached :class:`Translation` instead of translating again."""

    def __init__(self, downward_lib: Any, translation: Translation, logic: pddl_logic.GameLogic):
        # Same attributes and the same order of fact insertions as PddlState.__init__.
        self._facts = defaultdict(set)
        self._vars_by_name = {}
        self._vars_by_type = defaultdict(set)
        self._var_counts = Counter()
        self._sorted_facts: dict[Signature, list[Proposition]] = {}
        self._signatures: dict[Signature, list[Signature]] = {}
        self._logic = logic
        self.downward_lib = downward_lib
        self.pddl_problem = translation.problem
        self.task = translation.task
        self.sas = translation.sas
        self._translation = translation
        self._actions = {a.name: a for a in translation.task.actions}
        with _SHARED_LOCK:
            for type_ in translation.task.types:
                try:
                    logic.types.add(textworld.logic.Type(type_.name, type_.supertype_names))
                except ValueError:
                    pass
        downward_lib.load_sas(translation.sas.encode("utf-8"))
        self._replan_loaded = False
        self.name2type = translation.name2type
        self.add_facts(translation.init_facts)
        if translation.state_facts is None:
            atoms = (pddl_logic.Atom * downward_lib.get_state_size())()
            downward_lib.get_state(atoms)
            facts = [atom.get_fact(self.name2type) for atom in atoms]
            translation.state_facts = [fact for fact in facts if not fact.is_negation]
        self.add_facts(translation.state_facts)

    # textworld's State sorts the facts of a signature every time a query visits them (~80% of a step);
    # keep each signature's sorted facts until one of them changes. The order is the same: sorting
    # by (name, [(variable name, variable type), ...]) is exactly Proposition's ordering.
    def add_fact(self, prop: Proposition) -> None:
        super().add_fact(prop)
        self._sorted_facts.pop(prop.signature, None)

    def remove_fact(self, prop: Proposition) -> None:
        super().remove_fact(prop)
        self._sorted_facts.pop(prop.signature, None)

    def _facts_in_order(self, signature: Signature) -> list[Proposition]:
        facts = self._sorted_facts.get(signature)
        if facts is None:
            facts = sorted(self._facts.get(signature, ()), key=_fact_order)
            self._sorted_facts[signature] = facts
        return facts

    def _concrete_signatures(self, signature: Signature) -> list[Signature]:
        """The signatures of ``signature`` with each argument type replaced by itself or a subtype."""
        found = self._signatures.get(signature)
        if found is None:
            types = [self._logic.types.get(name) for name in signature.types]
            found = [Signature(signature.name, [t.name for t in subtypes])
                     for subtypes in self._logic.types.multi_subtypes(types)]
            self._signatures[signature] = found
        return found

    def _all_applicable_assignments(self, rule, mapping, used_vars, new_phs_by_depth, depth):
        """Same search as textworld's State (same results, same order), over the cached sorted facts."""
        new_placeholders = new_phs_by_depth[depth]
        if depth >= len(rule.preconditions):
            yield from self._all_assignments(new_placeholders, mapping, used_vars, False)
            return
        predicate = rule.preconditions[depth]
        bound = [mapping.get(placeholder) for placeholder in predicate.parameters]
        if all(var is not None for var in bound):  # fully bound: at most one fact matches; look it up
            fact = Proposition(predicate.name, bound)
            signature = fact.signature
            if signature in self._concrete_signatures(predicate.signature) and fact in self._facts.get(signature, ()):
                yield from self._all_applicable_assignments(rule, mapping, used_vars, new_phs_by_depth, depth + 1)
            return
        for signature in self._concrete_signatures(predicate.signature):
            for prop in self._facts_in_order(signature):
                if _bind(predicate.parameters, prop.arguments, mapping, used_vars):
                    yield from self._all_applicable_assignments(rule, mapping, used_vars, new_phs_by_depth, depth + 1)
                for placeholder in new_placeholders:  # undo this level's bindings
                    used_vars.discard(mapping.pop(placeholder, None))

    @property
    def sas_replan(self) -> str:
        return self._translation.sas_replan

    def replan(self, infos):
        """A plan from the current state (the optimised translation is loaded on first use)."""
        if not self._replan_loaded:
            self.downward_lib.load_sas_replan(self._translation.sas_replan.encode("utf-8"))
            self._replan_loaded = True
        return super().replan(infos)


# --------------------------------------------------------------------------- text generation
class _Context:
    """An immutable derivation context: the grammar variables and the placeholder mapping."""

    __slots__ = ("variables", "mapping")

    def __init__(self, variables: dict, mapping: dict):
        self.variables = variables
        self.mapping = mapping


@functools.lru_cache(maxsize=None)
def _symbols(text: str) -> list:
    """The parsed symbols of a grammar string (shared templates: never mutate them)."""
    with _SHARED_LOCK:
        return textgen._parse_and_convert(text, rule_name="symbols")


@functools.lru_cache(maxsize=None)
def _query(expression: str) -> Rule:
    """The parsed conjunctive query of a grammar condition."""
    with _SHARED_LOCK:
        return Rule.parse_conjunctive_query(expression)


@functools.lru_cache(maxsize=None)
def _compiled(expression: str) -> Any:
    return compile(expression, "<grammar>", "eval")


class GrammarDeriver:
    """Derives text from a textworld context-sensitive grammar exactly as ``ContextSensitiveGrammar.derive``.

    Same rules (first applicable production, conditional queries in the state's order, lists joined
    by ``#list_separator#``/``#list_last_separator#``, ``#list_empty#`` when empty) but templates are
    parsed once and contexts are shared instead of deep-copied.
    """

    def __init__(self, grammar: textgen.ContextSensitiveGrammar, entity_infos: Mapping[str, EntityInfo]):
        self._rules = grammar._rules
        self._entity_infos = entity_infos

    def derive(self, start: str, state: textworld.logic.State, variables: dict, mapping: dict) -> str:
        """The text derived from ``start`` in ``state`` with the given grammar variables and mapping."""
        stack = [(symbol, _Context(variables, mapping)) for symbol in reversed(_symbols(start))]
        derived: list[str] = []
        while stack:
            symbol, context = stack.pop()
            kind = type(symbol)
            if kind is textgen.TerminalSymbol:
                derived.append(str(symbol.symbol))
            elif kind is textgen.NonterminalSymbol:
                rhs = self._production(symbol, state, context)
                stack.extend((child, context) for child in reversed(rhs))
            elif kind is textgen.EvalSymbol:
                derived.append(str(self._eval(symbol, context)))
            elif kind in (textgen.ConditionalSymbol, textgen.ListSymbol):
                stack.extend(reversed(self._expand(symbol, state, context)))
            else:
                raise NotImplementedError(f"Unknown symbol: {kind}")
        return "".join(derived)

    def _production(self, symbol, state, context: _Context) -> list:
        rules = self._rules.get(str(symbol))
        if not rules:
            raise textgen.CSGUnknownSymbolError(symbol)
        for rule in rules:
            if not rule.condition:
                return rule.rhs
            if next(iter(state.all_assignments(_query(rule.condition), context.mapping)), None) is not None:
                return rule.rhs
        raise IndexError(f"no production of #{symbol}# applies in this state")

    def _eval(self, symbol, context: _Context) -> Any:
        scope = {"self": symbol, "context": context}
        scope.update(context.variables)
        return eval(_compiled(symbol.expression), vars(textgen), scope)

    def _expand(self, symbol, state, context: _Context) -> list[tuple[Any, _Context]]:
        """What ``symbol.derive()`` returns for a conditional, eval or list symbol, with contexts."""
        kind = type(symbol)
        if kind is textgen.EvalSymbol:
            return [(textgen.TerminalSymbol(self._eval(symbol, context)), context)]
        if kind is textgen.ConditionalSymbol:
            if not symbol.given:
                return [(symbol.expression, context)]
            expanded = []
            for found in state.all_assignments(_query(symbol.given), context.mapping):
                variables = dict(context.variables)
                variables.update({ph.name: self._entity_infos[var.name] for ph, var in found.items()})
                mapping = dict(context.mapping)
                mapping.update(found)
                expanded.append((symbol.expression, _Context(variables, mapping)))
            return expanded
        if kind is textgen.ListSymbol:
            items = self._expand(symbol.symbol, state, context)
            if not items:
                return [(textgen.NonterminalSymbol("list_empty"), context)]
            if len(items) == 1:
                return items
            separator = (textgen.NonterminalSymbol("list_separator"), context)
            joined = [part for item in items[:-1] for part in (item, separator)][:-1]
            return joined + [(textgen.NonterminalSymbol("list_last_separator"), context), items[-1]]
        raise AttributeError(f"'{kind.__name__}' object has no attribute 'derive'")


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
        for cached in (game_logic, _generic_logic, translate, _symbols, _query, _compiled):
            cached.cache_clear()


def cache_info() -> dict[str, Any]:
    """Hits, misses and sizes of the per-process game-logic and translation caches."""
    return {"logic": game_logic.cache_info(), "translation": translate.cache_info()}
