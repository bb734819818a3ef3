"""``python -m rla_train.merge_lora RUN --out DIR``: a LoRA run's adapter merged into its base, one model for serving.

``RUN`` is a run directory (its newest intact checkpoint), a checkpoint (``RUN/checkpoints/step-NNNNNN``) or an
adapter directory; ``--role reward_model`` merges the reward model's adapter instead of the policy's. The merged
model and the tokenizer are written to ``--out`` with ``save_pretrained`` (vLLM, TGI or transformers load it as any
model). ``--base`` names the base model when the one recorded in ``adapter_config.json`` has moved.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["adapter_dir", "main"]


def adapter_dir(path: str | Path, role: str = "policy") -> Path:
    """The adapter directory ``path`` names: a run's newest intact checkpoint's, a checkpoint's, or ``path`` itself."""
    from rla_train.cotrainer.checkpoint import latest_checkpoint
    from rla_train.cotrainer.lora import is_adapter_dir

    path = Path(path)
    if (path / "checkpoints").is_dir():
        checkpoint = latest_checkpoint(path)
        if checkpoint is None:
            raise FileNotFoundError(f"{path} holds no finished checkpoint")
        path = Path(checkpoint)
    if (path / role).is_dir():
        path = path / role
    if not is_adapter_dir(path):
        raise FileNotFoundError(f"{path} holds no LoRA adapter (adapter_config.json): merge a run trained with "
                                f"{role}.use_peft=true")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rla_train.merge_lora", description=__doc__.split("\n\n")[0])
    parser.add_argument("path", help="a run directory, a checkpoint or an adapter directory")
    parser.add_argument("--out", required=True, help="where to write the merged model")
    parser.add_argument("--role", default="policy", choices=("policy", "reward_model"))
    parser.add_argument("--base", default=None, help="the base model (default: the one the adapter records)")
    args = parser.parse_args(argv)
    try:
        source = adapter_dir(args.path, args.role)
    except (FileNotFoundError, ValueError) as exc:  # ValueError: CorruptCheckpoint, none intact
        parser.error(str(exc))
    from rla_train.cotrainer.lora import merge_adapter_dir

    out = merge_adapter_dir(source, args.out, base=args.base)
    print(f"merged {source} into {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
