"""scripts/check_readme_figures.py: CI's check that the README quotes what the main job printed."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("check_readme_figures", ROOT / "scripts" / "check_readme_figures.py")
check = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check)

README = """# x
<!-- main-job-output -->

```text
held-out success:
  before   15.6%  (10/64)
  after    17.2%  (11/64)
```
"""


def test_the_quoted_block_is_the_fenced_block_after_the_marker():
    assert check.quoted_block(README) == ["held-out success:", "  before   15.6%  (10/64)", "  after    17.2%  (11/64)"]
    assert check.quoted_block("no marker\n```\nx\n```\n") == []


def test_a_run_that_printed_the_quoted_lines_in_order_agrees_and_any_other_figure_differs():
    quoted = check.quoted_block(README)
    printed = ["[rla] phase", "held-out success:", "  before   15.6%  (10/64)", "  after    17.2%  (11/64)", "wrote x"]
    assert check.differences(quoted, printed) == []
    changed = [line.replace("11/64", "12/64") for line in printed]
    assert len(check.differences(quoted, changed)) == 1 and "12/64" in check.differences(quoted, changed)[0]
    assert len(check.differences(quoted, list(reversed(printed)))) >= 1  # the order matters too


def test_the_readme_quotes_a_main_job_summary():
    block = check.quoted_block((ROOT / "README.md").read_text(encoding="utf-8"))
    assert block and block[0] == "held-out success:"
