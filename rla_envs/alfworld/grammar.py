"""The ALFWorld domain and grammar, parsed once per process, and text derived from them exactly as textworld does.

Two costs of textworld's stock PDDL env live here:

- every ``load`` re-parses the grammar document with tatsu, although every ALFWorld game shares the
  same domain and grammar except for the goal sentence. :func:`game_logic` parses each distinct
  (domain, grammar-without-goal) pair once and swaps in the game's own ``task`` rule;
- every step derives the feedback and each admissible command with the context-sensitive grammar,
  which re-parses each template with tatsu and deep-copies its context at every symbol.
  :class:`GrammarDeriver` follows the same derivation rules on cached parses and immutable contexts.

:data:`SHARED_LOCK` guards everything Python-side that the whole process shares: textworld's tatsu
parsers, the PDDL translator (see :mod:`rla_envs.alfworld.translation`), ``sys.argv`` and these caches.
"""

from __future__ import annotations

import ast
import functools
import json
import os
import re
import threading
from collections.abc import Mapping
from typing import Any

import textworld
from textworld.envs.pddl import logic as pddl_logic
from textworld.envs.pddl import textgen
from textworld.generator.game import EntityInfo
from textworld.logic import Rule

from rla_envs.core.errors import InvalidTask

__all__ = ["SHARED_LOCK", "CACHE_SIZE", "game_logic", "GrammarDeriver", "clear_grammar_caches"]

#: Guards tatsu parsers, the PDDL translator, ``sys.argv`` and the per-process caches (re-entrant).
SHARED_LOCK = threading.RLock()
_GOAL_RULE = re.compile(r'("task"\s*:\s*\[\s*\{\s*"rhs"\s*:\s*)("(?:[^"\\]|\\.)*")(\s*\}\s*\])')
_GOAL_SENTINEL = '"Your task is to: RLA_GOAL_PLACEHOLDER."'
#: Games whose parse and translation stay cached per process (env var RLA_ALFWORLD_CACHE_SIZE).
CACHE_SIZE = int(os.environ.get("RLA_ALFWORLD_CACHE_SIZE", "512"))


# --------------------------------------------------------------------------- grammar and domain
@functools.lru_cache(maxsize=CACHE_SIZE)
def game_logic(domain: str, grammar: str) -> pddl_logic.GameLogic:
    """The parsed ``GameLogic`` of a game, sharing one parse among games that differ only in the goal.

    Treat the result as read-only (its ``types`` grow as problems are loaded, as in textworld).
    A grammar without an ALFWorld-style ``task`` rule is parsed whole.
    """
    match = _GOAL_RULE.search(grammar)
    if match is None:
        with SHARED_LOCK:
            return pddl_logic.GameLogic(domain=domain, grammar=grammar)
    generic = grammar[:match.start(2)] + _GOAL_SENTINEL + grammar[match.end(2):]
    return _with_goal(_generic_logic(domain, generic), domain, json.loads(match.group(2)))


@functools.lru_cache(maxsize=8)
def _generic_logic(domain: str, generic_grammar: str) -> pddl_logic.GameLogic:
    with SHARED_LOCK:
        return pddl_logic.GameLogic(domain=domain, grammar=generic_grammar)


def _with_goal(base: pddl_logic.GameLogic, domain: str, task_rhs: str) -> pddl_logic.GameLogic:
    """A GameLogic sharing ``base``'s actions, types and rules, with its own ``task`` rule."""
    logic = pddl_logic.GameLogic.__new__(pddl_logic.GameLogic)
    logic.domain = domain
    logic.actions = base.actions
    logic.types = base.types
    logic.grammar = textgen.ContextSensitiveGrammar()
    logic.grammar._rules.update(base.grammar._rules)
    with SHARED_LOCK:
        task_grammar = textgen.ContextSensitiveGrammar.parse(json.dumps({"task": [{"rhs": task_rhs}]}))
    logic.grammar._rules["task"] = list(task_grammar._rules["task"])
    return logic



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
    with SHARED_LOCK:
        return textgen._parse_and_convert(text, rule_name="symbols")


@functools.lru_cache(maxsize=None)
def _query(expression: str) -> Rule:
    """The parsed conjunctive query of a grammar condition."""
    with SHARED_LOCK:
        return Rule.parse_conjunctive_query(expression)


# What a grammar's ``#{...}#`` expressions may use: names, attributes, literals, ``+``, ``and``/``or``, comparisons
# and ``x if c else y`` (ALFWorld's are like ``o.indefinite + ' ' + o.name`` and ``r.name or r.id``). No call, no
# subscript, no private attribute: the grammar comes from a game file, and no file's content runs on the host.
_SAFE_NODES = (ast.Expression, ast.Name, ast.Attribute, ast.Constant, ast.BinOp, ast.Add, ast.BoolOp, ast.And,
               ast.Or, ast.UnaryOp, ast.Not, ast.IfExp, ast.Compare, ast.Eq, ast.NotEq, ast.Is, ast.IsNot, ast.In,
               ast.NotIn, ast.Load)


@functools.lru_cache(maxsize=None)
def _compiled(expression: str) -> Any:
    """The grammar expression compiled, once it is known to be plain data access (see ``_SAFE_NODES``)."""
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise InvalidTask(f"the game's grammar has an expression that does not parse: {expression[:80]!r} "
                          f"({type(exc).__name__})") from None
    for node in ast.walk(tree):
        named = getattr(node, "attr", None) or getattr(node, "id", None) or ""
        if not isinstance(node, _SAFE_NODES) or named.startswith("_"):
            raise InvalidTask(f"the game's grammar has an expression that is not plain data access: {expression[:80]!r} "
                              f"(it uses {type(node).__name__} {named!r}); a grammar may only combine names, "
                              "attributes and literals, so it is refused rather than run")
    return compile(tree, "<grammar>", "eval")


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



def clear_grammar_caches() -> None:
    """Forget every cached domain/grammar parse and grammar template."""
    with SHARED_LOCK:
        for cached in (game_logic, _generic_logic, _symbols, _query, _compiled):
            cached.cache_clear()
