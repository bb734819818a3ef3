"""``python -m benchmarks.ablation``: see :mod:`benchmarks.ablation.cli`."""

import sys

from benchmarks.ablation.cli import main

if __name__ == "__main__":
    sys.exit(main())
