"""ALFWorld PDDL problems translated to SAS once per process, and textworld's PDDL state built from the cache.

textworld's stock PDDL env re-translates PDDL to SAS twice on every ``reset``
(``fast_downward.pddl2sas``). :func:`translate` does it once per problem and keeps the result (and
the initial facts) in an LRU cache; the optimised translation used only for re-planning is made on
first need. :class:`CachedPddlState` is textworld's ``PddlState`` built from such a translation,
with each signature's sorted facts kept between queries (the same results in the same order).

The translator's module-level ``options`` are shared by the process and ``pddl2sas`` overwrites
``sys.argv`` (restored here): both are guarded by :data:`~rla_envs.alfworld.grammar.SHARED_LOCK`.
"""

from __future__ import annotations

import functools
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

import fast_downward
import textworld
from textworld.envs.pddl import logic as pddl_logic
from textworld.logic import Proposition, Signature, Variable

from rla_envs.alfworld.grammar import CACHE_SIZE, SHARED_LOCK as _SHARED_LOCK
from rla_envs.core.errors import InvalidTask

__all__ = ["Translation", "translate", "CachedPddlState"]


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
                except ValueError:  # already registered by an earlier translation: the shared logic keeps one
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

