"""CodeFamily: the curriculum hooks (describe, apply_rewrite, validate, mutate) for code tasks."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rla_envs.core.errors import InvalidTask, RewriteRejected
from rla_envs.core.proposals import find_json_object
from rla_envs.core.task import Task, thaw

__all__ = ["CodeFamily", "leaked_tests", "REWRITE_FORMAT", "HINT_MARKER"]

REWRITE_FORMAT = """Answer with one JSON object (a ```json block is fine):
  "question": the new problem statement (do not write the tests' answers into it),
  "tests": the new tests, a list of {"input": ..., "output": ...}; for a function task "input" is the list of
           positional arguments and "output" the exact return value (or give Python literals as strings:
           {"args": "(3, [1, 2])", "expected": "(4, 5)"}); for a stdio task both are text,
  "solution" (optional): a complete Python program that passes every test (default: the current one),
  "examples" (optional): tests in the same shape to show the solver as public examples."""

HINT_MARKER = "\n\nHint: the reference solution begins with:\n"
"""What :meth:`CodeFamily.mutate` appends to a statement to add a hint (and looks for to remove one)."""

_COMMENTARY_KEYS = {"reasoning", "explanation", "analysis", "rationale", "thoughts", "notes"}
_MAX_TESTS = 50
_MAX_TEST_CHARS = 10_000
_LIMIT_RANGE = {"timeout_s": (0.5, 30.0), "memory_mb": (128, 4096)}
_LEAK_WINDOW = 40  # characters between a test's input and its output for the pair to count as shown
# Words and signs that tie an input to its answer: "solve(3) returns 10", "Input: 3 Output: 10", "f(3) = 10".
_CONNECTOR = r"(?:\breturns?\b|\boutputs?\b|\bgives?\b|\bis\b|\banswer\b|\bresult\b|->|→|=>|=|:)"
_START, _END = r"(?<!\w)(?<!\d\.)", r"(?!\w)(?!\.\d)"  # whole tokens: 7 is not in 17, 5 not in 5.5
_LONG_OUTPUT = 12  # an expected output this long found anywhere in the statement counts as leaked


# --------------------------------------------------------------------------- leaks

def _squash(text: str) -> str:
    return " ".join(str(text).split())


def _test_texts(form: str, test: Mapping[str, Any]) -> tuple[str, str]:
    """(input, output) of a spec test as they would be written in a statement."""
    if form == "function":
        args = str(test["args"]).strip()
        if args.startswith("(") and args.endswith(")"):
            args = args[1:-1].rstrip(",").strip()
        return _squash(args), _squash(test["expected"])
    return _squash(test["stdin"]), _squash(test["stdout"])


def leaked_tests(task: Task) -> list[int]:
    """Indices of hidden tests whose expected output the statement gives away.

    A hidden test leaks when its output follows its input, tied by a word or sign such as ``returns``,
    ``output``, ``is``, ``=`` or ``:`` (as in ``solve(3) returns 10`` or ``Input: 3 Output: 10``),
    or when a long output (12+ characters) appears anywhere. Hidden tests that are also public examples
    are shown on purpose and never count.
    """
    spec = task.spec
    statement = _squash(task.instruction)
    public = {json.dumps(thaw(t), sort_keys=True) for t in spec.get("public_tests") or ()}
    leaks = []
    for index, test in enumerate(spec.get("hidden_tests") or ()):
        if json.dumps(thaw(test), sort_keys=True) in public:
            continue
        given, expected = _test_texts(spec["form"], test)
        if not expected:
            continue
        if len(expected) >= _LONG_OUTPUT and expected in statement:
            leaks.append(index)
            continue
        if given:
            pattern = (_START + re.escape(given) + _END + f".{{0,{_LEAK_WINDOW}}}?" + _CONNECTOR
                       + f".{{0,{_LEAK_WINDOW}}}?" + _START + re.escape(expected) + _END)
            if re.search(pattern, statement, re.DOTALL):
                leaks.append(index)
    return leaks


# --------------------------------------------------------------------------- proposals

def _parse_proposal(text: Any) -> dict[str, Any]:
    if not isinstance(text, str) or not text.strip():
        raise RewriteRejected("the rewrite proposal is empty; expected a JSON object. " + REWRITE_FORMAT)
    data = find_json_object(text)
    if data is None:
        raise RewriteRejected(f"no JSON object found in the proposal {text[:120]!r}. " + REWRITE_FORMAT)
    allowed = {"question", "tests", "solution", "examples"}
    unknown = set(data) - allowed - _COMMENTARY_KEYS
    if unknown:
        raise RewriteRejected(f"proposal has unknown keys {sorted(unknown)}; expected {sorted(allowed)}. "
                              + REWRITE_FORMAT)
    if not isinstance(data.get("question"), str) or not data["question"].strip():
        raise RewriteRejected("proposal needs 'question', the new statement as a non-empty string. " + REWRITE_FORMAT)
    if not isinstance(data.get("tests"), list) or not data["tests"]:
        raise RewriteRejected("proposal needs 'tests', a non-empty list of {\"input\": ..., \"output\": ...}. "
                              + REWRITE_FORMAT)
    if len(data["tests"]) > _MAX_TESTS:
        raise RewriteRejected(f"proposal has {len(data['tests'])} tests; at most {_MAX_TESTS} are accepted")
    if data.get("solution") is not None and (not isinstance(data["solution"], str) or not data["solution"].strip()):
        raise RewriteRejected("'solution' must be a complete Python program as a string")
    if data.get("examples") is not None and not isinstance(data["examples"], list):
        raise RewriteRejected("'examples' must be a list of tests like 'tests'")
    return data


def _spec_test(form: str, test: Any, where: str) -> dict[str, str]:
    """A proposal's test in the spec's own shape, or ``RewriteRejected`` naming the test and the problem."""
    from rla_envs.code.tasks.formats import encode_value

    if not isinstance(test, Mapping):
        raise RewriteRejected(f"{where} must be an object like {{\"input\": ..., \"output\": ...}}, got {test!r:.80}")
    if len(json.dumps(test, default=str)) > 2 * _MAX_TEST_CHARS:
        raise RewriteRejected(f"{where} is longer than {2 * _MAX_TEST_CHARS} characters")
    if form == "stdio":
        if set(test) != {"input", "output"}:
            raise RewriteRejected(f"{where}: a stdio test is {{\"input\": text, \"output\": text}}, "
                                  f"got keys {sorted(test)}")
        stdin, stdout = (v if isinstance(v, str) else _as_text(v) for v in (test["input"], test["output"]))
        return {"stdin": stdin if stdin.endswith("\n") else stdin + "\n", "stdout": stdout}
    if set(test) == {"args", "expected"}:
        if not all(isinstance(test[k], str) for k in test):
            raise RewriteRejected(f"{where}: 'args' and 'expected' must be Python literals in strings")
        return {"args": test["args"], "expected": test["expected"]}
    if set(test) != {"input", "output"}:
        raise RewriteRejected(f"{where}: a function test is {{\"input\": [arguments], \"output\": value}}, "
                              f"got keys {sorted(test)}")
    args = test["input"]
    if not isinstance(args, list):
        raise RewriteRejected(f"{where}.input must be the list of positional arguments, e.g. [3] or [[1, 2], 4]; "
                              f"got {args!r:.80}")
    try:
        return {"args": encode_value(tuple(args)), "expected": encode_value(test["output"])}
    except InvalidTask as exc:
        raise RewriteRejected(f"{where}: {exc}") from None


def _as_text(value: Any) -> str:
    if isinstance(value, list):
        return " ".join(map(str, value))
    return str(value)


# --------------------------------------------------------------------------- the family

class CodeFamily:
    """Curriculum hooks for ``code`` tasks (see ``rla_envs.core.family.TaskFamily``).

    Validation runs the reference solution in a sandbox: ``backend`` and ``sandbox_options`` build one
    on first use (:func:`rla_envs.code.sandbox.make_sandbox`), or pass ``sandbox`` to share one.
    """

    name = "code"

    def __init__(self, *, backend: str = "local", sandbox_options: Mapping[str, Any] | None = None,
                 sandbox: Any = None):
        self.backend = backend
        self._sandbox_options = dict(sandbox_options or {})
        self._sandbox = sandbox

    @property
    def sandbox(self):
        """The sandbox that runs reference solutions (built on first use)."""
        if self._sandbox is None:
            from rla_envs.code.sandbox import make_sandbox

            self._sandbox = make_sandbox(self.backend, **self._sandbox_options)
        return self._sandbox

    # ----------------------------------------------------------------- describe
    def describe(self, task: Task) -> str:
        """The task for a rewrite prompt: statement, form, examples, tests, reference solution, answer format."""
        spec = task.spec
        form = spec["form"]
        hidden = [thaw(test) for test in spec.get("hidden_tests") or ()]
        lines = [f"Code task {task.id} ({form} form"
                 + (f", entry point {spec.get('signature') or spec['entry_point']}" if form == "function" else "")
                 + (f", level {task.meta['level']}" if "level" in task.meta else "") + ").",
                 f"Statement shown to the solver:\n{task.instruction}"]
        if spec.get("starter_code"):
            lines.append(f"Starter code:\n{spec['starter_code']}")
        lines.append(f"Public examples ({len(spec.get('public_tests') or ())}): "
                     f"{json.dumps([thaw(test) for test in spec.get('public_tests') or ()])}")
        lines.append(f"Hidden tests ({len(hidden)}; first 5 shown): {json.dumps(hidden[:5])}")
        if spec.get("host_check"):
            lines.append("The reward also comes from a trusted check function (not shown).")
        lines.append(f"Limits: {thaw(spec.get('limits') or {})} (defaults apply to the rest).")
        lines.append(f"Reference solution:\n{spec.get('reference_solution') or '(none)'}")
        lines.append(REWRITE_FORMAT)
        return "\n".join(lines)

    # ----------------------------------------------------------------- rewrite
    def apply_rewrite(self, task: Task, text: str) -> Task:
        """Parse an LLM proposal (see ``REWRITE_FORMAT``) into a validated new task, or raise ``RewriteRejected``."""
        proposal = _parse_proposal(text)
        form = task.spec["form"]
        spec = dict(thaw(task.spec))
        spec["hidden_tests"] = [_spec_test(form, t, f"tests[{i}]") for i, t in enumerate(proposal["tests"])]
        if proposal.get("examples") is not None:
            spec["public_tests"] = [_spec_test(form, t, f"examples[{i}]") for i, t in enumerate(proposal["examples"])]
        else:  # as many of the new tests as the task showed before, keeping at least one hidden-only test
            shown = min(len(spec.get("public_tests") or ()), len(spec["hidden_tests"]) - 1)
            spec["public_tests"] = spec["hidden_tests"][:max(shown, 0)]
        spec.pop("host_check", None)  # a trusted check of the old problem does not judge the new one
        if proposal.get("solution") is not None:
            spec["reference_solution"] = proposal["solution"]
        return self._derive(task, proposal["question"].strip(), spec, origin="rewritten",
                            meta={"rewrite": sorted(set(proposal) - _COMMENTARY_KEYS)})

    def _derive(self, task: Task, instruction: str, spec: dict[str, Any], *, origin: str, meta: dict) -> Task:
        """Build and validate the task made from ``spec``; any failure becomes ``RewriteRejected``."""
        try:
            new_task = task.derive(instruction=instruction, spec=spec, origin=origin, meta=meta)
            self.validate(new_task)
        except RewriteRejected:
            raise
        except InvalidTask as exc:
            raise RewriteRejected(f"the proposed task is not valid: {exc}") from None
        if new_task.id == task.id:
            raise RewriteRejected("the proposal changes nothing: the new task equals the old one")
        return new_task

    # ----------------------------------------------------------------- validate
    def validate(self, task: Task) -> None:
        """Raise ``InvalidTask`` unless the spec is sound, the reference solution passes every test twice
        with the same results, and the statement gives away no hidden expected output."""
        from rla_envs.code.grading import grade
        from rla_envs.code.tasks.formats import validate_code_task

        validate_code_task(task)
        solution = task.spec.get("reference_solution")
        if not solution:
            raise InvalidTask(f"task {task.id} has no reference solution, so it cannot be shown solvable")
        leaks = leaked_tests(task)
        if leaks:
            raise InvalidTask(f"task {task.id}: the statement gives away the expected output of hidden tests {leaks}")
        runs = []
        for attempt in (1, 2):
            result = grade(task, solution, self.sandbox, hidden=True)
            if result.total == 0 or result.passed != result.total:
                raise InvalidTask(f"task {task.id}: the reference solution passes {result.passed} of {result.total} "
                                  f"hidden tests (run {attempt}); first failure: {result.error}")
            runs.append([(o.index, o.passed, o.verdict, o.got) for o in result.per_test])
        if runs[0] != runs[1]:
            raise InvalidTask(f"task {task.id}: the reference solution gives different results on two runs; "
                              "its tests are not deterministic")
        if task.spec.get("public_tests"):
            public = grade(task, solution, self.sandbox, hidden=False)
            if public.passed != public.total:
                raise InvalidTask(f"task {task.id}: the reference solution fails public examples: {public.error}")

    # ----------------------------------------------------------------- mutate
    def mutate(self, task: Task, direction: str, rng: np.random.Generator, *,
               diagnoses: Sequence[str] = ()) -> Task:
        """An LLM-free edit making the task ``harder`` or ``easier`` (validated); ``RewriteRejected`` if none fits.

        Easier: reveal a hidden test as an example, add a hint (the next line of the reference solution),
        relax the limits (x2). Harder: hide an example, remove a hint, tighten the limits (/2).

        ``diagnoses`` (failure summaries) are accepted for the protocol and ignored: the edit is drawn from ``rng``.
        """
        if direction not in ("harder", "easier"):
            raise ValueError(f"direction must be 'harder' or 'easier', got {direction!r}")
        candidates = self._candidate_edits(task, direction)
        order = rng.permutation(len(candidates)) if candidates else []
        reasons = []
        for index in order:
            label, instruction, spec = candidates[int(index)]
            try:
                return self._derive(task, instruction, spec, origin="mutated", meta={"mutation": label})
            except RewriteRejected as exc:
                reasons.append(f"{label}: {exc}")
        raise RewriteRejected(f"no {direction} mutation of {task.id} is valid; tried: {reasons or 'none possible'}")

    def _candidate_edits(self, task: Task, direction: str) -> list[tuple[str, str, dict[str, Any]]]:
        spec = dict(thaw(task.spec))
        statement = task.instruction
        public = list(spec.get("public_tests") or [])
        hidden_only = [t for t in spec.get("hidden_tests") or [] if t not in public]
        edits: list[tuple[str, str, dict[str, Any]]] = []
        base, hints = _split_hints(statement)
        solution_lines = [line for line in (spec.get("reference_solution") or "").splitlines() if line.strip()]
        if direction == "easier":
            if hidden_only:
                edits.append(("reveal example", statement, {**spec, "public_tests": public + [hidden_only[0]]}))
            if hints < len(solution_lines) - 1:
                edits.append((f"hint {hints}->{hints + 1}", _with_hints(base, solution_lines, hints + 1), spec))
        else:
            if public:
                edits.append(("hide example", statement, {**spec, "public_tests": public[:-1]}))
            if hints > 0:
                edits.append((f"hint {hints}->{hints - 1}", _with_hints(base, solution_lines, hints - 1), spec))
        limits = _scaled_limits(spec, 2.0 if direction == "easier" else 0.5)
        if limits is not None:
            edits.append((f"limits {thaw(spec.get('limits') or {})}->{limits}", statement, {**spec, "limits": limits}))
        return edits


def _split_hints(statement: str) -> tuple[str, int]:
    """(statement without an added hint, number of solution lines the hint shows)."""
    base, marker, hint = statement.partition(HINT_MARKER)
    if not marker:
        return statement, 0
    body = hint.strip().removeprefix("```python").removesuffix("```").strip("\n")
    return base, len([line for line in body.splitlines() if line.strip()])


def _with_hints(base: str, solution_lines: list[str], count: int) -> str:
    if count == 0:
        return base
    return base + HINT_MARKER + "```python\n" + "\n".join(solution_lines[:count]) + "\n```"


def _scaled_limits(spec: Mapping[str, Any], factor: float) -> dict[str, float] | None:
    """The task's limits times ``factor`` within sane bounds, or None when nothing would change."""
    from rla_envs.code.tasks.formats import DEFAULT_LIMITS

    current = {**DEFAULT_LIMITS, **(spec.get("limits") or {})}
    scaled = {}
    for key, (low, high) in _LIMIT_RANGE.items():
        value = min(max(current[key] * factor, low), high)
        scaled[key] = int(value) if key == "memory_mb" else round(value, 3)
    return None if all(scaled[k] == current[k] for k in scaled) else scaled
