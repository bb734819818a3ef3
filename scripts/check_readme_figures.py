"""Check that the README quotes what the main job printed: ``python scripts/check_readme_figures.py RUN_STDOUT``.

The README's Quick start shows the summary a fresh ``python -m rla_train.run`` prints, in the fenced block that
follows the line ``<!-- main-job-output -->``. The job is deterministic (bounded by steps, seeded), so CI runs it from
an empty cache and calls this script on its standard output: every line of the README's block must be a line the run
printed, in the same order. Exits 0 when they agree; otherwise prints each line that differs and exits 1 (2 when the
README has no such block).
"""

from __future__ import annotations

import difflib
import sys
from pathlib import Path

MARKER = "<!-- main-job-output -->"
"""The line that comes right before the README's fenced block of the main job's output."""


def quoted_block(readme: str) -> list[str]:
    """The lines of the fenced block after :data:`MARKER` (empty when there is none)."""
    lines = readme.splitlines()
    try:
        start = lines.index(MARKER) + 1
    except ValueError:
        return []
    while start < len(lines) and not lines[start].strip().startswith("```"):
        start += 1
    block = []
    for line in lines[start + 1:]:
        if line.strip().startswith("```"):
            return block
        block.append(line.rstrip())
    return []


def differences(quoted: list[str], printed: list[str]) -> list[str]:
    """The quoted lines that the run did not print at that place (quoted must be a subsequence of printed)."""
    printed = [line.rstrip() for line in printed]
    missing, position = [], 0
    for line in quoted:
        try:
            position = printed.index(line, position) + 1
        except ValueError:
            close = difflib.get_close_matches(line, printed, n=1, cutoff=0.6)
            missing.append(f"README: {line!r}\n   run: {close[0]!r}" if close else f"README: {line!r}\n   run: (no such line)")
    return missing


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.splitlines()[0], file=sys.stderr)
        return 2
    readme = Path(__file__).resolve().parents[1] / "README.md"
    quoted = quoted_block(readme.read_text(encoding="utf-8"))
    if not quoted:
        print(f"{readme}: no fenced block after {MARKER!r}", file=sys.stderr)
        return 2
    printed = Path(argv[0]).read_text(encoding="utf-8", errors="replace").splitlines()
    missing = differences(quoted, printed)
    if missing:
        print(f"the README's main-job figures differ from what the run printed ({len(missing)} lines):")
        print("\n".join(missing))
        from rla_train.cpu_kernels import cpu_model

        print(f"this machine: {cpu_model()} (the README's figures are one kind of machine's: rla_train/cpu_kernels.py)")
        return 1
    print(f"the README quotes the run exactly ({len(quoted)} lines)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
