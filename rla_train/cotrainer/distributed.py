"""Data-parallel co-training: this process's rank, the collectives the loop needs, and the pure maths of sharing.

Under ``accelerate launch --multi_gpu --num_processes N -m rla_train.run ...`` (or ``torchrun --nproc_per_node N``)
the co-trainer runs one process per rank. Rank 0 owns the task pool: each step it draws
``rollout.tasks_per_step x N`` tasks and every rank plays its share (:func:`rank_share`) with its own engine, envs
and seeds (``train.seed + rank``); the played groups come back to rank 0 for the pool (``report_group``,
``adapt``) and the step's metrics. TRL's accelerator wraps both trainers' models in DDP, so each update
all-reduces gradients; :func:`aligned_micro_batches` says how many micro-batches every rank runs so that none
waits for an all-reduce the others never start.

::

    ranks = Ranks.from_environment()          # Ranks(world_size=1, rank=0) in one process: every call a no-op
    tasks = ranks.scatter(feeder.draw(4 * ranks.world_size) if ranks.is_main else None)
    everyone = ranks.gather(my_groups)        # [rank 0's, rank 1's, ...] on every rank

Only rank 0 evaluates, writes checkpoints, logs and plots; :meth:`Ranks.barrier` after each checkpoint keeps the
others from running ahead of a save they might resume from.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["Ranks", "rank_share", "aligned_micro_batches", "merge_rank_metrics", "pooled_mean", "COUNTED_METRICS",
           "MEASURED_ON", "ONE_PROCESS"]


def rank_share(items: Sequence[Any], rank: int, world_size: int) -> list[Any]:
    """Rank ``rank``'s contiguous share of ``items`` (``len(items)`` must divide evenly among the ranks)."""
    if world_size < 1 or not 0 <= rank < world_size:
        raise ValueError(f"rank must be in [0, world_size), got rank {rank} of world_size {world_size}")
    if len(items) % world_size:
        raise ValueError(f"{len(items)} items do not split evenly over {world_size} ranks")
    size = len(items) // world_size
    return list(items[rank * size:(rank + 1) * size])


def aligned_micro_batches(kept_per_rank: Sequence[int], mini_batches: int, micro_batch: int) -> tuple[int, int]:
    """``(optimizer steps, micro-batches per step)`` that every rank runs in one update.

    A rank with ``k`` samples splits them into ``min(mini_batches, k)`` optimizer steps of ``ceil(size / micro_batch)``
    micro-batches each (:meth:`~rla_train.cotrainer.policy_update.SampleTrainer.update`); the ranks agree on the
    largest of each, and a rank with fewer runs padding micro-batches that carry no gradient. ``(0, 0)``: no rank
    has a sample, and no rank steps.
    """
    if mini_batches < 1 or micro_batch < 1:
        raise ValueError(f"mini_batches and micro_batch must be >= 1, got {mini_batches} and {micro_batch}")
    steps = max((min(mini_batches, k) for k in kept_per_rank), default=0)
    if steps == 0:
        return 0, 0
    largest_part = max(math.ceil(k / min(mini_batches, k)) for k in kept_per_rank if k)  # round() splits: ceil bounds
    return steps, math.ceil(largest_part / micro_batch)


def pooled_mean(means_and_counts: Sequence[tuple[float, int]]) -> float:
    """The mean over every rank's items from each rank's ``(mean, count)``: a rank with no item weighs nothing;
    0.0 when no rank has one.

    >>> pooled_mean([(0.5, 3), (0.0, 0), (0.25, 1)])
    0.4375
    """
    total = sum(count for _, count in means_and_counts)
    return sum(mean * count for mean, count in means_and_counts) / total if total else 0.0


COUNTED_METRICS = frozenset({"policy_samples", "policy_dropped_zero_advantage", "policy_tokens", "rm_samples",
                             "rm_dropped_zero_advantage", "rm_tokens", "rm_judgments", "rm_groups_filtered",
                             "groups_filtered", "policy_choice_shift_states", "policy_choice_shift_states_pos_adv",
                             "policy_choice_shift_states_neg_adv"})
"""Per-rank step metrics that count things: the step's value is their sum over ranks (the others' is the mean)."""

MEASURED_ON = {"policy_choice_kl": "policy_choice_shift_states",
               "policy_chosen_prob_change": "policy_choice_shift_states",
               "policy_chosen_prob_change_pos_adv": "policy_choice_shift_states_pos_adv",
               "policy_chosen_prob_change_neg_adv": "policy_choice_shift_states_neg_adv"}
"""Per-rank means over a rank's own items, and the counted metric that says how many items each rank measured: the
step's value is the mean over all ranks' items (:func:`pooled_mean`), so a rank that measured few states (or only
padding) weighs as little as it measured."""


def merge_rank_metrics(per_rank: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """One step's metrics from every rank's: counts (:data:`COUNTED_METRICS`) summed, means over measured items
    (:data:`MEASURED_ON`) pooled by each rank's count, the rest averaged.

    A name some ranks lack is merged over the ranks that have it; one rank's metrics come back unchanged. A mean
    whose count is missing on a rank that has the mean falls back to the plain average.
    """
    names = list(dict.fromkeys(name for metrics in per_rank for name in metrics))
    merged = {}
    for name in names:
        having = [metrics for metrics in per_rank if name in metrics]
        values = [metrics[name] for metrics in having]
        count = MEASURED_ON.get(name)
        if name in COUNTED_METRICS:
            merged[name] = sum(values)
        elif len(having) > 1 and count is not None and all(count in metrics for metrics in having):
            merged[name] = pooled_mean([(metrics[name], int(metrics[count])) for metrics in having])
        else:
            merged[name] = sum(values) / len(values)
    return merged

class Ranks:
    """This process's place among the data-parallel ranks of a run, and the collectives the loop uses.

    ``Ranks()`` is one process (rank 0 of 1): :meth:`scatter` returns what it is given, :meth:`gather` a one-item
    list, :meth:`barrier` and :meth:`broadcast_parameters` do nothing, so the single-process run is unchanged.
    """

    def __init__(self, world_size: int = 1, rank: int = 0):
        if world_size < 1 or not 0 <= rank < world_size:
            raise ValueError(f"rank must be in [0, world_size), got rank {rank} of world_size {world_size}")
        self.world_size, self.rank = int(world_size), int(rank)

    @classmethod
    def from_environment(cls) -> Ranks:
        """The ranks a launcher started (``WORLD_SIZE`` > 1 in the environment), else one process.

        Under a launcher this starts accelerate's process group (gloo on CPU, NCCL on CUDA), the same one TRL's
        trainers then use.
        """
        if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
            return cls()
        import torch
        from accelerate import PartialState

        state = PartialState(cpu=not torch.cuda.is_available())
        return cls(state.num_processes, state.process_index)

    @property
    def is_main(self) -> bool:
        """Whether this is rank 0, which owns the pool, evaluates, logs and writes checkpoints."""
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        """Whether there is more than one rank."""
        return self.world_size > 1

    def scatter(self, items: Sequence[Any] | None) -> list[Any]:
        """Rank 0's ``items`` (others pass None), and this rank's :func:`rank_share` of them."""
        if not self.distributed:
            return list(items)
        from accelerate.utils import broadcast_object_list

        box = [list(items) if self.is_main else None]
        broadcast_object_list(box, from_process=0)
        return rank_share(box[0], self.rank, self.world_size)

    def gather(self, item: Any) -> list[Any]:
        """Every rank's ``item``, in rank order, on every rank."""
        if not self.distributed:
            return [item]
        from accelerate.utils import gather_object

        return list(gather_object([item]))

    def pooled_mean(self, mean: float, count: int) -> float:
        """The mean over all ranks' items of a quantity this rank averaged over its ``count`` items
        (:func:`pooled_mean`); the same on every rank."""
        return pooled_mean(self.gather((float(mean), int(count))))

    def broadcast(self, item: Any) -> Any:
        """Rank 0's ``item`` on every rank (others pass anything, e.g. None)."""
        if not self.distributed:
            return item
        from accelerate.utils import broadcast_object_list

        box = [item]
        broadcast_object_list(box, from_process=0)
        return box[0]

    def barrier(self) -> None:
        """Wait until every rank gets here."""
        if self.distributed:
            from accelerate import PartialState

            PartialState().wait_for_everyone()

    def broadcast_parameters(self, model) -> None:
        """Copy rank 0's parameters and buffers into ``model`` on every rank (after a warm start or a restore)."""
        if not self.distributed:
            return
        import torch.distributed as dist

        for tensor in [*model.parameters(), *model.buffers()]:
            dist.broadcast(tensor.data, src=0)

    def __repr__(self) -> str:
        return f"Ranks(world_size={self.world_size}, rank={self.rank})"


ONE_PROCESS = Ranks()
"""The ranks of an ordinary run: one process."""
