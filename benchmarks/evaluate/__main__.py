"""``python -m benchmarks.evaluate``: see :mod:`benchmarks.evaluate.cli`."""

import sys

from benchmarks.evaluate.cli import main

if __name__ == "__main__":
    sys.exit(main())
