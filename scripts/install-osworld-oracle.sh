#!/usr/bin/env bash
# Install OSWorld's evaluator code (desktop-env) as the oracle of the differential tests (pytest -m oracle), into the
# active virtual environment.
#
#   scripts/install-osworld-oracle.sh     # after: pip install -c constraints.txt -e ".[dev]"
#
# desktop-env is a test oracle, never a runtime dependency of rla. It goes in with --no-deps: its own requirements pin
# torch 2.5, transformers 4.35, Pillow 11 and its VM providers' cloud SDKs, which clash with ours. What its metric
# modules import at their top is installed beside it, at the versions in constraints.txt; the rest (OCR, audio
# fingerprints, browser automation) is stood in for by tests/rla_envs/desktop/osworld_oracle.py and must not be used.
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1
pip install -q -c constraints.txt --no-deps "desktop-env==1.0.2"
pip install -q -c constraints.txt python-pptx pypdf pymupdf rapidfuzz beautifulsoup4 cssselect imagehash scikit-image \
    opencv-python-headless formulas tldextract xmltodict pdfplumber mutagen odfpy
python -c 'import importlib.metadata as m; print("osworld oracle: desktop-env", m.version("desktop-env"))'
