"""scripts/check_readme_figures.py: CI's check that the README quotes what the main job printed."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("check_readme_figures", ROOT / "scripts" / "check_readme_figures.py")
check = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check)

README = """# x
<!-- main-job-output: AuthenticAMD, AMD EPYC, avx2 -->

```text
held-out success:
  before   15.6%  (10/64)
  after    17.2%  (11/64)
```

<details><summary>on an Intel Xeon</summary>

<!-- main-job-output: GenuineIntel, Intel(R) Xeon(R) Processor, avx2 avx512f amx_tile -->

```text
held-out success:
  before   25.0%  (16/64)
```
</details>

<!-- main-job-output: unclosed -->
```text
held-out success:
"""
EPYC, XEON = "AuthenticAMD, AMD EPYC, avx2", "GenuineIntel, Intel(R) Xeon(R) Processor, avx2 avx512f amx_tile"


def test_each_machine_s_block_is_the_fenced_block_after_its_marker():
    assert check.quoted_blocks(README) == {
        EPYC: ["held-out success:", "  before   15.6%  (10/64)", "  after    17.2%  (11/64)"],
        XEON: ["held-out success:", "  before   25.0%  (16/64)"]}
    assert check.quoted_blocks("no marker\n```\nx\n```\n") == {}
    assert check.quoted_blocks("<!-- main-job-output -->\n```\nx\n```\n") == {}  # a marker names its machine


def test_a_run_that_printed_the_quoted_lines_in_order_agrees_and_any_other_figure_differs():
    quoted = check.quoted_blocks(README)[EPYC]
    printed = ["[rla] phase", "held-out success:", "  before   15.6%  (10/64)", "  after    17.2%  (11/64)", "wrote x"]
    assert check.differences(quoted, printed) == []
    changed = [line.replace("11/64", "12/64") for line in printed]
    assert len(check.differences(quoted, changed)) == 1 and "12/64" in check.differences(quoted, changed)[0]
    assert len(check.differences(quoted, list(reversed(printed)))) >= 1  # the order matters too


def test_a_run_is_held_to_its_own_machine_s_block_and_an_unnamed_machine_to_any_block():
    blocks = check.quoted_blocks(README)
    epyc_run = ["held-out success:", "  before   15.6%  (10/64)", "  after    17.2%  (11/64)"]
    xeon_run = ["held-out success:", "  before   25.0%  (16/64)", "  after    28.1%  (18/64)"]
    assert check.verdict(blocks, EPYC, epyc_run)[0] == 0
    assert check.verdict(blocks, XEON, xeon_run)[0] == 0
    status, message = check.verdict(blocks, XEON, epyc_run)  # the EPYC's figures printed on the Xeon: wrong there
    assert status == 1 and "16/64" in message and XEON in message
    assert check.verdict(blocks, "AuthenticAMD, AMD EPYC, avx2 avx512f", epyc_run)[0] == 0
    status, message = check.verdict(blocks, "unknown", [line.replace("10/64", "9/64") for line in epyc_run])
    assert status == 1 and "printed neither" in message and "9/64" in message


def test_the_readme_quotes_a_main_job_summary_for_the_machines_it_names():
    blocks = check.quoted_blocks((ROOT / "README.md").read_text(encoding="utf-8"))
    assert blocks and all(block and block[0] == "held-out success:" for block in blocks.values())
    assert all(machine.split(", ")[0] in ("AuthenticAMD", "GenuineIntel") for machine in blocks)
