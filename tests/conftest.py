"""Test-session settings that must hold before any library is imported."""

import os

# No test may reach the network: TRL's trainers otherwise send usage telemetry from a thread (a DNS lookup that
# crashed the interpreter once under load). rla_train sets the same default; this covers tests that build a TRL
# trainer before importing it.
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
