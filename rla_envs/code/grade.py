"""Grade one program against one code task from the command line, printing one JSON line.

    python -m rla_envs.code.grade --task bundled:fizzbuzz --solution my.py
    python -m rla_envs.code.grade --task ../shared/sandbox-attacks/task.json --solution good_solution.py
    python -m rla_envs.code.grade --task task.json --solution sol.py --form stdio --backend docker

``--task`` is a task id (``bundled:<name>``, ``humaneval:HumanEval/<n>``, any id a loader knows) or a task
JSON file: a Task dict (``Task.to_dict()``) or a task in the sandbox-attacks layout (``statement``,
``forms``, ``hidden_tests``), whose form ``--form`` picks. The program is graded on the hidden tests; the
output is ``{"reward": ..., "passed": ..., "total": ..., "timed_out": ..., "error": ...}``.
Exit status: 0 when graded (whatever the reward), 2 when the task, the solution or the sandbox could not
be set up (the reason goes to stderr).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rla_envs.core.errors import RlaError
from rla_envs.core.task import Task

__all__ = ["main", "resolve_task"]


def resolve_task(ref: str, *, form: str | None = None) -> Task:
    """The code task named by ``ref``: a task id, or a JSON file (Task dict or sandbox-attacks layout)."""
    from rla_envs.code.tasks import load_task

    if ref.endswith(".json") and not Path(ref).is_file():
        raise FileNotFoundError(f"task file {ref!r} does not exist")
    return load_task(ref, form)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m rla_envs.code.grade", description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", required=True,
                        help="task id (bundled:fizzbuzz, humaneval:HumanEval/12) or task JSON file")
    parser.add_argument("--solution", required=True,
                        help="file holding the program (or an answer with a ```python block)")
    parser.add_argument("--backend", default="local", help="sandbox backend: local (default) or docker")
    parser.add_argument("--form", choices=("function", "stdio"), default=None,
                        help="for task files with several forms (sandbox-attacks): which one to grade (function)")
    parser.add_argument("--unsafe", action="store_true",
                        help="local backend only: run without confinement on a machine that cannot confine")
    return parser


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit status."""
    from rla_envs.code.answer import extract_program
    from rla_envs.code.grading import GradeResult, grade

    args = _parser().parse_args(argv)
    try:
        task = resolve_task(args.task, form=args.form)
    except (RlaError, OSError, ValueError, KeyError) as exc:
        return _fail(f"cannot load task {args.task!r}: {exc}")
    try:
        answer = Path(args.solution).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return _fail(f"cannot read solution {args.solution!r}: {exc}")
    try:
        sandbox = _make_sandbox(args.backend, unsafe=args.unsafe)
    except (RlaError, ImportError, ValueError, OSError) as exc:
        return _fail(f"cannot start the {args.backend!r} sandbox: {exc}")
    try:
        extracted = extract_program(answer)
        if not extracted.ok:
            result = GradeResult(0.0, 0, len(task.spec.get("hidden_tests") or ()) or 1, False, extracted.problem)
        else:
            result = grade(task, extracted.program, sandbox, hidden=True)
    finally:
        sandbox.close()
    print(json.dumps(result.summary()))
    return 0


def _make_sandbox(backend: str, *, unsafe: bool):
    """The sandbox for ``backend``, or an error naming what is missing (docker SDK, socket, backend)."""
    from rla_envs.code.sandbox import BACKENDS, make_sandbox

    if backend == "docker" and "docker" not in BACKENDS:
        raise ValueError("the docker backend is not part of this installation yet (known backends: "
                         f"{sorted(BACKENDS)}); use --backend local")
    if backend == "docker":
        try:
            import docker  # noqa: F401
        except ImportError:
            raise ImportError("the docker backend needs the docker SDK: pip install \"rla[docker]\"; and a Docker-API "
                              "socket (DOCKER_HOST, e.g. podman system service)") from None
    options = {"unsafe": True} if unsafe else {}
    if unsafe and backend != "local":
        raise ValueError("--unsafe applies to the local backend only")
    return make_sandbox(backend, **options)


if __name__ == "__main__":
    sys.exit(main())
