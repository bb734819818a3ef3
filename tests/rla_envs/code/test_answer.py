"""Reading the program out of a model's answer (rla_envs.code.answer)."""

from __future__ import annotations

import pytest

from rla_envs.code.answer import extract_program

FULL = "def solve(x):\n    return x * x + 1"


def test_fenced_python_block_in_prose_is_extracted():
    answer = f"Let me think.\n\n```python\n{FULL}\n```\n\nThis squares x and adds one."
    extracted = extract_program(answer)
    assert extracted.ok and extracted.source == "fenced"
    assert extracted.program == FULL + "\n"


def test_last_compiling_python_block_wins_over_an_earlier_draft():
    answer = f"First try:\n```python\ndef solve(x):\n    return x * x\n```\nFixed:\n```py\n{FULL}\n```"
    assert extract_program(answer).program == FULL + "\n"


def test_a_short_usage_snippet_after_the_solution_does_not_replace_it():
    answer = (f"```python\n{FULL}\n\n\nimport sys\nprint(solve(int(sys.stdin.read())))\n```\n"
              "Usage:\n```python\nsolve(3)\n```")
    assert extract_program(answer).program.startswith(FULL)


def test_a_broken_later_block_does_not_replace_a_compiling_one():
    answer = f"```python\n{FULL}\n```\nor maybe\n```python\ndef solve(x) return x\n```"
    assert extract_program(answer).program == FULL + "\n"


def test_untagged_block_is_used_and_other_languages_are_not():
    assert extract_program(f"```\n{FULL}\n```").program == FULL + "\n"
    answer = f'```json\n{{"x": 1}}\n```\n```\n{FULL}\n```'
    assert extract_program(answer).program == FULL + "\n"
    only_other = extract_program('```json\n{"x": 1}\n```')
    assert not only_other.ok and "no Python program" in only_other.problem


def test_unclosed_fence_from_a_cut_generation_is_read_to_the_end():
    extracted = extract_program(f"Here it is:\n```python\n{FULL}\n")
    assert extracted.ok and extracted.program == FULL + "\n"


def test_raw_program_without_fences_is_taken_whole():
    extracted = extract_program("import sys\nprint(int(sys.stdin.read()) + 1)\n")
    assert extracted.ok and extracted.source == "raw"
    assert extracted.program == "import sys\nprint(int(sys.stdin.read()) + 1)\n"


@pytest.mark.parametrize("answer, reason", [
    ("", "empty"),
    ("   \n\t ", "empty"),
    ("I am not sure how to solve this, sorry!", "does not compile"),
    ("```python\n\n```", "no Python program"),
    ("def f(:\n  pass", "line 1"),
    ("(" * 200_000, "characters long"),
    ("(" * 5_000, "does not compile"),
    (None, "must be text"),
    (b"print(1)", "must be text"),
])
def test_unusable_answers_get_a_reason_and_never_raise(answer, reason):
    extracted = extract_program(answer)
    assert not extracted.ok
    assert reason in extracted.problem


def test_non_ascii_program_is_kept_intact():
    program = 'def greet():\n    return "héllo, 世界 🙂"'
    extracted = extract_program(f"Voilà :\n```python\n{program}\n```")
    assert extracted.ok and extracted.program == program + "\n"


def test_max_chars_is_configurable():
    assert not extract_program("x = 1\n" * 10, max_chars=20).ok
    assert extract_program("x = 1\n" * 3, max_chars=20).ok
