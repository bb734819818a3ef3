"""rla_train: generation backends, agents, the rollout engine, the generative reward model and the co-trainer.

Heavy dependencies (torch, transformers, trl, vllm) are imported only by the modules that need them.

Nothing here reaches the network unless asked: TRL's trainers report usage to the Hugging Face Hub from a
background thread when they are built, which on an offline machine tries (and here once crashed in) a DNS lookup,
so importing ``rla_train`` turns that telemetry off unless the user has set ``HF_HUB_DISABLE_TELEMETRY`` already.
"""

import os as _os

_os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
