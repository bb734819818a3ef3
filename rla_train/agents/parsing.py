"""Action parsers: a model's completion in, the action for the env out (or the reason there is none).

Each parser returns a :class:`ParsedAction`. A completion that does not parse is never an exception:
the parser says why, and the agent sends the env something it will flag as an invalid action (the
env's own feedback then tells the model what went wrong).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["ParsedAction", "parse_free_text", "parse_action_index", "parse_code_block", "parse_desktop_action",
           "DESKTOP_KEYWORDS"]

DESKTOP_KEYWORDS = ("WAIT", "DONE", "FAIL")
"""The special desktop actions (OSWorld's): wait a moment, declare the task done, declare it infeasible."""

_PREFIX = re.compile(r"^\s*(?:>\s*|(?:next\s+)?action\s*[:=-]\s*|command\s*[:=-]\s*|\d+\s*[.)]\s+)", re.IGNORECASE)
_FENCE = re.compile(r"```[ \t]*(?P<lang>[\w+.-]*)[^\n]*\n(?P<body>.*?)(?:```|\Z)", re.DOTALL)
_INTEGER = re.compile(r"[-+]?\d+")


@dataclass(frozen=True)
class ParsedAction:
    """The action read from a completion.

    Attributes:
        action: what goes to the env (when the completion did not parse: the cleaned text, which the env
            flags as invalid, or ``""``).
        error: None when the completion parsed; else why it did not.
    """

    action: str
    error: str | None = None

    @property
    def ok(self) -> bool:
        """True when the completion parsed into an action."""
        return self.error is None


def _first_line(text: str) -> str:
    for line in str(text).splitlines():
        line = _PREFIX.sub("", line).strip().strip("`\"'").strip()
        if line:
            return line.rstrip(".").strip()
    return ""


def _canonical(action: str, admissible: Sequence[str] | None) -> str | None:
    """The admissible command equal to ``action`` up to case and spacing, else None."""
    if not admissible:
        return None
    key = " ".join(action.lower().split())
    for command in admissible:
        if " ".join(command.lower().split()) == key:
            return command
    return None


def parse_free_text(text: str, admissible: Sequence[str] | None = None) -> ParsedAction:
    """A text-game command from the completion's first non-empty line.

    Prefixes such as ``Action:``, ``>`` or ``1.`` and surrounding quotes are dropped. When the env's
    admissible commands are known, a case/spacing variant of one is mapped to it, and a command outside
    the list is still sent (the env answers it) but reported as ``error``.
    """
    line = _first_line(text)
    if not line:
        return ParsedAction("", "the answer holds no command")
    if admissible:
        canonical = _canonical(line, admissible)
        if canonical is None:
            return ParsedAction(line, f"{line!r} is not one of the {len(admissible)} admissible commands")
        return ParsedAction(canonical)
    return ParsedAction(line)


def parse_action_index(text: str, admissible: Sequence[str]) -> ParsedAction:
    """The admissible command chosen by its 1-based number (``"3"``, ``"Action: 3"``), or named in full."""
    line = _first_line(text)
    match = _INTEGER.match(line)
    if match:
        number = int(match.group())
        if 1 <= number <= len(admissible):
            return ParsedAction(admissible[number - 1])
        return ParsedAction(line, f"action number {number} is out of range 1..{len(admissible)}")
    canonical = _canonical(line, admissible) if line else None
    if canonical is not None:
        return ParsedAction(canonical)
    return ParsedAction(line, "the answer holds no action number" if not line else
                        f"{line!r} is neither an action number nor an admissible command")


def parse_code_block(text: str) -> ParsedAction:
    """A Python program: the completion is sent whole (the code env extracts the program), with the
    extraction problem (no code, syntax error, ...) reported as ``error``."""
    from rla_envs.code.answer import extract_program

    extracted = extract_program(text)
    return ParsedAction(text if isinstance(text, str) else "", extracted.problem)


def parse_desktop_action(text: str) -> ParsedAction:
    """A desktop action: ``WAIT`` / ``DONE`` / ``FAIL`` alone on a line, or pyautogui code (a fenced block
    or the raw text) that compiles."""
    text = str(text)
    for line in text.splitlines():
        word = line.strip().strip("`").strip().upper()
        if word in DESKTOP_KEYWORDS:
            return ParsedAction(word)
    blocks = [m.group("body") for m in _FENCE.finditer(text)]
    code = (blocks[-1] if blocks else text).strip()
    if not code:
        return ParsedAction("", "the answer holds no pyautogui code and no WAIT/DONE/FAIL")
    try:
        compile(code, "<action>", "exec")
    except SyntaxError as error:
        return ParsedAction(code, f"the pyautogui code does not compile: {error.msg} (line {error.lineno})")
    if "pyautogui" not in code:
        return ParsedAction(code, "the code does not call pyautogui")
    return ParsedAction(code)
