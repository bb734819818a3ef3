"""Where the tests find data that lives outside the repository."""

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
#: ``../shared`` beside the checkout (as CI lays it out), or ``$RLA_SHARED_DIR``.
SHARED = Path(os.environ.get("RLA_SHARED_DIR") or REPO_ROOT.parent / "shared")
SANDBOX_ATTACKS = SHARED / "sandbox-attacks"
OSWORLD_TASKS = SHARED / "osworld-tasks"
