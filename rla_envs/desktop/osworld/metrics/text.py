"""Metrics over plain text files: ``compare_text_file``, ``diff_text_file``, ``file_contains``, ``check_list``,
``compare_csv``, ``compare_result_files``, ``compare_python_pure_text``, ``check_line_number``. A missing result
file (None) scores 0; so does one that is not text."""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from typing import Any

from rla_envs.desktop.osworld.errors import EvaluationError

__all__ = ["compare_text_file", "diff_text_file", "file_contains", "check_list", "compare_csv",
           "compare_result_files", "compare_python_pure_text", "check_line_number", "read_text", "read_expected_text"]

_ENCODINGS = ("utf-8-sig", "latin-1")


def read_text(path: str | None) -> str | None:
    """The text of a result file, or None when it is missing or unreadable (the agent's output: scores 0)."""
    if not path:
        return None
    for encoding in _ENCODINGS:
        try:
            with open(path, encoding=encoding, newline=None) as handle:
                return handle.read()
        except UnicodeDecodeError:
            continue
        except OSError:
            return None
    return None


def read_expected_text(path: str | None) -> str:
    """The text of a reference file; a missing one is an evaluation error, not a score."""
    text = read_text(path)
    if text is None:
        raise EvaluationError(f"the reference file {path!r} is missing or unreadable")
    return text


def _normalise_blanks(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[\t\n]", " ", text).strip())


def compare_text_file(result: str | None, expected: str | None, **options: Any) -> float:
    """1 when the two text files are equal; options ``ignore_blanks`` (runs of blanks as one space, trimmed)
    and ``ignore_case``."""
    actual = read_text(result)
    if actual is None:
        return 0.0
    gold = read_expected_text(expected)
    if options.get("ignore_blanks", False):
        actual, gold = _normalise_blanks(actual), _normalise_blanks(gold)
    if options.get("ignore_case", False):
        actual, gold = actual.lower(), gold.lower()
    return float(actual == gold)


def diff_text_file(result: str | None, expected: str | None, **options: Any) -> float:
    """How alike the two files' lines are (difflib's ratio over lines, in [0, 1])."""
    actual = read_text(result)
    if actual is None:
        return 0.0
    gold = read_expected_text(expected)
    return difflib.SequenceMatcher(a=actual.splitlines(), b=gold.splitlines()).ratio()


def file_contains(result: str | None, rules: Mapping[str, Any], **options: Any) -> float:
    """1 when the file contains every string in ``rules["expected"]``."""
    actual = read_text(result)
    if actual is None:
        return 0.0
    return float(all(text in actual for text in rules["expected"]))


def check_list(result: str | None, rules: Mapping[str, Sequence[str]], **options: Any) -> float:
    """1 when every ``expect`` regex matches some line and no ``unexpect`` regex matches any line."""
    actual = read_text(result)
    if actual is None:
        return 0.0
    lines = actual.splitlines()
    expect = [re.compile(p) for p in rules.get("expect", [])]
    unexpect = [re.compile(p) for p in rules.get("unexpect", [])]
    found = all(any(p.search(line) for line in lines) for p in expect)
    clean = not any(p.search(line) for p in unexpect for line in lines)
    return float(found and clean)


def compare_csv(result: str | None, expected: str | Sequence[str] | None, **options: Any) -> float:
    """1 when the CSV file's lines equal those of the expected file (or of any one of a list of them);
    options ``strict`` (default True; False strips each line) and ``ignore_case``."""
    actual = read_text(result)
    if actual is None:
        return 0.0
    candidates = [expected] if isinstance(expected, str) or expected is None else list(expected)

    def lines(text: str) -> list[str]:
        out = text.splitlines()
        if not options.get("strict", True):
            out = [line.strip() for line in out]
        if options.get("ignore_case", False):
            out = [line.lower() for line in out]
        return out

    return float(any(lines(actual) == lines(read_expected_text(path)) for path in candidates))


def compare_result_files(result: str | None, expected: str | None, **options: Any) -> float:
    """1 when the result file gives the expected answer: for a numeric reference, the result contains its text or
    is a number within 1e-4 of it; otherwise the two stripped texts are equal."""
    actual = read_text(result)
    if actual is None or not expected:
        return 0.0
    actual, gold = actual.strip(), read_expected_text(expected).strip()
    try:
        gold_number = float(gold)
    except ValueError:
        return float(actual == gold)
    if gold in actual:
        return 1.0  # the answer inside a sentence ("The median price is 42.5")
    try:
        return float(abs(float(actual) - gold_number) < 1e-4)
    except ValueError:
        return float(actual == gold)


_ENCODING_LINE = ("#!", "# -*- coding:", "# coding:", "# coding=")


def _python_lines(text: str) -> list[str]:
    """The non-blank lines of Python source, tabs expanded to 4 and right-stripped, without a shebang or
    encoding line among the first three lines."""
    lines = text.splitlines()
    start = 0
    while start < min(len(lines), 3) and lines[start].strip().startswith(_ENCODING_LINE):
        start += 1
    return [line.expandtabs(4).rstrip() for line in lines[start:] if line.strip()]


def compare_python_pure_text(result: str | None, expected: str | None, **options: Any) -> float:
    """1 when two Python files hold the same lines once blank lines, trailing blanks, tabs and a leading
    shebang/encoding line are set aside (indentation and comments count)."""
    if not result or not expected:
        return 0.0
    try:
        with open(result, encoding="utf-8") as handle:
            actual = handle.read()
    except (OSError, UnicodeDecodeError):
        return 0.0
    return float(_python_lines(actual) == _python_lines(read_expected_text(expected)))


_CLOCK_TIME = re.compile(r"([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)")


def check_line_number(result: str | None, rules: Mapping[str, Any], **options: Any) -> float:
    """1 when the number of lines holding a clock time (``HH:MM:SS``) equals ``int(rules["expected"])``."""
    actual = read_text(result)
    if actual is None:
        return 0.0
    try:
        wanted = int(rules["expected"])
    except (TypeError, ValueError) as exc:
        raise EvaluationError(f"check_line_number needs an integer 'expected', got {rules.get('expected')!r}") from exc
    lines = actual.split("\n")  # only newlines end a line, as when Python iterates over the file
    return float(sum(1 for line in lines if _CLOCK_TIME.search(line)) == wanted)
