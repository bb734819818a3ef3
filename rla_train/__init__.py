"""rla_train: generation backends, agents, the rollout engine, the generative reward model and the co-trainer.

Heavy dependencies (torch, transformers, trl, vllm) are imported only by the modules that need them.

Nothing here reaches the network unless asked: TRL's trainers report usage to the Hugging Face Hub from a
background thread when they are built, which on an offline machine tries (and here once crashed in) a DNS lookup,
so importing ``rla_train`` turns that telemetry off unless the user has set ``HF_HUB_DISABLE_TELEMETRY`` already.
"""

import os as _os

_os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

TRAIN_MODULES = ("torch", "transformers", "trl", "datasets", "yaml")
"""What the co-trainer and the benchmarks import; ``pip install "rla[train]"`` installs them."""


def missing_train_extra(command: str) -> str | None:
    """The one-line error for ``command`` when ``rla[train]`` is not installed (``pip install rla`` is the envs
    alone), else None. The co-trainer's command lines print it and exit with status 2 before any work."""
    import importlib.util

    missing = [name for name in TRAIN_MODULES if importlib.util.find_spec(name) is None]
    if not missing:
        return None
    return (f"{command}: error: it needs the co-trainer's dependencies ({', '.join(missing)} not installed); install "
            f"them with: pip install \"rla[train]\"")
