"""Updates from our own samples through TRL's GRPO machinery: its loss, optimizer, scheduler and accelerator.

The co-trainer collects multi-turn episodes itself (the rollout engine) and scores them itself (outcome +
reward-model judgments, :mod:`rla_train.signals.rewards`). What it hands to TRL is a list of
:class:`~rla_train.signals.samples.Sample` — one per policy step (prompt = the chat the policy saw, completion =
what it answered, advantage = that step's advantage) or one per reward-model judgment — and :class:`SampleTrainer`
(a ``GRPOTrainer``) turns them into one optimizer step with TRL's clipped policy-gradient loss::

    trainer = SampleTrainer(model, tokenizer, GRPOConfig(output_dir=..., learning_rate=1e-6, ...),
                            total_steps=200)
    metrics = trainer.update(samples)        # {"loss": ..., "grad_norm": ..., "samples": ..., "tokens": ...}

Every sample's advantage applies to each token of its completion; prompt tokens (which hold the env's
observations) are never in the loss. With ``choice_logprob=True`` (choice policies, which pick one of the
admissible commands by likelihood, :class:`~rla_train.backends.choice.ChoiceBackend`) the log-probability in TRL's
loss is instead the choice's: ``log softmax_j(log p(candidate_j | prompt) / T)`` at the chosen candidate (``T`` =
``args.temperature``, the temperature the choice was sampled at), one
"token" per sample, so the gradient goes to what tells the chosen command from the other admissible ones
rather than to the tokens they share. Samples with a zero advantage carry no gradient in GRPO and are
dropped before the forward pass. Micro-batches of ``per_device_train_batch_size`` accumulate into one
optimizer step per mini-batch: ``mini_batches`` slices of the samples, each its own optimizer step (the
RLAnything release takes 4 per training step), repeated ``num_iterations`` times. With more than one
optimizer step per update the clipped ratio is taken against the log-probabilities from before the first.

Generation with vLLM (``args.use_vllm``): TRL's ``GRPOTrainer.__init__`` builds ``self.vllm_generation`` (a
``trl.generation.vllm_generation.VLLMGeneration``, colocated or a ``trl vllm-serve`` server, which
:class:`~rla_train.backends.trl_vllm.TRLVLLMBackend` generates with); :meth:`SampleTrainer.update` pushes the
new weights into it after its optimizer steps (:meth:`SampleTrainer.sync_generation_weights`). With
``vllm_importance_sampling_correction`` (TRL's default) each sample's loss is weighted by the ratio between the
trainer's pre-update log-probabilities and the sampler's (``Sample.logprobs``), truncated or masked as
``vllm_importance_sampling_mode`` says (:func:`rla_train.signals.sampling_correction.sampling_ratios`).

KL penalty (``beta > 0``), measured with TRL's k3 estimator against ``kl_reference``: ``"initial"`` (TRL's
reference model, a frozen copy of the model as it was built) or ``"pre_update"`` (the policy before this
update's first optimizer step, as the release does; no reference copy is kept).

TRL internals this module relies on (checked against trl 1.16; a test checks that each still exists):

* :data:`TRL_LOSS_INPUTS`: the batch keys ``GRPOTrainer.compute_loss`` / ``_compute_loss`` read, with
  ``current_gradient_accumulation_steps`` (set here per optimizer step) as the loss normaliser;
* :data:`TRL_METHODS`: ``_get_per_token_logps_and_entropies`` (called, and overridden for choice
  log-probabilities), ``_prepare_inputs`` (overridden: the inputs arrive generated and scored), the loss;
* :data:`TRL_ATTRIBUTES`: ``beta`` and ``ref_model`` (None when beta is 0), ``num_iterations``,
  ``_metrics["train"]``;
* torch's ``LRScheduler._last_lr``, set when a resume changes the peak learning rate and when the trust region
  (``max_update_kl``) unscales a halved step.

Importing this module imports torch, datasets and trl: the co-trainer imports it where it builds its trainers.
"""

from __future__ import annotations

import contextlib
import copy
import math
from collections.abc import Sequence
from typing import Any

import torch
from datasets import Dataset
from trl import GRPOTrainer

from rla_train.backends.choice import ChoiceBackend, score_each_state_once
from rla_train.backends.hf import TransformersBackend
from rla_train.cotrainer.distributed import Ranks, aligned_micro_batches
from rla_train.signals.samples import Sample
from rla_train.signals.sampling_correction import sampling_ratios

__all__ = ["SampleTrainer", "pad_samples", "unused_reward", "TRL_LOSS_INPUTS", "TRL_METHODS", "TRL_ATTRIBUTES"]

TRL_LOSS_INPUTS = ("prompt_ids", "prompt_mask", "completion_ids", "completion_mask", "advantages",
                   "num_items_in_batch", "old_per_token_logps", "ref_per_token_logps")
"""The batch keys TRL's GRPO loss reads (:func:`pad_samples` makes the first six; the update adds the last two)."""

TRL_METHODS = ("compute_loss", "_compute_loss", "_get_per_token_logps_and_entropies", "_prepare_inputs",
               "compute_loss_context_manager", "create_optimizer_and_scheduler")
"""``GRPOTrainer`` methods :class:`SampleTrainer` calls or overrides (the private ones may change with TRL)."""

TRL_ATTRIBUTES = ("beta", "ref_model", "num_iterations", "_metrics", "use_vllm", "vllm_importance_sampling_correction",
                  "vllm_importance_sampling_mode", "vllm_importance_sampling_clip_min",
                  "vllm_importance_sampling_clip_max")
"""Attributes ``GRPOTrainer.__init__`` sets that :class:`SampleTrainer` reads (and ``vllm_generation`` with
``use_vllm``)."""

PADDING = "padding"
"""The key that marks a padding micro-batch (data-parallel ranks with fewer samples than the busiest; no gradient)."""

ROW_SCALE = "row_scale"
"""The key of a data-parallel micro-batch's factor from its padded row count back to its real rows."""

ROW_MEAN_LOSSES = ("grpo", "sapo", "dr_grpo", "luspo")
"""TRL loss types that average over a micro-batch's rows (padding rows would dilute them; the others count tokens)."""

NO_STEP = {"loss": 0.0, "grad_norm": 0.0, "tokens": 0.0}
"""The metrics of an update that took no optimizer step with a real sample (copied where used, never changed)."""

CHOICE_BEFORE = "choice_before"
"""The key under which a choice batch keeps its rows' choice distributions from before the update (for the metrics)."""

BEHAVIOUR_LOGPS = "behaviour_logps"
"""The key of a choice batch's (rows, 1) log-probabilities of the chosen candidates under the policy that sampled
them (the samples' ``choice_logprobs``): the clipped ratio's old policy, without scoring the states again."""

NOT_LOSS_INPUTS = ("choice_rows", "sampler_logprobs", PADDING, ROW_SCALE, CHOICE_BEFORE, BEHAVIOUR_LOGPS)
"""Batch keys kept for SampleTrainer's own use and left out of what TRL's loss receives."""

CHOICE_SHIFT_ROWS = 128
"""At most this many rows (whole micro-batches, evenly spaced) are scored again after an update for its choice-shift
metrics (``choice_kl``, ``chosen_prob_change*``): an estimate over a sample of the update's states, one forward pass
over ~128 rows instead of all of them."""


def unused_reward(prompts, completions, **kwargs) -> list[float]:
    """A placeholder reward function: GRPOTrainer requires one, but SampleTrainer's samples carry their advantages."""
    return [0.0] * len(prompts)


def pad_samples(samples: Sequence[Sample], pad_token_id: int, device=None) -> dict[str, Any]:
    """The tensors TRL's GRPO loss reads: prompts left-padded, completions right-padded, masks, advantages."""
    prompt_width = max(len(s.prompt_ids) for s in samples)
    completion_width = max(len(s.completion_ids) for s in samples)
    prompt_ids = torch.full((len(samples), prompt_width), pad_token_id, dtype=torch.long)
    prompt_mask = torch.zeros((len(samples), prompt_width), dtype=torch.long)
    completion_ids = torch.full((len(samples), completion_width), pad_token_id, dtype=torch.long)
    completion_mask = torch.zeros((len(samples), completion_width), dtype=torch.long)
    for row, sample in enumerate(samples):
        if sample.prompt_ids:
            prompt_ids[row, prompt_width - len(sample.prompt_ids):] = torch.tensor(sample.prompt_ids)
            prompt_mask[row, prompt_width - len(sample.prompt_ids):] = 1
        completion_ids[row, : len(sample.completion_ids)] = torch.tensor(sample.completion_ids)
        completion_mask[row, : len(sample.completion_ids)] = 1
    advantages = torch.tensor([float(s.advantage) for s in samples], dtype=torch.float32)
    batch = {"prompt_ids": prompt_ids, "prompt_mask": prompt_mask, "completion_ids": completion_ids,
             "completion_mask": completion_mask, "advantages": advantages,
             "num_items_in_batch": completion_mask.sum()}
    return {k: v.to(device) if device is not None else v for k, v in batch.items()}


class SampleTrainer(GRPOTrainer):
    """A ``GRPOTrainer`` that trains on samples the caller collected and scored (see the module docstring).

    Args:
        model: the model to train (a ``PreTrainedModel``; generation backends may share it).
        tokenizer: its tokenizer (the pad id pads the batches).
        args: a ``trl.GRPOConfig`` (learning rate, scheduler, loss type, clipping ``epsilon``, ``beta``,
            ``per_device_train_batch_size`` = micro-batch size, ``max_grad_norm``, ...).
        total_steps: updates planned (the learning-rate schedule spans ``total_steps * num_iterations``
            optimizer steps).
        sampled_by_these_weights: whether the samples' ``choice_logprobs`` come from the model's weights as they
            are when this trainer updates it, so that they can serve as the ratio's old policy; False when another
            trainer changes the same model in between (``reward_model.model=same-as-policy``: the judge votes before
            the policy's update), and then the states are scored again.
    """

    def __init__(self, model, tokenizer, args, *, total_steps: int, choice_logprob: bool = False,
                 mini_batches: int = 1, kl_reference: str = "initial", sampled_by_these_weights: bool = True,
                 max_update_kl: float | None = None, update_backtracks: int = 3):
        if total_steps < 1:
            raise ValueError(f"total_steps must be >= 1, got {total_steps}")
        if type(mini_batches) is not int or mini_batches < 1:
            raise ValueError(f"mini_batches must be an int >= 1 (optimizer steps per pass), got {mini_batches!r}")
        if kl_reference not in ("initial", "pre_update"):
            raise ValueError(f"kl_reference must be 'initial' or 'pre_update', got {kl_reference!r}")
        if max_update_kl is not None and not (choice_logprob and float(max_update_kl) > 0):
            raise ValueError("max_update_kl bounds the choice distribution's KL per update: it needs choice_logprob=True "
                             f"and a value > 0, got {max_update_kl!r} with choice_logprob={choice_logprob}")
        if type(update_backtracks) is not int or update_backtracks < 0:
            raise ValueError(f"update_backtracks must be an int >= 0, got {update_backtracks!r}")
        beta = float(args.beta)
        if kl_reference == "pre_update" and beta:
            args = copy.copy(args)  # the caller's config stays as given
            args.beta = 0.0  # TRL then keeps no reference copy; the KL is put back below (self.beta)
        if args.steps_per_generation not in (None, 1) or args.gradient_accumulation_steps != 1:
            raise ValueError("SampleTrainer accumulates all samples of an update into one optimizer step "
                             "(micro-batches of per_device_train_batch_size); leave gradient_accumulation_steps and "
                             f"steps_per_generation at 1, got {args.gradient_accumulation_steps} and "
                             f"{args.steps_per_generation}")
        if args.use_vllm and choice_logprob:
            raise ValueError("choice_logprob=True scores candidates with the trained model itself; it does not "
                             "combine with use_vllm (vLLM generates free text)")
        placeholder = Dataset.from_dict({"prompt": ["unused"] * max(2, args.num_generations)})
        super().__init__(model=model, reward_funcs=[unused_reward], args=args, train_dataset=placeholder,
                         processing_class=tokenizer)
        self.beta, self.kl_reference, self.mini_batches = beta, kl_reference, mini_batches
        self.total_steps = int(total_steps)
        self.create_optimizer_and_scheduler(
            num_training_steps=self.total_steps * max(1, self.num_iterations) * self.mini_batches)
        self.model, self.optimizer = self.accelerator.prepare(self.model, self.optimizer)
        self.model_wrapped = self.model
        self.choice_logprob = bool(choice_logprob)
        self.sampled_by_these_weights = bool(sampled_by_these_weights)
        self.choice_shift_rows = CHOICE_SHIFT_ROWS  # rows scored after an update for its choice-shift metrics
        self.max_update_kl = None if max_update_kl is None else float(max_update_kl)
        self.update_backtracks = update_backtracks
        self._choice_rows = None  # the current micro-batch's (prompt ids, candidate ids, chosen index)
        self._last_choice_log_probs: list[list[float]] = []  # its rows' choice distributions (log), last computed
        if self.choice_logprob:
            self._scorer = ChoiceBackend(TransformersBackend(self.accelerator.unwrap_model(self.model), tokenizer),
                                         method="packed")

    def _prepare_inputs(self, inputs):
        """Inputs arrive generated and scored: nothing to generate here."""
        return inputs

    def update(self, samples: Sequence[Sample], *, passes: int = 1) -> dict[str, float]:
        """``passes x num_iterations`` passes over ``samples`` (zero-advantage ones dropped), ``mini_batches``
        optimizer steps each; returns the metrics of the last step.

        With more than one optimizer step, the log-probabilities before the first (those of the policy that
        sampled them) are the ``old`` ones of the clipped ratio of every step, as in TRL's own multi-iteration
        GRPO: later steps are clipped. ``passes`` (e.g. ``reward_model.updates_per_step``) is how to take more
        steps on the same samples; calling :meth:`update` again would restart the ratio at 1 (no trust region).

        With ``choice_logprob`` the metrics also say how far the whole update moved the choice distributions of
        the samples' states (one more forward pass, no gradient, over :data:`CHOICE_SHIFT_ROWS` of them; the
        samples' own ``choice_logprobs`` are the distributions before): ``choice_kl``, ``chosen_prob_change``,
        ``chosen_prob_change_pos_adv`` and ``chosen_prob_change_neg_adv`` (see :meth:`_choice_shift`). ``clip_fraction``
        is the share of tokens TRL's clipping held back in the last optimizer step (0 in a first step: ratio 1).
        """
        if type(passes) is not int or passes < 1:
            raise ValueError(f"passes must be an int >= 1 (optimisation passes over the samples), got {passes!r}")
        kept = [s for s in samples if s.advantage != 0 and s.completion_ids]
        metrics = {"samples": float(len(kept)), "dropped_zero_advantage": float(len(samples) - len(kept))}
        ranks = Ranks(self.accelerator.num_processes, self.accelerator.process_index)
        if ranks.distributed:  # every rank runs as many micro-batches as the busiest, or a collective hangs
            aligned = aligned_micro_batches(ranks.gather(len(kept)), self.mini_batches,
                                            max(1, int(self.args.per_device_train_batch_size)))
        if not (aligned[0] if ranks.distributed else kept):
            return {**metrics, **NO_STEP}
        parts = min(self.mini_batches, len(kept))
        bounds = [round(k * len(kept) / parts) for k in range(parts + 1)] if kept else [0]
        if self.choice_logprob:  # samples of one state side by side, so a micro-batch scores each state once
            kept = [s for a, b in zip(bounds, bounds[1:]) for s in _states_together(kept[a:b])]
        if ranks.distributed:
            steps = self._aligned_steps([kept[a:b] for a, b in zip(bounds, bounds[1:])], *aligned, ranks=ranks,
                                        filler=kept[0] if kept else self._filler_sample(samples))
        else:
            steps = [self._micro_batches(kept[a:b]) for a, b in zip(bounds, bounds[1:])]
        self.model.train()
        iterations = self.num_iterations * passes
        if (iterations * len(steps) > 1 or (self.beta and self.kl_reference == "pre_update")
                or self.corrects_sampling):
            self._store_old_logps([batch for batches in steps for batch in batches])
        if self.beta and self.kl_reference == "initial":
            self._store_ref_logps([batch for batches in steps for batch in batches])
        all_batches = [batch for batches in steps for batch in batches]
        rows = sum(len(batch.get("choice_rows") or ()) for batch in all_batches)
        shifted = all_batches[::max(1, -(-rows // self.choice_shift_rows))]  # the micro-batches the shift metrics read
        before = self._choice_snapshot(shifted, stored=True) if self.choice_logprob else None
        if self.max_update_kl is None:
            step = self._passes(steps, iterations)
            if before is not None:
                metrics.update(self._choice_shift(shifted, before))
        else:
            step, shift = self._bounded_passes(steps, iterations, shifted, before, ranks)
            metrics.update(shift)
        self.sync_generation_weights()
        trl_metrics = {k: v[-1] for k, v in self._metrics["train"].items() if v and isinstance(v[-1], float)}
        # the share of tokens whose ratio was clipped in the last optimizer step, over all its micro-batches
        clipped = [float(v) for v in self._metrics["train"].get("clip_ratio/region_mean", [])[-len(steps[-1]):]]
        if clipped:
            metrics["clip_fraction"] = sum(clipped) / len(clipped)
        self._metrics["train"].clear()
        return {**metrics, **step, "optimizer_steps": float(iterations * len(steps)),
                "learning_rate": float(self.lr_scheduler.get_last_lr()[0]),
                **{f"trl/{k}": v for k, v in trl_metrics.items() if math.isfinite(v)}}

    def _passes(self, steps, iterations: int) -> dict[str, float]:
        """``iterations`` passes over the update's optimizer steps; the metrics of the last step with real samples."""
        step = dict(NO_STEP)
        for _ in range(iterations):
            for batches in steps:
                result = self._optimizer_step(batches)
                if any(PADDING not in batch for batch in batches):  # a step of padding alone reports nothing
                    step = result
        return step

    def _bounded_passes(self, steps, iterations: int, shifted, before, ranks: Ranks):
        """The update's passes under a trust region on the choice distribution (``max_update_kl``): a backtracking
        line search, as TRPO's.

        After the passes, the mean KL(before || after) over the shift metrics' states (of every rank, pooled, so
        that every rank decides alike and one with only padding weighs nothing) must be at most ``max_update_kl``;
        if it is not, the weights, the optimizer's moments, the schedule and the step counter go back to what they
        were, and the passes run again at half the learning rate, up to ``update_backtracks`` times. If even the
        smallest step moves too far, the update is rejected: the policy stays as it was. Adam normalises each
        weight's step by its gradient's running size, so one update can move a decision far more than its gradient
        norm says (the first step moves every weight by about the learning rate), which is what this bounds.
        Metrics: ``update_tries`` (1 = accepted as first taken), ``update_lr_factor`` (the accepted step's factor; 0
        when rejected), ``update_rejected`` and ``rejected_choice_kl`` (the KL of the last refused try).
        """
        saved = self._training_state()
        factor, refused = 1.0, float("nan")
        for attempt in range(self.update_backtracks + 1):
            if attempt:
                self._restore_training_state(saved)
                factor /= 2
            with self._learning_rate_scaled(factor):
                step = self._passes(steps, iterations)
            shift, states = self._measured_shift(shifted, before)
            kl = ranks.pooled_mean(shift.get("choice_kl", 0.0), states)
            if kl <= self.max_update_kl:
                return step, {**shift, "update_tries": float(attempt + 1), "update_lr_factor": factor,
                              "update_rejected": 0.0, **({"rejected_choice_kl": refused} if attempt else {})}
            refused = kl
        self._restore_training_state(saved)
        return step, {"choice_kl": 0.0, "choice_shift_states": float(states),
                      "update_tries": float(self.update_backtracks + 1), "update_lr_factor": 0.0,
                      "update_rejected": 1.0, "rejected_choice_kl": refused}

    def _training_state(self) -> dict[str, Any]:
        """A copy of what an update changes: the trained weights, the optimizer's state, the schedule, the step count."""
        return {"weights": [p.detach().clone() for p in self.model.parameters() if p.requires_grad],
                "optimizer": copy.deepcopy(self.optimizer.state_dict()),
                "scheduler": copy.deepcopy(self.lr_scheduler.state_dict()), "global_step": self.state.global_step}

    def _restore_training_state(self, saved: dict[str, Any]) -> None:
        with torch.no_grad():
            for parameter, value in zip((p for p in self.model.parameters() if p.requires_grad), saved["weights"]):
                parameter.copy_(value)
        self.optimizer.load_state_dict(copy.deepcopy(saved["optimizer"]))
        self.lr_scheduler.load_state_dict(copy.deepcopy(saved["scheduler"]))
        self.state.global_step = saved["global_step"]

    @contextlib.contextmanager
    def _learning_rate_scaled(self, factor: float):
        """The schedule's learning rates times ``factor`` while the block runs (the schedule multiplies its base rates,
        as every ``LambdaLR`` of transformers' schedules does), then unscaled where the schedule has got to."""
        if factor == 1.0:
            yield
            return
        bases = list(self.lr_scheduler.base_lrs)
        self.lr_scheduler.base_lrs = [base * factor for base in bases]
        for group in self.optimizer.param_groups:
            group["lr"] *= factor
        try:
            yield
        finally:
            self.lr_scheduler.base_lrs = bases
            for group in self.optimizer.param_groups:
                group["lr"] /= factor
            self.lr_scheduler._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    @property
    def corrects_sampling(self) -> bool:
        """Whether the loss is weighted by the trainer-to-sampler importance ratio (vLLM generates, TRL's correction on)."""
        return bool(self.use_vllm and self.vllm_importance_sampling_correction)

    def sync_generation_weights(self) -> None:
        """Push the current weights into the vLLM engine that generates (nothing to do without vLLM).

        :meth:`update` calls it after its optimizer steps; call it after changing the weights any other way
        (loading a checkpoint, a supervised warm start).
        """
        if self.use_vllm:
            self.vllm_generation.sync_weights()

    def _aligned_steps(self, parts: list[list[Sample]], optimizer_steps: int, micro_batches: int, *, ranks: Ranks,
                       filler: Sample) -> list[list[dict[str, Any]]]:
        """A data-parallel rank's optimizer steps, shaped alike on every rank so that every collective meets its peers.

        ``parts`` (this rank's samples per optimizer step) grow to ``optimizer_steps`` steps of ``micro_batches``
        micro-batches of exactly ``per_device_train_batch_size`` rows each (TRL gathers per-row metrics, and DDP
        all-reduces in every backward pass). Rows and micro-batches added for that are ``filler`` with its completion
        mask cleared: they run the forward and backward passes and add nothing to the loss; a loss that averages
        over rows is scaled back to the real rows (:data:`ROW_MEAN_LOSSES`). Token-normalised losses divide by
        the step's tokens over every rank, as TRL does.
        """
        micro = max(1, int(self.args.per_device_train_batch_size))
        parts = [*parts, *([] for _ in range(optimizer_steps - len(parts)))]
        steps = []
        for part in parts:
            chunks = [part[i:i + micro] for i in range(0, len(part), micro)]
            batches = [self._padded_batch(chunk, filler, micro) for chunk in chunks]
            batches += [{**self._padded_batch([], filler, micro), PADDING: True}
                        for _ in range(micro_batches - len(chunks))]
            steps.append(batches)
        local_tokens = [float(sum(batch["completion_mask"].sum() for batch in batches)) for batches in steps]
        step_tokens = [sum(tokens) for tokens in zip(*ranks.gather(local_tokens))]
        for batches, tokens in zip(steps, step_tokens):
            real = max(1, sum(PADDING not in batch for batch in batches))
            for batch in batches:  # TRL's token-normalised losses divide by num_items_in_batch / ranks x real batches
                batch["num_items_in_batch"] = torch.tensor(tokens / real, device=self.accelerator.device)
        return steps

    def _padded_batch(self, samples: Sequence[Sample], filler: Sample, rows: int) -> dict[str, Any]:
        """One micro-batch of ``samples`` filled up to ``rows`` rows with ``filler`` rows that carry no loss."""
        batch = self._micro_batches([*samples, *([filler] * (rows - len(samples)))], single=True)[0]
        batch["completion_mask"][len(samples):] = 0
        batch["advantages"][len(samples):] = 0.0
        if samples and len(samples) < rows and self.loss_type in ROW_MEAN_LOSSES:
            batch[ROW_SCALE] = rows / len(samples)
        return batch

    def _filler_sample(self, samples: Sequence[Sample]) -> Sample:
        """A sample to pad with on a rank that kept none: one of its own, else one end-of-sequence token."""
        usable = [s for s in samples if s.completion_ids and (not self.choice_logprob or s.alternatives)]
        if usable:
            return usable[0]
        token = self.processing_class.eos_token_id
        return Sample([token], [token], 0.0, alternatives=[[token]])

    def _micro_batches(self, samples: Sequence[Sample], *, single: bool = False) -> list[dict[str, Any]]:
        """The micro-batches of one optimizer step, their token counts normalised over the whole step
        (``single``: all ``samples`` in one micro-batch)."""
        micro = len(samples) if single else max(1, int(self.args.per_device_train_batch_size))
        pad = self.processing_class.pad_token_id
        pad = pad if pad is not None else self.processing_class.eos_token_id
        if self.choice_logprob:
            batches = [self._choice_batch(samples[i:i + micro], pad) for i in range(0, len(samples), micro)]
        else:
            batches = [pad_samples(samples[i:i + micro], pad, device=self.accelerator.device)
                       for i in range(0, len(samples), micro)]
        if self.corrects_sampling:
            for batch, start in zip(batches, range(0, len(samples), micro)):
                batch["sampler_logprobs"] = [s.logprobs for s in samples[start:start + micro]]
        # Token-normalised losses (dapo, ...) divide by num_items_in_batch x accumulation steps (TRL's
        # generation-batch convention): give each micro-batch total tokens / micro-batches, so that the
        # accumulated loss is normalised by the step's total token count exactly.
        total_tokens = sum(batch["num_items_in_batch"] for batch in batches)
        for batch in batches:
            batch["num_items_in_batch"] = total_tokens / len(batches)
        return batches

    def _logps(self, model, batch):
        """Per-token log-probabilities of a batch's completions under ``model`` (no gradient)."""
        ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1)
        mask = torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1)
        self._choice_rows = batch.get("choice_rows")
        try:
            with torch.no_grad():
                return self._get_per_token_logps_and_entropies(model, ids, mask, batch["completion_ids"].size(1))[0]
        finally:
            self._choice_rows = None

    def _choice_snapshot(self, batches, *, stored: bool = False) -> list[list[list[float]]]:
        """Each real row's choice distribution (log-probabilities over its candidates) under the current weights.

        ``stored``: take the ones :meth:`_store_old_logps` kept when it ran (the same weights), else score again.
        """
        snapshot = []
        for batch in batches:
            if not (stored and CHOICE_BEFORE in batch):
                self._logps(self.model, batch)
                batch[CHOICE_BEFORE] = self._last_choice_log_probs
            snapshot.append(batch.pop(CHOICE_BEFORE))
        return snapshot

    def _choice_shift(self, batches, before) -> dict[str, float]:
        """How far this update moved the choice distributions of its batch's states (:mod:`rla_train.signals.policy_shift`):
        ``choice_kl`` (mean KL(before || after), nats), ``chosen_prob_change`` and its ``_pos_adv`` / ``_neg_adv``
        split by the sign of the sample's advantage (a group without a sample is left out), and the states each is
        over: ``choice_shift_states`` and its ``_pos_adv`` / ``_neg_adv``."""
        return self._measured_shift(batches, before)[0]

    def _measured_shift(self, batches, before) -> tuple[dict[str, float], int]:
        """:meth:`_choice_shift`'s metrics and how many states they were measured on."""
        from rla_train.signals.policy_shift import chosen_probability_change, mean_choice_kl

        after = self._choice_snapshot(batches)
        rows_before, rows_after, chosen_before, chosen_after, advantages = [], [], [], [], []
        for batch, old, new in zip(batches, before, after):
            if PADDING in batch:
                continue
            real = (batch["completion_mask"].sum(1) > 0).tolist()
            for row, (keep, (_, _, chosen)) in enumerate(zip(real, batch["choice_rows"])):
                if keep:
                    rows_before.append(old[row])
                    rows_after.append(new[row])
                    chosen_before.append(old[row][chosen])
                    chosen_after.append(new[row][chosen])
                    advantages.append(float(batch["advantages"][row]))
        kl = mean_choice_kl(rows_before, rows_after)
        change = chosen_probability_change(chosen_before, chosen_after, advantages)
        values = {"choice_kl": kl, "chosen_prob_change": change["all"],
                  "chosen_prob_change_pos_adv": change["positive_advantage"],
                  "chosen_prob_change_neg_adv": change["negative_advantage"],
                  # how many states each mean is over: what weighs a rank's means when ranks merge their metrics
                  "choice_shift_states": len(rows_before),
                  "choice_shift_states_pos_adv": sum(a > 0 for a in advantages),
                  "choice_shift_states_neg_adv": sum(a < 0 for a in advantages)}
        return {k: float(v) for k, v in values.items() if v is not None}, len(rows_before)

    def _store_old_logps(self, batches) -> None:
        """Keep the pre-update log-probabilities (the clipped ratio's old policy; the pre_update KL's reference):
        a choice batch whose samples carry their sampler's choice distributions takes those (the policy that
        sampled them is the one before this update), any other is scored."""
        for batch in batches:
            if BEHAVIOUR_LOGPS in batch:
                batch["old_per_token_logps"] = batch[BEHAVIOUR_LOGPS]
            else:
                batch["old_per_token_logps"] = self._logps(self.model, batch)
                if self.choice_logprob:
                    batch[CHOICE_BEFORE] = self._last_choice_log_probs
            if self.beta and self.kl_reference == "pre_update":
                batch["ref_per_token_logps"] = batch["old_per_token_logps"]
            if self.corrects_sampling:
                batch["importance_sampling_ratio"] = self._sampling_ratios(batch)

    def _sampling_ratios(self, batch) -> torch.Tensor:
        """TRL's trainer-to-sampler importance ratios of a batch: (rows, tokens), or (rows, 1) per sequence.

        A sample without the sampler's log-probabilities gets ratio 1 (no correction).
        """
        old, mask = batch["old_per_token_logps"].tolist(), batch["completion_mask"].tolist()
        rows = []
        for trainer_row, mask_row, sampled in zip(old, mask, batch["sampler_logprobs"]):
            length = int(sum(mask_row))
            sampled = list(sampled) if sampled else [float("nan")] * length
            rows.append(sampling_ratios(trainer_row[:length], sampled[:length], mode=self.vllm_importance_sampling_mode,
                                        clip_min=self.vllm_importance_sampling_clip_min,
                                        clip_max=self.vllm_importance_sampling_clip_max))
        # one ratio per token of the batch's completions (padding tokens and rows are masked out of the loss), or one
        # per sequence
        width = batch["completion_mask"].size(1) if self.vllm_importance_sampling_mode.startswith("token") else 1
        padded = [row + [1.0] * (width - len(row)) for row in rows]
        return torch.tensor(padded, dtype=batch["old_per_token_logps"].dtype, device=batch["old_per_token_logps"].device)

    def _store_ref_logps(self, batches) -> None:
        """The reference model's log-probabilities (kl_reference="initial"; TRL's frozen copy)."""
        if self.ref_model is None:
            raise RuntimeError("beta > 0 with kl_reference='initial' needs TRL's reference model, which was not "
                               "built; use kl_reference='pre_update' or beta=0")
        if self.choice_logprob:
            scorer = self._scorer.backend.model
            self._scorer.backend.model = self.ref_model
        try:
            for batch in batches:
                batch["ref_per_token_logps"] = self._logps(self.ref_model, batch)
        finally:
            if self.choice_logprob:
                self._scorer.backend.model = scorer

    def _choice_batch(self, samples, pad: int) -> dict[str, Any]:
        """A micro-batch whose one "completion token" per sample is its choice among its alternatives."""
        rows = []
        for sample in samples:
            alternatives = [list(a) for a in (sample.alternatives or ())]
            if list(sample.completion_ids) not in alternatives:
                raise ValueError("choice_logprob=True needs each sample's alternatives (the candidates a choice "
                                 "policy chose among) with its completion among them; got a sample without")
            rows.append((list(sample.prompt_ids), alternatives, alternatives.index(list(sample.completion_ids))))
        single = [Sample(s.prompt_ids, [s.completion_ids[-1]], s.advantage) for s in samples]
        batch = pad_samples(single, pad, device=self.accelerator.device)
        batch["choice_rows"] = rows
        behaviour = [_behaviour(sample, len(alternatives), chosen) for sample, (_, alternatives, chosen)
                     in zip(samples, rows)]
        if self.sampled_by_these_weights and samples and all(b is not None for b in behaviour):
            batch[CHOICE_BEFORE] = [list(map(float, sample.choice_logprobs)) for sample in samples]
            batch[BEHAVIOUR_LOGPS] = torch.tensor([[b] for b in behaviour], dtype=torch.float32,
                                                  device=self.accelerator.device)
        return batch

    def _get_per_token_logps_and_entropies(self, model, input_ids, attention_mask, logits_to_keep, *args,
                                           **kwargs):
        """TRL's per-token log-probabilities, or with ``choice_logprob`` the choice's (one per sample).

        Both are of the distribution the samples were drawn from at ``args.temperature`` (TRL divides the logits by
        it; the choice's is ``log softmax(scores / T)``), so the clipped ratio compares like with like.
        """
        if self._choice_rows is None:
            return super()._get_per_token_logps_and_entropies(model, input_ids, attention_mask, logits_to_keep,
                                                              *args, **kwargs)
        rows = self._choice_rows
        # a state that occurs twice is scored once (its gradient adds up)
        scores = score_each_state_once([p for p, _, _ in rows], [c for _, c, _ in rows],
                                       self._scorer.packed_token_logprobs)
        logps, entropies, distributions = [], [], []
        for (_, _, chosen), candidates in zip(rows, scores):
            # the distribution the choice was sampled from: softmax(scores / T) (ChoiceBackend, VerdictChoiceBackend)
            logits = torch.stack([c.sum() for c in candidates]) / self.temperature
            log_probs = torch.log_softmax(logits, dim=0)
            logps.append(log_probs[chosen])
            entropies.append(-(log_probs.exp() * log_probs).sum())
            distributions.append(torch.log_softmax(logits.detach().double(), dim=0).tolist())
        self._last_choice_log_probs = distributions
        logps, entropies = torch.stack(logps).unsqueeze(1), torch.stack(entropies).unsqueeze(1).detach()
        return logps, entropies, None

    def _micro_batch_weights(self, batches) -> list[float]:
        """Each micro-batch's loss factor, so that one optimizer step weighs every row (or token) alike.

        TRL's row-mean losses (:data:`ROW_MEAN_LOSSES`) average over a micro-batch's rows and divide by the number
        of micro-batches, so 10 rows in micro-batches of 8 and 2 gave each of the last 2 rows 8/2 = 4 times the
        weight of the others; ``bnpo`` does the same with tokens. The factor ``real rows of the micro-batch x
        micro-batches / real rows of the step`` (tokens for bnpo) makes the accumulated loss the mean over all the
        step's rows, however they are split. Token-normalised losses (dapo, ...) already divide by the step's
        tokens: factor 1. Padding micro-batches get 0 (their loss is zeroed anyway).
        """
        real = [batch for batch in batches if PADDING not in batch]
        if self.loss_type in ROW_MEAN_LOSSES:
            sizes = [float((batch["completion_mask"].sum(1) > 0).sum()) for batch in real]
        elif self.loss_type == "bnpo":
            sizes = [float(batch["completion_mask"].sum()) for batch in real]
        else:
            return [1.0] * len(batches)
        total = sum(sizes)
        weights = iter(size * len(real) / total if total else 1.0 for size in sizes)
        return [0.0 if PADDING in batch else next(weights) for batch in batches]

    def _optimizer_step(self, batches) -> dict[str, float]:
        """Accumulate the GRPO loss over the micro-batches, clip, step the optimizer and the schedule.

        The step starts from no gradient: whatever an earlier backward pass left on the model (a warm start's last
        step, in the same run) is not added to this one's, so a run resumed from its step-0 checkpoint takes the
        same first step as one never stopped."""
        self.optimizer.zero_grad(set_to_none=True)
        loss_total, tokens = 0.0, 0
        self.current_gradient_accumulation_steps = max(1, sum(PADDING not in batch for batch in batches))
        for batch, weight in zip(batches, self._micro_batch_weights(batches)):
            self._choice_rows = batch.get("choice_rows")
            try:
                with self.compute_loss_context_manager():
                    loss = self.compute_loss(self.model, {k: v for k, v in batch.items() if k not in NOT_LOSS_INPUTS})
            finally:
                self._choice_rows = None
            if PADDING in batch:  # the backward pass still runs: DDP all-reduces gradients in it
                loss = loss * 0.0
            else:
                loss = loss * batch.get(ROW_SCALE, 1.0) * weight
                tokens += int(batch["completion_mask"].sum())
                loss_total += float(loss.detach())
            self.accelerator.backward(loss)
        if self.choice_logprob and self.accelerator.num_processes > 1:
            self._average_gradients()
        grad_norm = float("nan")
        if self.args.max_grad_norm and self.args.max_grad_norm > 0:
            grad_norm = float(self.accelerator.clip_grad_norm_(self.model.parameters(), self.args.max_grad_norm))
        self.optimizer.step()
        self.lr_scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.state.global_step += 1
        return {"loss": loss_total, "grad_norm": grad_norm, "tokens": float(tokens)}

    def _average_gradients(self) -> None:
        """Average the gradients over the data-parallel ranks by hand.

        Choice log-probabilities run the model's base and output layer directly (not the DDP wrapper's forward), so
        DDP's own all-reduce never fires for them.
        """
        import torch.distributed as dist

        for parameter in self.model.parameters():
            if parameter.requires_grad:
                if parameter.grad is None:
                    parameter.grad = torch.zeros_like(parameter)
                dist.all_reduce(parameter.grad)
                parameter.grad /= self.accelerator.num_processes

    def state_dicts(self) -> dict[str, Any]:
        """Optimizer, scheduler and step counter, for a checkpoint."""
        return {"optimizer": self.optimizer.state_dict(), "scheduler": self.lr_scheduler.state_dict(),
                "global_step": self.state.global_step}

    def load_state_dicts(self, states: dict[str, Any]) -> None:
        """Put back what :meth:`state_dicts` returned.

        The schedule continues from where it was; its peak learning rate is this trainer's
        ``args.learning_rate`` (the saved scheduler state would otherwise bring back the one the run
        started with, and a ``--resume`` with another learning rate would silently keep the old one).
        """
        self.optimizer.load_state_dict(states["optimizer"])
        self.lr_scheduler.load_state_dict(states["scheduler"])
        self.state.global_step = int(states["global_step"])
        peak = float(self.args.learning_rate)
        if any(base != peak for base in self.lr_scheduler.base_lrs):
            for group, base in zip(self.optimizer.param_groups, self.lr_scheduler.base_lrs):
                group["lr"] = group["lr"] * peak / base if base else peak
                group["initial_lr"] = peak
            self.lr_scheduler.base_lrs = [peak] * len(self.optimizer.param_groups)
            self.lr_scheduler._last_lr = [group["lr"] for group in self.optimizer.param_groups]


def _states_together(samples: Sequence[Sample]) -> list[Sample]:
    """``samples`` with those of one state (prompt and candidates) side by side, states in order of first appearance."""
    groups: dict[tuple, list[Sample]] = {}
    for sample in samples:
        key = (tuple(sample.prompt_ids), tuple(map(tuple, sample.alternatives or ())))
        groups.setdefault(key, []).append(sample)
    return [sample for group in groups.values() for sample in group]


def _behaviour(sample: Sample, candidates: int, chosen: int) -> float | None:
    """The sampler's log-probability of the sample's choice, when it carries a usable choice distribution."""
    logprobs = sample.choice_logprobs
    if logprobs is None or len(logprobs) != candidates or not math.isfinite(float(logprobs[chosen])):
        return None
    return float(logprobs[chosen])
