"""CodeEnv: write a program that passes hidden tests, run in a sandbox and graded on the host (``rla/Code-v0``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rla_envs.code.answer import MAX_PROGRAM_CHARS, extract_program
from rla_envs.core.env import TaskEnv, Transition
from rla_envs.core.errors import ResetNeeded
from rla_envs.core.spaces import is_printable_text
from rla_envs.core.task import Task, thaw

__all__ = ["CodeEnv", "problem_text", "load_source", "MODES", "DEFAULT_MAX_ATTEMPTS"]

MODES = ("single", "multi")
DEFAULT_MAX_ATTEMPTS = 3
"""Submissions per episode in multi-turn mode when ``max_attempts`` is not given."""
_LIMIT_KEYS = ("timeout_s", "memory_mb")
_SHOWN_CHARS = 300  # how much of a public test's input/output the feedback shows


def load_source(source: str, *, levels: Sequence[int] | None = None) -> list[Task]:
    """The tasks of a source: ``"bundled"`` (optionally only some ``levels``), ``"humaneval"`` or a JSONL path."""
    from rla_envs.code.tasks import load_tasks

    if levels is None:
        return load_tasks(source)
    if source != "bundled":
        raise ValueError(f"levels apply to the bundled problems only, not to source={source!r}")
    from rla_envs.code.tasks.bundled import bundled_tasks

    return [task for level in levels for task in bundled_tasks(level)]


def problem_text(task: Task, *, examples: bool = True) -> str:
    """The problem as the agent reads it: statement, signature or starter code, and the public examples."""
    spec = task.spec
    parts = [task.instruction.strip()]
    if spec.get("form") == "function":
        if spec.get("starter_code") and spec["starter_code"].strip() in task.instruction:
            pass  # the statement already holds the code to complete (HumanEval)
        elif spec.get("starter_code"):
            parts.append(f"Complete this code:\n```python\n{spec['starter_code'].rstrip()}\n```")
        elif spec.get("signature"):
            parts.append(f"Define the function `{spec['signature']}`.")
        else:
            parts.append(f"Define a function named `{spec['entry_point']}`.")
    else:
        parts.append("Write a complete program that reads standard input and writes the answer to standard output.")
    public = list(spec.get("public_tests") or ())
    if examples and public:
        lines = ["Examples:"]
        for index, test in enumerate(public, 1):
            lines.append(_describe_test(spec, test, index))
        parts.append("\n".join(lines))
    parts.append("Answer with the complete Python program in a ```python code block.")
    return "\n\n".join(parts)


def _describe_test(spec: Mapping[str, Any], test: Mapping[str, Any], index: int) -> str:
    if spec.get("form") == "function":
        args = str(test["args"])
        call_args = args[1:-1].rstrip(",") if args.startswith("(") and args.endswith(")") else args
        return f"{index}. {spec['entry_point']}({_clip(call_args)}) returns {_clip(test['expected'])}"
    return f"{index}. Input:\n{_clip(test['stdin']).rstrip()}\n   Output:\n{_clip(test['stdout']).rstrip()}"


def _clip(text: Any) -> str:
    text = str(text)
    return text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS] + "..."


class CodeEnv(TaskEnv):
    """Programming problems: read the statement, submit a Python program, pass the hidden tests.

    ## Description
    Each task is a code problem (``rla_envs.code.tasks``): a function to write (an entry point called
    with arguments, its return value compared with exact types) or a stdio program (stdin in, stdout
    compared after stripping whitespace). Programs run in a sandbox (``rla_envs.code.sandbox``); expected
    outputs stay on the host, where :func:`rla_envs.code.grading.grade` compares the results.

    ## Action Space
    ``PrintableText`` up to ``max_action_length`` characters: the program, or a longer answer holding it in
    a fenced code block (the last compiling ```python block is taken; see ``rla_envs.code.answer``).
    An answer with no program that compiles (empty, prose, a syntax error, over the length limit, not
    text) is not run: the observation says what was wrong, ``info["invalid_action"]`` is True, and it
    still uses up the attempt.

    ## Observation Space
    ``PrintableText``: after reset, the problem (statement, signature or starter code, public examples);
    after a step, the verdict — in multi-turn mode with feedback from the **public** tests only (input,
    expected and actual output, errors, timeouts). Hidden tests are never shown, only counted in ``info``.

    ## Rewards
    1.0 on the submission that passes every hidden test (or the task's host check), else 0.0.

    ## Starting State
    ``reset(options={"task": Task | dict | id})`` plays that task; without one, a task is drawn from the task
    set with ``self.np_random`` (same seed, same task).

    ## Episode End
    Single-turn mode (default): terminated after the one submission. Multi-turn mode: terminated when a
    submission passes, or when ``max_attempts`` submissions have failed. Never truncated.

    ## Info
    The base keys (``task_id``, ``instruction``, ``won``, ``step``, ``invalid_action``) and ``mode``,
    ``attempt`` (submissions so far), ``attempts_left``, ``passed``/``total`` (hidden tests),
    ``hidden_tests`` (``{"passed", "total", "verdicts"}`` — counts only), ``public_tests`` (per-test
    dicts with ``index``, ``passed``, ``verdict``, ``input``, ``expected``, ``got``, ``error``, ``seconds``;
    multi-turn feedback only, else None), ``timed_out``, ``error`` (a short reason, never a hidden
    test's content) and ``program_source`` (``fenced``, ``raw`` or ``none``).

    ## Expert
    ``expert_action()`` returns the task's reference solution (None when it has none).

    ## Arguments
    * ``tasks``: tasks to play instead of the default set (Task, dicts or a task set from a loader).
    * ``source``: the default set: ``"bundled"`` (default), ``"humaneval"`` or a path to a JSONL file.
    * ``levels``: bundled difficulty levels to keep (default all).
    * ``mode``: ``"single"`` (default) or ``"multi"``; ``max_attempts``: submissions in multi-turn mode (3).
    * ``backend``: sandbox backend for :func:`rla_envs.code.sandbox.make_sandbox` (``"local"``);
      ``sandbox_options``: its keyword arguments; ``sandbox``: a ready sandbox to use instead (not closed
      by the env).
    * ``limits``: ``{"timeout_s": ..., "memory_mb": ...}`` overriding every task's own limits.
    * ``max_action_length`` (100,000), ``render_mode`` (``"ansi"`` or ``"human"``).

    ## Version History
    * v0: initial version.
    """

    family = "code"

    def __init__(
        self,
        tasks: Iterable[Task | Mapping[str, Any]] | None = None,
        *,
        source: str = "bundled",
        levels: Sequence[str] | None = None,
        mode: str = "single",
        max_attempts: int | None = None,
        backend: str = "local",
        sandbox_options: Mapping[str, Any] | None = None,
        sandbox: Any = None,
        limits: Mapping[str, float] | None = None,
        max_action_length: int = MAX_PROGRAM_CHARS,
        render_mode: str | None = None,
    ):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        if max_attempts is None:
            max_attempts = 1 if mode == "single" else DEFAULT_MAX_ATTEMPTS
        if type(max_attempts) is not int or max_attempts < 1:
            raise ValueError(f"max_attempts must be an int >= 1, got {max_attempts!r}")
        if mode == "single" and max_attempts != 1:
            raise ValueError(f"single-turn mode allows one submission, got max_attempts={max_attempts}; "
                             "pass mode='multi' for several")
        self.limits = _check_limits(limits)
        if levels is not None and source != "bundled":
            raise ValueError(f"levels apply to the bundled problems only, not to source={source!r}")
        super().__init__(tasks, max_steps=max_attempts, max_action_length=max_action_length,
                         render_mode=render_mode)
        self.mode = mode
        self.max_attempts = max_attempts
        self.source = source
        self.levels = None if levels is None else list(levels)
        self.backend = backend
        self._sandbox_options = dict(sandbox_options or {})
        self._sandbox = sandbox
        self._owns_sandbox = sandbox is None
        self._attempts = 0
        self._last: dict[str, Any] = {}

    # ----------------------------------------------------------------- family API
    def default_tasks(self) -> Sequence[Task]:
        """The tasks of ``source`` (bundled problems by default), filtered by ``levels``."""
        return load_source(self.source, levels=self.levels)

    def _begin(self, task: Task) -> tuple[str, dict[str, Any]]:
        from rla_envs.code.tasks.formats import validate_code_task

        validate_code_task(task)
        self._attempts = 0
        self._last = {}
        return _printable(problem_text(task)), self._current_info()

    def _action_problem(self, action: Any) -> str | None:
        return None  # every action is a submission, judged in _play (an unusable one still ends single-turn)

    def _play(self, action: Any) -> Transition:
        self._attempts += 1
        out_of_attempts = self._attempts >= self.max_attempts
        problem = self._unusable(action)
        extracted = None
        if problem is None:
            extracted = extract_program(action, max_chars=self.max_action_length)
            problem = extracted.problem
        if problem is not None:
            self._last = {"program_source": extracted.source if extracted else "none", "error": problem}
            return Transition(_printable(self._feedback_invalid(problem, out_of_attempts)), lost=out_of_attempts,
                              invalid_action=True, info=self._current_info())
        return self._submit(extracted.program, extracted.source, out_of_attempts)

    def _current_info(self) -> dict[str, Any]:
        info = {
            "mode": self.mode,
            "attempt": self._attempts,
            "attempts_left": self.max_attempts - self._attempts,
            "passed": 0,
            "total": 0,
            "hidden_tests": None,
            "public_tests": None,
            "timed_out": False,
            "error": None,
            "program_source": None,
        }
        info.update(self._last)
        return info

    # ----------------------------------------------------------------- grading
    def _unusable(self, action: Any) -> str | None:
        if not isinstance(action, str):
            return f"the answer must be text (a Python program), got {type(action).__name__}"
        if len(action) > self.max_action_length:
            return (f"the answer is {len(action)} characters long, over the limit of {self.max_action_length}; "
                    "submit only the program")
        if not is_printable_text(action):
            return "the answer contains control characters; submit plain program text"
        return None

    def _submit(self, program: str, source: str, out_of_attempts: bool) -> Transition:
        from rla_envs.code.grading import grade

        task = self._graded_task()
        hidden = grade(task, program, self.sandbox, hidden=True)
        won = hidden.total > 0 and hidden.passed == hidden.total
        verdicts: dict[str, int] = {}
        for outcome in hidden.per_test:
            verdicts[outcome.verdict] = verdicts.get(outcome.verdict, 0) + 1
        public = None
        if self.mode == "multi" and not won and task.spec.get("public_tests"):
            public = grade(task, program, self.sandbox, hidden=False)
        self._last = {
            "passed": hidden.passed,
            "total": hidden.total,
            "hidden_tests": {"passed": hidden.passed, "total": hidden.total, "verdicts": verdicts},
            "public_tests": None if public is None else [self._public_outcome(o) for o in public.per_test],
            "timed_out": hidden.timed_out or bool(public and public.timed_out),
            "error": self._error_summary(hidden, public, verdicts),
            "program_source": source,
        }
        if won:
            observation = "Accepted: your program passes every test."
        elif self.mode == "single":
            observation = "Not accepted: your program fails some of the hidden tests."
        else:
            observation = self._feedback_failed(public, out_of_attempts)
        return Transition(_printable(observation), won=won, lost=not won and out_of_attempts,
                          info=self._current_info())

    def _public_outcome(self, outcome) -> dict[str, Any]:
        test = self.task.spec["public_tests"][outcome.index]
        shown_input = test["args"] if "args" in test else test["stdin"]
        return {"index": outcome.index, "passed": outcome.passed, "verdict": outcome.verdict,
                "input": _clip(shown_input), "expected": outcome.expected, "got": outcome.got,
                "error": outcome.error, "seconds": round(float(outcome.seconds), 4)}

    @staticmethod
    def _error_summary(hidden, public, verdicts: dict[str, int]) -> str | None:
        """A short reason for a failure: the first public error, else the hidden verdict counts (no content)."""
        if public is not None and public.error:
            return f"public {public.error}"
        failed = {v: n for v, n in verdicts.items() if v != "passed"}
        if failed:
            return "hidden tests: " + ", ".join(f"{n} {v}" for v, n in sorted(failed.items()))
        if hidden.total == 0:
            return "the task has no hidden tests"
        return None

    def _feedback_failed(self, public, out_of_attempts: bool) -> str:
        lines = [f"Attempt {self._attempts} of {self.max_attempts} was not accepted."]
        if public is None:
            lines.append("Your program fails some hidden tests (this task shows no public examples).")
        else:
            lines.append(f"Public examples: {public.passed} of {public.total} passed.")
            for item in self._last["public_tests"]:
                lines.append(_describe_outcome(item))
            if public.passed == public.total:
                lines.append("Your program passes every public example but fails some hidden tests.")
        lines.append(self._closing(out_of_attempts))
        return "\n".join(lines)

    def _feedback_invalid(self, problem: str, out_of_attempts: bool) -> str:
        return f"Invalid answer: {problem}.\n{self._closing(out_of_attempts)}"

    def _closing(self, out_of_attempts: bool) -> str:
        if out_of_attempts:
            return "No attempts left."
        left = self.max_attempts - self._attempts
        return f"{left} attempt{'s' if left != 1 else ''} left: submit the corrected program."

    def _graded_task(self) -> Task:
        """The running task, with the env's ``limits`` applied."""
        task = self.task
        if not self.limits:
            return task
        spec = dict(thaw(task.spec))
        spec["limits"] = {**(spec.get("limits") or {}), **self.limits}
        return Task(family=task.family, instruction=task.instruction, spec=spec, parent=task.parent,
                    origin=task.origin, meta=task.meta, id=task.id)

    @property
    def sandbox(self):
        """The sandbox that runs submissions (built from ``backend`` on first use)."""
        if self._sandbox is None:
            from rla_envs.code.sandbox import make_sandbox

            self._sandbox = make_sandbox(self.backend, **self._sandbox_options)
        return self._sandbox

    # ----------------------------------------------------------------- expert
    def expert_action(self) -> str | None:
        """The task's reference solution (None when the task has none)."""
        if self.task is None:
            raise ResetNeeded("CodeEnv has no task running; call env.reset() first")
        return self.task.spec.get("reference_solution")

    def close(self):
        if self._owns_sandbox and self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None
        super().close()


def _describe_outcome(item: Mapping[str, Any]) -> str:
    head = f"Example {item['index'] + 1}: {item['verdict'].replace('_', ' ')}"
    if item["passed"]:
        return head
    parts = [head, f"  input: {item['input']}"]
    if item["expected"] is not None:
        parts.append(f"  expected: {item['expected']}")
    if item["got"] is not None:
        parts.append(f"  got: {item['got']}")
    if item["error"]:
        parts.append(f"  error: {_clip(item['error'])}")
    return "\n".join(parts)


def _printable(text: str) -> str:
    """``text`` with every control character but newline and tab escaped (program output can hold any)."""
    if is_printable_text(text):
        return text
    return "".join(ch if ch.isprintable() or ch in "\n\t" else ascii(ch)[1:-1] for ch in text)


def _check_limits(limits: Mapping[str, float] | None) -> dict[str, float]:
    if not limits:
        return {}
    unknown = set(limits) - set(_LIMIT_KEYS)
    if unknown:
        raise ValueError(f"limits may set {list(_LIMIT_KEYS)}, got unknown keys {sorted(unknown)}")
    for key, value in limits.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise ValueError(f"limits[{key!r}] must be a positive number, got {value!r}")
    return dict(limits)
