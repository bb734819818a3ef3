"""Importance-sampling correction between the sampler's log-probabilities (vLLM) and the trainer's.

vLLM samples a completion with its own kernels, so the probability it gave a token differs a little from the
trainer's forward pass over the same weights (and a lot when its weights lag). TRL's GRPO corrects for it by
multiplying each token's loss by a ratio ``π_trainer / π_sampler``, truncated or masked
(``GRPOConfig.vllm_importance_sampling_*``). TRL computes the ratio inside its own generation step, which the
co-trainer replaces, so :func:`sampling_ratios` redoes that computation, mode for mode, on one sample:

* ``token_*``: one ratio per completion token, ``exp(old_t − sampled_t)``;
* ``sequence_*``: one ratio for the whole completion, ``exp(Σ_t (old_t − sampled_t))``;
* ``*_truncate``: ratios clamped into ``[clip_min, clip_max]`` (a bound of None is no bound);
* ``*_mask``: ratios outside ``[clip_min, clip_max]`` become 0 (the token, or the whole sample, is not trained).

A sampled log-probability that is NaN (vLLM did not report one) counts as equal to the trainer's: ratio 1 for that
token, as in TRL.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["SAMPLING_CORRECTION_MODES", "sampling_ratios"]

SAMPLING_CORRECTION_MODES = ("token_truncate", "token_mask", "sequence_truncate", "sequence_mask")
"""TRL's ``vllm_importance_sampling_mode`` values (TRL 1.16's default: ``sequence_mask``)."""


def sampling_ratios(trainer_logprobs: Sequence[float], sampler_logprobs: Sequence[float], *, mode: str,
                    clip_min: float | None, clip_max: float | None) -> list[float]:
    """The importance ratios of one completion: one per token (``token_*`` modes) or one (``sequence_*`` modes).

    Args:
        trainer_logprobs: the trainer's log-probability of each completion token, before the update.
        sampler_logprobs: the sampler's log-probability of each token (as many; NaN = unknown).
        mode: one of :data:`SAMPLING_CORRECTION_MODES`.
        clip_min, clip_max: the bounds (None: unbounded on that side).
    """
    if mode not in SAMPLING_CORRECTION_MODES:
        raise ValueError(f"mode must be one of {SAMPLING_CORRECTION_MODES}, got {mode!r}")
    if len(trainer_logprobs) != len(sampler_logprobs):
        raise ValueError(f"one sampler log-probability per completion token is needed: got {len(sampler_logprobs)} for "
                         f"{len(trainer_logprobs)} tokens")
    differences = [0.0 if math.isnan(sampled) else old - sampled
                   for old, sampled in zip(trainer_logprobs, sampler_logprobs)]
    if mode.startswith("sequence"):
        differences = [math.fsum(differences)]
    ratios = [math.exp(min(difference, 700.0)) for difference in differences]  # exp(700) is still a float
    low = -math.inf if clip_min is None else clip_min
    high = math.inf if clip_max is None else clip_max
    if mode.endswith("truncate"):
        return [min(max(ratio, low), high) for ratio in ratios]
    return [ratio if low <= ratio <= high else 0.0 for ratio in ratios]
