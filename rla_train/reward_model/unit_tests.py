"""The coding variant of the reward model: it writes unit tests, which run against the policy's programs.

    writer = UnitTestWriter(backend, tests_per_answer=4, samples=2)
    [tests] = writer.write([task])                       # GeneratedTest per test, valid or not (with why)
    passes = run_tests(task, programs, tests, sandbox)   # bool, programs x tests
    correct = program_correct(task, programs, sandbox)   # bool per program, on the task's real hidden tests

The writer asks for tests in a ```json block (stdio problems: ``[{"input": ..., "output": ...}]``,
function problems: ``[{"args": [...], "expected": ...}]``) and stores each valid one in the task's own
storage format (:mod:`rla_envs.code.tasks.formats`): ``{"stdin", "stdout"}`` or ``{"args": literal,
"expected": literal}`` text. JSON has no tuples, so a list is read as a tuple where the task's public
examples hold a tuple in that place. Bad JSON, a wrong shape or wrong types make an invalid test with
the reason; nothing the model writes raises. Tests run through :func:`rla_envs.code.grading.grade` on a
task derived with the generated tests as its hidden tests. The rewards computed from the pass matrix
live in :mod:`rla_train.signals.rewards`.

**A test that the empty program passes checks nothing**, and every program passes it, correct or not.
Such tests are invalid: an expected output that is empty once whitespace is ignored (stdio) or an
expected ``null`` (function form) is refused when the answer is read, and :func:`run_tests` first runs
programs that solve nothing (:func:`trivial_programs`: the empty program, or a function that returns
None) on the tests in the sandbox, and gives every test one of them passes a column of False
(:func:`trivially_passed`), whatever the grader's comparison would accept.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rla_envs.core.errors import InvalidTask
from rla_envs.core.task import Task, thaw
from rla_train.backends.base import SamplingParams

__all__ = ["DEFAULT_TEST_SAMPLING", "GeneratedTest", "UnitTestWriter", "unit_test_chat", "parse_tests",
           "run_tests", "program_correct", "trivial_programs", "trivially_passed"]

DEFAULT_TEST_SAMPLING = SamplingParams(max_new_tokens=512, temperature=1.0, top_p=1.0)
"""Sampling for test writing: temperature 1 so the samples for one problem differ."""
_MAX_FIELD_CHARS = 10_000  # longest stdin / stdout / literal accepted from the model


@dataclass(frozen=True)
class GeneratedTest:
    """One test written by the reward model, or the reason an answer (or part of it) is not a test.

    Attributes:
        test: the test in the task's storage format (``{"stdin", "stdout"}`` or ``{"args", "expected"}``
            literal text), None when invalid.
        valid: whether ``test`` can run.
        reason: why it is invalid (None when valid).
        sample: which of the ``samples`` answers for the task it came from.
        answer: that answer's full text (shared by the tests read from it).
    """

    __test__ = False  # not a pytest class

    test: dict[str, str] | None
    valid: bool
    reason: str | None
    sample: int
    answer: str = field(default="", repr=False)


def unit_test_chat(task: Task, tests_per_answer: int) -> list[dict[str, str]]:
    """The chat asking for ``tests_per_answer`` input/output tests of ``task`` in a ```json block."""
    from rla_envs.code.env import problem_text

    if task.spec.get("form") == "stdio":
        shape = ('[{"input": "<text on standard input>", "output": "<exact text the program prints>"}, ...]\n'
                 'Both values are JSON strings; use \\n for line breaks.')
    else:
        entry = task.spec.get("entry_point", "solve")
        shape = (f'[{{"args": [<argument 1>, <argument 2>, ...], "expected": <value {entry}(*args) returns>}}, ...]\n'
                 f'"args" is the JSON list of positional arguments of {entry}; values are JSON values.')
    problem = problem_text(task).replace("Answer with the complete Python program in a ```python code block.", "")
    return [{"role": "system", "content": "You write unit tests for programming problems. Your tests must be "
                                          "correct for every correct solution and catch wrong ones."},
            {"role": "user", "content": f"Problem:\n{problem.strip()}\n\nWrite {tests_per_answer} new unit tests "
                                        f"that check correctness, including edge cases. Work out each expected "
                                        f"answer carefully. Answer with one ```json block holding a list:\n{shape}"}]


class UnitTestWriter:
    """Asks a model for unit tests of code problems: ``samples`` answers per task, in one generate call.

    Args:
        backend: any :class:`~rla_train.backends.base.GenerationBackend`.
        tests_per_answer: tests asked for in each answer; extra tests in an answer are ignored.
        samples: answers per task.
        sampling: sampling for the writer (default :data:`DEFAULT_TEST_SAMPLING`).
    """

    def __init__(self, backend, *, tests_per_answer: int = 4, samples: int = 2,
                 sampling: SamplingParams | None = None):
        if not callable(getattr(backend, "generate", None)):
            raise TypeError(f"backend must be a generation backend with generate(prompts, n, sampling), got "
                            f"{type(backend).__name__}; build one with rla_train.backends")
        for name, value in (("tests_per_answer", tests_per_answer), ("samples", samples)):
            if type(value) is not int or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        if sampling is not None and not isinstance(sampling, SamplingParams):
            raise TypeError(f"sampling must be a SamplingParams, got {type(sampling).__name__}")
        self.backend = backend
        self.tests_per_answer = tests_per_answer
        self.samples = samples
        self.sampling = sampling or DEFAULT_TEST_SAMPLING

    def write(self, tasks: Task | Sequence[Task]) -> list[list[GeneratedTest]]:
        """Per task, the tests read from its ``samples`` answers (an answer with none gives one invalid entry)."""
        tasks = [tasks] if isinstance(tasks, Task) else list(tasks)
        for index, task in enumerate(tasks):
            if not isinstance(task, Task) or task.family != "code":
                raise ValueError(f"tasks[{index}] must be a code Task, got "
                                 f"{getattr(task, 'family', type(task).__name__)!r}")
        if not tasks:
            return []
        generations = self.backend.generate([unit_test_chat(task, self.tests_per_answer) for task in tasks],
                                            n=self.samples, sampling=self.sampling)
        if len(generations) != len(tasks):
            raise RuntimeError(f"backend returned {len(generations)} generations for {len(tasks)} prompts; "
                               "a backend must return one per prompt")
        return [[test for index, sample in enumerate(generation.samples)
                 for test in parse_tests(task, sample.text, sample=index, limit=self.tests_per_answer)]
                for task, generation in zip(tasks, generations)]


# --------------------------------------------------------------------------- parsing

_FENCE = re.compile(r"```[ \t]*([\w+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)


def parse_tests(task: Task, answer: str, *, sample: int = 0, limit: int | None = None) -> list[GeneratedTest]:
    """The tests in one answer, each valid (storage format) or invalid with the reason; never raises."""
    if not isinstance(answer, str):
        return [GeneratedTest(None, False, f"the answer is not text ({type(answer).__name__})", sample)]
    items, problem = _json_list(answer)
    if items is None:
        return [GeneratedTest(None, False, problem, sample, answer)]
    if not items:
        return [GeneratedTest(None, False, "the JSON list of tests is empty", sample, answer)]
    tests = []
    for index, item in enumerate(items[:limit] if limit else items):
        try:
            stored = _stored_test(task, item)
        except InvalidTask as exc:
            tests.append(GeneratedTest(None, False, f"test {index}: {exc}", sample, answer))
        else:
            tests.append(GeneratedTest(stored, True, None, sample, answer))
    return tests


def _json_list(answer: str) -> tuple[list | None, str]:
    """The list of tests in ``answer``: the last ```json block that parses, else other blocks, else a bare ``[...]``."""
    blocks = [(lang.lower(), body) for lang, body in _FENCE.findall(answer)]
    candidates = [body for lang, body in reversed(blocks) if lang == "json"]
    candidates += [body for lang, body in reversed(blocks) if lang != "json"]
    start, end = answer.find("["), answer.rfind("]")
    if not blocks and 0 <= start < end:  # no code block: the outermost [...] of the text
        candidates.append(answer[start:end + 1])
    if not candidates:
        return None, "no ```json block (or JSON list) in the answer"
    error = ""
    for text in candidates:
        try:
            value = json.loads(text)
        except (ValueError, RecursionError) as exc:
            error = error or f"bad JSON: {exc}"[:200]
            continue
        if isinstance(value, Mapping) and isinstance(value.get("tests"), list):
            value = value["tests"]
        if isinstance(value, list):
            return value, ""
        error = error or f"expected a JSON list of tests, got {type(value).__name__}"
    return None, error


def _stored_test(task: Task, item: Any) -> dict[str, str]:
    """One model-written test in the task's storage format; ``InvalidTask`` with the reason when it is not one."""
    from rla_envs.code.grading import normalize_stdout
    from rla_envs.code.tasks.formats import encode_value

    if not isinstance(item, Mapping):
        raise InvalidTask(f"a test must be a JSON object, got {type(item).__name__}")
    if task.spec.get("form") == "stdio":
        stdin, stdout = item.get("input", item.get("stdin")), item.get("output", item.get("stdout"))
        if not isinstance(stdin, str) or not isinstance(stdout, str):
            raise InvalidTask(f"a stdio test is {{\"input\": string, \"output\": string}}, got {_short(item)}")
        if len(stdin) > _MAX_FIELD_CHARS or len(stdout) > _MAX_FIELD_CHARS:
            raise InvalidTask(f"input/output over {_MAX_FIELD_CHARS} characters")
        if not normalize_stdout(stdout):
            raise InvalidTask(f"the expected output {stdout!r} is empty once whitespace is ignored: a program that "
                              "prints nothing passes it; a test must expect some output")
        return {"stdin": stdin, "stdout": stdout}
    if "args" not in item or "expected" not in item:
        raise InvalidTask(f"a function test is {{\"args\": [...], \"expected\": value}}, got keys {sorted(item)}")
    args = item["args"]
    if not isinstance(args, list):
        raise InvalidTask(f"\"args\" must be a JSON list of positional arguments, got {_short(args)}")
    args_hint, expected_hint = _public_shapes(task)
    args = tuple(_as_tuple_if(value, len(args_hint) > i and args_hint[i]) for i, value in enumerate(args))
    if item["expected"] is None:
        raise InvalidTask("\"expected\" is null: a function that returns nothing passes it; a test must expect a "
                          "value")
    expected = _as_tuple_if(item["expected"], expected_hint)
    stored = {"args": encode_value(args), "expected": encode_value(expected)}
    if max(map(len, stored.values())) > _MAX_FIELD_CHARS:
        raise InvalidTask(f"args/expected over {_MAX_FIELD_CHARS} characters")
    return stored


def _public_shapes(task: Task) -> tuple[list[bool], bool]:
    """Which argument positions, and whether the result, are tuples in the task's public examples."""
    from rla_envs.code.tasks.formats import task_tests

    try:
        examples = task_tests(task, hidden=False)
    except InvalidTask:
        return [], False
    if not examples:
        return [], False
    width = min(len(test.args) for test in examples)
    args = [all(isinstance(test.args[i], tuple) for test in examples) for i in range(width)]
    return args, all(isinstance(test.expected, tuple) for test in examples)


def _as_tuple_if(value: Any, tuple_expected: bool) -> Any:
    return tuple(value) if tuple_expected and isinstance(value, list) else value


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


# --------------------------------------------------------------------------- running

def _program(answer: Any) -> str | None:
    """The runnable program in a policy answer (fenced or raw), or None when there is none."""
    from rla_envs.code.answer import extract_program

    extracted = extract_program(answer)
    return extracted.program if extracted.problem is None and extracted.program else None


def _tests_task(task: Task, tests: Sequence[Mapping[str, str]]) -> Task:
    """``task`` with ``tests`` as its hidden tests, no public tests and no host check."""
    spec = dict(thaw(task.spec))
    spec.pop("host_check", None)
    spec["public_tests"] = []
    spec["hidden_tests"] = [dict(test) for test in tests]
    return Task(family=task.family, instruction=task.instruction, spec=spec, parent=task.id,
                origin="generated", meta=dict(thaw(task.meta)))


def _runnable(task: Task, test: GeneratedTest | Mapping[str, str]) -> dict[str, str] | None:
    """The storage-format test, or None when it is invalid or does not fit the task's form."""
    from rla_envs.code.tasks.formats import validate_code_spec

    stored = test.test if isinstance(test, GeneratedTest) else test
    if stored is None or not isinstance(stored, Mapping) or isinstance(test, GeneratedTest) and not test.valid:
        return None
    try:
        validate_code_spec({**{k: v for k, v in thaw(task.spec).items() if k in ("form", "entry_point")},
                            "hidden_tests": [dict(stored)]})
    except InvalidTask:
        return None
    return dict(stored)


def trivial_programs(task: Task) -> list[str]:
    """Programs that solve nothing: stdio form, the empty program (prints nothing); function form, a function returning None.

    (In function form the empty program defines no function, so it fails every test by construction.)
    """
    if task.spec.get("form") == "stdio":
        return [""]
    return [f"def {task.spec.get('entry_point', 'solve')}(*args, **kwargs):\n    return None\n"]


def _runnable_columns(task: Task, tests: Sequence[GeneratedTest | Mapping[str, str]]) -> list[tuple[int, dict]]:
    """``(column, storage-format test)`` of every test that can run on ``task``."""
    return [(column, stored) for column, test in enumerate(tests) if (stored := _runnable(task, test)) is not None]


def trivially_passed(task: Task, tests: Sequence[GeneratedTest | Mapping[str, str]], sandbox) -> np.ndarray:
    """Which tests a program that solves nothing passes (bool per test): tests that check nothing.

    Each of :func:`trivial_programs` is graded on the runnable tests in ``sandbox``, as :func:`run_tests`
    grades the policy's programs; a test one of them passes is True. Invalid tests are False.
    """
    from rla_envs.code.grading import grade

    passed = np.zeros(len(tests), dtype=bool)
    runnable = _runnable_columns(task, tests)
    if not runnable:
        return passed
    derived = _tests_task(task, [stored for _, stored in runnable])
    for program in trivial_programs(task):
        for outcome in grade(derived, program, sandbox).per_test:
            passed[runnable[outcome.index][0]] |= outcome.passed
    return passed


def run_tests(task: Task, programs: Sequence[str], tests: Sequence[GeneratedTest | Mapping[str, str]],
              sandbox) -> np.ndarray:
    """Which program passes which test: a bool array ``programs x tests``.

    ``programs`` are programs or policy answers holding one (read as the env reads them); ``tests`` are
    :class:`GeneratedTest` or storage-format dicts. An invalid test, a test that a program solving
    nothing passes (:func:`trivially_passed`), or an answer with no runnable program gives a column / row
    of False. Each program is graded once on the remaining tests with
    :func:`rla_envs.code.grading.grade` in ``sandbox``.
    """
    from rla_envs.code.grading import grade

    passes = np.zeros((len(programs), len(tests)), dtype=bool)
    if not len(programs):
        return passes
    vacuous = trivially_passed(task, tests, sandbox)
    runnable = [(column, stored) for column, stored in _runnable_columns(task, tests) if not vacuous[column]]
    if not runnable:
        return passes
    derived = _tests_task(task, [stored for _, stored in runnable])
    columns = [column for column, _ in runnable]
    for row, answer in enumerate(programs):
        program = _program(answer)
        if program is None:
            continue
        result = grade(derived, program, sandbox)
        for outcome in result.per_test:
            passes[row, columns[outcome.index]] = outcome.passed
    return passes


def program_correct(task: Task, programs: Sequence[str], sandbox) -> np.ndarray:
    """Whether each program passes every real hidden test of ``task`` (or its host check): bool per program."""
    from rla_envs.code.grading import grade

    correct = np.zeros(len(programs), dtype=bool)
    for row, answer in enumerate(programs):
        program = _program(answer)
        if program is not None:
            result = grade(task, program, sandbox)
            correct[row] = result.total > 0 and result.passed == result.total
    return correct
