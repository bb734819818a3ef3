"""Check that the README quotes what the main job printed: ``python scripts/check_readme_figures.py RUN_STDOUT``.

The README's Quick start shows the summary a fresh ``python -m rla_train.run`` prints, in a fenced block that follows
a line ``<!-- main-job-output: MACHINE -->``, one block per kind of machine it was measured on: MACHINE is what
:func:`rla_train.cpu_kernels.cpu_model` says of that machine (e.g. ``AuthenticAMD, AMD EPYC, avx2``), since the
seeded run's figures depend on the CPU's vendor beyond the kernels it pins. The job is deterministic (bounded by
steps, seeded), so CI runs it from an empty cache and calls this script on its standard output: every line of the
block quoted for this machine must be a line the run printed, in the same order (on a kind of machine the README
does not name, one of its blocks must). Exits 0 when they agree; otherwise prints each line that differs and exits
1; exits 2 when the README has no such block at all.
"""

from __future__ import annotations

import difflib
import sys
from pathlib import Path

MARKER_START, MARKER_END = "<!-- main-job-output: ", " -->"
"""A line ``<!-- main-job-output: MACHINE -->`` comes right before each fenced block of the main job's output."""


def quoted_blocks(readme: str) -> dict[str, list[str]]:
    """Each machine the README quotes the main job for, with the lines of the fenced block after its marker (a
    marker without a closed fenced block after it quotes nothing)."""
    lines, blocks = readme.splitlines(), {}
    for index, line in enumerate(lines):
        if not (line.startswith(MARKER_START) and line.endswith(MARKER_END)):
            continue
        machine = line[len(MARKER_START):-len(MARKER_END)].strip()
        start = index + 1
        while start < len(lines) and not lines[start].strip().startswith("```"):
            start += 1
        block = []
        for inner in lines[start + 1:]:
            if inner.strip().startswith("```"):
                blocks[machine] = block
                break
            block.append(inner.rstrip())
    return blocks


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


def verdict(blocks: dict[str, list[str]], machine: str, printed: list[str]) -> tuple[int, str]:
    """The exit status and the message for a run on ``machine`` that printed ``printed``, against the README's
    ``blocks``: this machine's block must agree; on a kind of machine the README does not name, any one block."""
    if machine not in blocks:  # e.g. an AVX-512 EPYC, which prints the AVX2 one's figures under the pinned kernels
        agrees = [name for name, block in blocks.items() if not differences(block, printed)]
        if agrees:
            return 0, f"the README quotes the run exactly as measured on {agrees[0]!r} (this machine: {machine!r})"
        first = next(iter(blocks.values()))
        return 1, "\n".join([f"the README quotes the main job on {' and on '.join(map(repr, blocks))}, and this "
                              f"machine ({machine!r}) printed neither; add its block. Against the first:",
                              *differences(first, printed)])
    missing = differences(blocks[machine], printed)
    if missing:
        return 1, "\n".join([f"the README's main-job figures for {machine!r} differ from what the run printed "
                              f"({len(missing)} lines):", *missing])
    return 0, f"the README quotes the run on this machine ({machine!r}) exactly ({len(blocks[machine])} lines)"


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.splitlines()[0], file=sys.stderr)
        return 2
    from rla_train.cpu_kernels import cpu_model

    readme = Path(__file__).resolve().parents[1] / "README.md"
    blocks = quoted_blocks(readme.read_text(encoding="utf-8"))
    if not blocks:
        print(f"{readme}: no fenced block after a line {MARKER_START}MACHINE{MARKER_END}", file=sys.stderr)
        return 2
    status, message = verdict(blocks, cpu_model(), Path(argv[0]).read_text(encoding="utf-8", errors="replace").splitlines())
    print(message)
    return status


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
