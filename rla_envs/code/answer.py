"""Reading the program out of a model's answer: a fenced code block in a longer text, or the raw text."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["ExtractedProgram", "extract_program", "MAX_PROGRAM_CHARS"]

MAX_PROGRAM_CHARS = 100_000
"""Longest program accepted (characters); a longer answer is refused before it is parsed or executed."""

# A fence opens a line with three or more backticks or tildes, optionally followed by a language tag;
# it closes with the same character repeated at least as many times. An unclosed fence at the end of the
# answer (a generation cut by its token limit) runs to the end of the text.
_FENCE_OPEN = re.compile(r"^[ \t]*(?P<fence>`{3,}|~{3,})[ \t]*(?P<lang>[\w+.#-]*)[^\n]*$", re.MULTILINE)
_PYTHON_TAGS = frozenset({"python", "python3", "py", "py3", "python2", "pycon", "ipython"})
_OTHER_TAGS = frozenset({"json", "text", "txt", "plaintext", "output", "console", "bash", "sh", "shell",
                         "input", "stdin", "stdout", "yaml", "toml", "markdown", "md", "diff", "xml", "html"})


@dataclass(frozen=True)
class ExtractedProgram:
    """A program read from an answer, how it was found, and why it cannot run (``problem``), if it cannot.

    Attributes:
        program: the program text ('' when none was found).
        source: ``"fenced"`` (taken from a code block), ``"raw"`` (the whole answer) or ``"none"``.
        problem: None for a program that compiles; else a sentence for the agent (empty answer,
            no code, syntax error with its line, too long).
    """

    program: str
    source: str
    problem: str | None = None

    @property
    def ok(self) -> bool:
        """True when the program can be submitted to the sandbox."""
        return self.problem is None


def _fenced_blocks(answer: str) -> list[tuple[str, str]]:
    """Every fenced block in ``answer`` as ``(language tag in lower case, body)``, in order."""
    blocks: list[tuple[str, str]] = []
    position = 0
    while True:
        opening = _FENCE_OPEN.search(answer, position)
        if opening is None:
            return blocks
        fence = opening.group("fence")
        closing = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", re.MULTILINE)
        body_start = opening.end() + 1
        close = closing.search(answer, body_start) if body_start <= len(answer) else None
        body_end = close.start() if close else len(answer)
        blocks.append((opening.group("lang").lower(), answer[body_start:body_end]))
        position = close.end() if close else len(answer)


def _syntax_problem(program: str) -> str | None:
    """None if ``program`` compiles as Python, else the error as a sentence (never raises)."""
    try:
        compile(program, "<solution>", "exec", dont_inherit=True)
    except SyntaxError as exc:
        where = f" on line {exc.lineno}" if exc.lineno else ""
        return f"the program does not compile: {exc.msg}{where}"
    except (ValueError, MemoryError, RecursionError, OverflowError) as exc:  # null bytes, absurd nesting
        return f"the program does not compile: {type(exc).__name__}: {exc}"
    return None


def _choose_block(blocks: list[tuple[str, str]]) -> str | None:
    """The block holding the solution: the last compiling Python block, else the last likely-code block."""
    python = [body for lang, body in blocks if lang in _PYTHON_TAGS and body.strip()]
    untagged = [body for lang, body in blocks if lang not in _PYTHON_TAGS | _OTHER_TAGS and body.strip()]
    for candidates in (python, untagged):
        compiling = [body for body in candidates if _syntax_problem(body) is None]
        if compiling:
            # A final short snippet ("call it like `solve(3)`") should not shadow the full solution.
            longest = max(len(body.strip()) for body in compiling)
            return next(body for body in reversed(compiling) if len(body.strip()) * 4 >= longest)
        if candidates:
            return candidates[-1]
    return None


def extract_program(answer: object, *, max_chars: int = MAX_PROGRAM_CHARS) -> ExtractedProgram:
    """The program in a model's answer, with a reason when there is none that can run.

    A fenced block tagged as Python wins (the last one that compiles, unless a much longer compiling
    block comes before it); then an untagged fenced block; then, when the answer has no code block,
    the whole answer as a program. Blocks tagged as another language (json, text, bash, ...) are
    examples, not solutions. Never raises.
    """
    if not isinstance(answer, str):
        return ExtractedProgram("", "none", f"the answer must be text, got {type(answer).__name__}")
    if not answer.strip():
        return ExtractedProgram("", "none", "the answer is empty; write a Python program (a ```python block is fine)")
    if len(answer) > max_chars:
        return ExtractedProgram("", "none", f"the answer is {len(answer)} characters long, over the limit of "
                                            f"{max_chars}; submit only the program")
    blocks = _fenced_blocks(answer)
    chosen = _choose_block(blocks)
    if chosen is not None:
        program, source = chosen.strip("\n"), "fenced"
    elif blocks:
        return ExtractedProgram("", "none", "the answer's code blocks hold no Python program "
                                            "(only empty blocks or blocks tagged as another language)")
    else:
        program, source = answer.strip("\n"), "raw"
    if "\x00" in program:
        return ExtractedProgram(program, source, "the program contains a NUL character")
    problem = _syntax_problem(program)
    if problem is not None and source == "raw":
        problem += "; put the solution in a ```python code block or send the program alone"
    return ExtractedProgram(program + "\n", source, problem)
