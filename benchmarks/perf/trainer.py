"""Benchmark: seconds per policy update, :class:`SampleTrainer` vs a plain ``trl.GRPOTrainer``, rollout excluded.

* **step_time_ratio_vs_trl**: one optimizer step on the same batch on both sides: 16 sequences of a
  200-token prompt and a 16-token completion (2 prompts x 8 generations), micro-batches of 8 accumulated
  twice, the tiny random-init Qwen2 of :func:`rla_train.backends.tiny.tiny_model_path`, float32, CPU, one thread.
  Both trainers get the same ``GRPOConfig``: TRL's default loss (``dapo``), ``beta=0`` (no reference
  model), clipping on, gradient checkpointing off, constant learning rate, AdamW, ``max_grad_norm=1``;
  only ``gradient_accumulation_steps`` differs (TRL 2, SampleTrainer 1, see :func:`_grpo_args`).

  *Ours*: the whole :meth:`SampleTrainer.update` call on 16 ready :class:`Sample` objects (padding,
  forward, backward, clipping, optimizer and scheduler step, metrics).
  *TRL*: ``GRPOTrainer.train()``; a callback times each optimizer step from ``on_step_begin`` to
  ``on_step_end`` (both ``training_step`` calls, clipping, optimizer and scheduler step, ``zero_grad``) and
  subtracts the time spent in ``_generate_and_score_completions`` inside that window (generation, rewards,
  advantages: the rollout, which rla does elsewhere). Its generation is forced to exactly 16 new tokens
  (``min_new_tokens``) so both sides train on the same shapes; its rewards are random, so advantages
  are non-zero as ours are.

  Rounds alternate the two sides (ABBA order), a few optimizer steps each, after a discarded warm-up
  round; the metric is the median of process CPU seconds per step (fairer than wall time on a shared
  machine; with one torch thread it is the compute of the step), wall-clock medians are given in the note. Lower is better; the goal is ours <= 1.3 x TRL (ratio >= 1/1.3).

Run it alone with ``python -m benchmarks.perf.trainer [--quick]``.
"""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.perf.report import Metric

__all__ = ["run", "step_time_ratio_vs_trl", "RandomReward"]

PROMPTS_PER_STEP = 2
GENERATIONS = 8          # completions per prompt: 2 x 8 = 16 sequences per optimizer step
MICRO_BATCH = 8          # per_device_train_batch_size on both sides: 2 micro-batches per step
PROMPT_TOKENS = 200
COMPLETION_TOKENS = 16
BATCH = PROMPTS_PER_STEP * GENERATIONS
GOAL_MAX_SLOWDOWN = 1.3  # ours may take at most 1.3 x TRL's time per step


class RandomReward:
    """A reward function for the plain GRPOTrainer: uniform noise, so every group has non-zero advantages."""

    __name__ = "random_reward"  # TRL names reward columns after the function

    def __init__(self, seed: int = 0):
        self._rng = random.Random(seed)

    def __call__(self, prompts, completions, **kwargs) -> list[float]:
        return [self._rng.random() for _ in prompts]


def _prompt_ids(tokenizer, count: int, length: int) -> list[list[int]]:
    """``count`` distinct token-id prompts of exactly ``length`` tokens that survive decode -> encode unchanged.

    TRL tokenizes text prompts itself, so each one is a window of the tiny model's corpus whose decoded
    text re-encodes to the same ids.
    """
    from rla_train.backends.tiny import default_corpus

    ids = tokenizer("".join(default_corpus(seed=1)), add_special_tokens=False)["input_ids"]
    prompts: list[list[int]] = []
    for start in range(0, len(ids) - length, 97):
        window = ids[start:start + length]
        if tokenizer(tokenizer.decode(window), add_special_tokens=False)["input_ids"] == window:
            prompts.append(window)
            if len(prompts) == count:
                return prompts
    raise RuntimeError(f"found only {len(prompts)} of {count} round-tripping {length}-token prompts in the corpus")


def _grpo_args(out_dir: str, accumulation: int):
    """The GRPOConfig both trainers get (TRL's defaults where the comparison does not need another value).

    ``accumulation``: TRL's ``gradient_accumulation_steps``. The plain trainer needs 2 (16 sequences in
    micro-batches of 8); SampleTrainer takes 1, as rla's own configs do: it accumulates however many
    micro-batches its samples fill, and a larger value would change its ``dapo`` loss normalisation
    (``steps_per_generation``), not its cost.
    """
    from trl import GRPOConfig

    return GRPOConfig(
        output_dir=out_dir, per_device_train_batch_size=MICRO_BATCH, gradient_accumulation_steps=accumulation,
        num_generations=GENERATIONS, max_completion_length=COMPLETION_TOKENS,
        generation_kwargs={"min_new_tokens": COMPLETION_TOKENS}, beta=0.0, activation_checkpointing=False,
        learning_rate=1e-5, lr_scheduler_type="constant",
        max_grad_norm=1.0, use_cpu=True, bf16=False, fp16=False, report_to="none", save_strategy="no",
        logging_steps=1, disable_tqdm=True, seed=0, dataloader_num_workers=0)


def _load(path: Path):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    return AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32), AutoTokenizer.from_pretrained(path)


class _TRLSide:
    """A plain GRPOTrainer whose optimizer steps are timed, minus its rollout (see the module docstring)."""

    def __init__(self, model_path: Path, prompts: list[list[int]], out_dir: str):
        from datasets import Dataset
        from transformers import PrinterCallback, TrainerCallback
        from trl import GRPOTrainer

        model, tokenizer = _load(model_path)
        dataset = Dataset.from_dict({"prompt": [tokenizer.decode(p) for p in prompts]})
        self.trainer = GRPOTrainer(model=model, reward_funcs=[RandomReward()], train_dataset=dataset,
                                   args=_grpo_args(out_dir, BATCH // MICRO_BATCH), processing_class=tokenizer)
        self.cpu_steps: list[float] = []
        self.wall_steps: list[float] = []
        self.shapes: set[tuple[int, int]] = set()
        self._rollout = [0.0, 0.0]  # (cpu, wall) seconds in the rollout during the current step
        generate = self.trainer._generate_and_score_completions

        def timed_generate(inputs):
            cpu, wall = time.process_time(), time.perf_counter()
            batch = generate(inputs)
            self._rollout[0] += time.process_time() - cpu
            self._rollout[1] += time.perf_counter() - wall
            self.shapes.add((batch["prompt_ids"].shape[1], int(batch["completion_mask"].sum(1).min())))
            return batch

        self.trainer._generate_and_score_completions = timed_generate
        side = self

        class StepTimer(TrainerCallback):
            def on_step_begin(self, args, state, control, **kwargs):
                side._rollout = [0.0, 0.0]
                side._begin = (time.process_time(), time.perf_counter())

            def on_step_end(self, args, state, control, **kwargs):
                side.cpu_steps.append(time.process_time() - side._begin[0] - side._rollout[0])
                side.wall_steps.append(time.perf_counter() - side._begin[1] - side._rollout[1])

        self.trainer.add_callback(StepTimer())
        self.trainer.remove_callback(PrinterCallback)  # its per-step log dicts would bury the table on stdout

    def steps(self, count: int) -> None:
        self.trainer.args.max_steps = count
        self.trainer.train()


class _OurSide:
    """A SampleTrainer updated on 16 ready samples (2 prompts x 8 completions, advantages +-1), timed per call."""

    def __init__(self, model_path: Path, prompts: list[list[int]], out_dir: str, total_steps: int):
        from rla_train.cotrainer.policy_update import SampleTrainer
        from rla_train.signals.samples import Sample

        model, tokenizer = _load(model_path)
        self.trainer = SampleTrainer(model, tokenizer, _grpo_args(out_dir, 1), total_steps=total_steps)
        rng = random.Random(0)
        vocab = range(3, len(tokenizer))  # past the pad / <|im_start|> / <|im_end|> specials
        self.samples = [Sample(prompt_ids=prompts[i % PROMPTS_PER_STEP],
                               completion_ids=[rng.choice(vocab) for _ in range(COMPLETION_TOKENS)],
                               advantage=1.0 if i % 2 else -1.0)
                        for i in range(BATCH)]
        self.cpu_steps: list[float] = []
        self.wall_steps: list[float] = []

    def steps(self, count: int) -> None:
        for _ in range(count):
            cpu, wall = time.process_time(), time.perf_counter()
            metrics = self.trainer.update(self.samples)
            self.cpu_steps.append(time.process_time() - cpu)
            self.wall_steps.append(time.perf_counter() - wall)
            if metrics["samples"] != len(self.samples):
                raise RuntimeError(f"SampleTrainer kept {metrics['samples']} of {len(self.samples)} samples")


def _versions() -> str:
    from importlib.metadata import version

    return ", ".join(f"{name} {version(name)}" for name in ("torch", "transformers", "trl"))


def step_time_ratio_vs_trl(quick: bool) -> Metric:
    """CPU seconds per optimizer step: SampleTrainer.update vs a plain GRPOTrainer step minus its rollout."""
    import torch

    from rla_train.backends.tiny import tiny_model_path

    torch.set_num_threads(1)
    rounds, steps_per_round = (2, 2) if quick else (6, 4)
    model_path = tiny_model_path()
    with tempfile.TemporaryDirectory(prefix="rla-bench-trainer-") as out_dir:
        from transformers import AutoTokenizer

        prompts = _prompt_ids(AutoTokenizer.from_pretrained(model_path), PROMPTS_PER_STEP * 4, PROMPT_TOKENS)
        trl_side = _TRLSide(model_path, prompts, str(Path(out_dir) / "trl"))
        ours = _OurSide(model_path, prompts, str(Path(out_dir) / "ours"), total_steps=(rounds + 1) * steps_per_round)
        for side in (trl_side, ours):  # warm-up round, discarded
            side.steps(steps_per_round)
            side.cpu_steps.clear()
            side.wall_steps.clear()
        for round_index in range(rounds):  # ABBA: neither side always runs first
            order = (ours, trl_side) if round_index % 2 == 0 else (trl_side, ours)
            for side in order:
                side.steps(steps_per_round)
    expected = (PROMPT_TOKENS, COMPLETION_TOKENS)
    if trl_side.shapes != {expected}:
        raise RuntimeError(f"TRL trained on (prompt, min completion) lengths {sorted(trl_side.shapes)}, "
                           f"expected {expected}; the two sides would not be comparable")
    ours_cpu, trl_cpu = statistics.median(ours.cpu_steps), statistics.median(trl_side.cpu_steps)
    ours_wall, trl_wall = statistics.median(ours.wall_steps), statistics.median(trl_side.wall_steps)
    for side in (trl_side, ours):
        if side.trainer.model.is_activation_checkpointing:
            raise RuntimeError(f"{type(side.trainer).__name__} trained with activation checkpointing on")
    return Metric(
        "step_time_ratio_vs_trl", ours_cpu, trl_cpu, "CPU s/step", higher_is_better=False,
        goal=round(1 / GOAL_MAX_SLOWDOWN, 2),
        note=f"{_versions()}; tiny Qwen2 (CPU, 1 thread, fp32), {BATCH} seqs "
             f"({PROMPTS_PER_STEP} prompts x {GENERATIONS}) of {PROMPT_TOKENS}+{COMPLETION_TOKENS} tokens, "
             f"micro-batch {MICRO_BATCH}, loss dapo, beta 0; "
             f"SampleTrainer.update vs GRPOTrainer on_step_begin..on_step_end minus "
             f"_generate_and_score_completions; median of {len(ours.cpu_steps)} vs {len(trl_side.cpu_steps)} "
             f"steps in {rounds} ABBA rounds; wall medians {ours_wall:.4f} vs {trl_wall:.4f} s")


def run(quick: bool = False) -> list[Metric]:
    """The trainer benchmark."""
    return [step_time_ratio_vs_trl(quick)]


if __name__ == "__main__":
    from benchmarks.perf.report import format_table, machine_facts

    print(format_table(run(quick="--quick" in sys.argv), machine_facts()))
