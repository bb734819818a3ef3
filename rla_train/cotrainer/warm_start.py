"""Warm start: supervised fine-tuning of the policy on demonstrations (:mod:`rla_train.cotrainer.demonstrations`).

A from-scratch policy almost never reaches an ALFWorld goal, so RL has no signal to start from::

    dataset = expert_demonstrations("train", n_tasks=60, env="rla/AlfWorld-v0", agent=TextGameAgent())
    model = sft_warm_start(model_path, None, dataset, steps=400, lr=1e-3, batch_size=8, output_dir=tmp)

:func:`sft_warm_start` is TRL's :class:`~trl.SFTTrainer` in prompt-completion form (loss on the
completion tokens only: the command and its end-of-turn token) on CPU. :func:`choice_sft` is the listwise
alternative for a choice policy: the cross-entropy of the expert's command among all admissible commands,
each scored as :class:`~rla_train.backends.choice.ChoiceBackend` scores it when acting. :func:`choice_accuracy` is the
cheap progress metric: how often a :class:`~rla_train.backends.choice.ChoiceBackend` would pick the expert's
command on demonstration states (teacher-forced; use held-out tasks' demonstrations).
"""

from __future__ import annotations

import os
import time
from typing import Any

__all__ = ["sft_warm_start", "choice_sft", "choice_accuracy"]


def _time_limit(seconds: float):
    """A TrainerCallback that stops training once ``seconds`` have passed since training began."""
    from transformers import TrainerCallback

    class TimeLimit(TrainerCallback):
        def on_train_begin(self, args, state, control, **kwargs):
            self.started = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            if time.perf_counter() - self.started >= seconds:
                control.should_training_stop = True
            return control

    return TimeLimit()


def _progress_bar(description: str):
    """A TrainerCallback that shows one progress bar (true total: the trainer's max_steps) with the latest loss.

    It stands in for transformers' own progress and printer callbacks, which print every log dict as a line.
    """
    from tqdm.auto import tqdm
    from transformers import TrainerCallback

    class ProgressBar(TrainerCallback):
        bar = None

        def on_train_begin(self, args, state, control, **kwargs):
            self.bar = tqdm(total=state.max_steps, desc=description, unit="step", leave=False)

        def on_step_end(self, args, state, control, **kwargs):
            if self.bar is not None:
                self.bar.update(state.global_step - self.bar.n)

        def on_log(self, args, state, control, logs=None, **kwargs):
            if self.bar is not None and logs and "loss" in logs:
                self.bar.set_postfix(loss=f"{float(logs['loss']):.3f}")

        def on_train_end(self, args, state, control, **kwargs):
            if self.bar is not None:
                self.bar.close()
                self.bar = None

    return ProgressBar()


def sft_warm_start(model_path_or_model, tokenizer, dataset, *, steps: int = 300, lr: float = 1e-3,
                   batch_size: int = 8, output_dir: str | os.PathLike, time_limit_s: float | None = None,
                   max_length: int | None = 2048, seed: int = 0, progress: bool = True,
                   log_history: list | None = None, **config: Any):
    """Fine-tune a causal LM on (prompt, completion) pairs with TRL's SFTTrainer on CPU; returns the model.

    Args:
        model_path_or_model: a local model path, or a loaded causal LM (trained in place).
        tokenizer: its tokenizer (None: loaded from the model's path).
        dataset: a ``datasets.Dataset`` with conversational ``prompt`` and ``completion`` columns
            (e.g. :func:`expert_demonstrations`); other columns are ignored.
        steps: optimizer steps (``max_steps``).
        lr: peak learning rate.
        batch_size: examples per step.
        output_dir: the trainer's scratch directory (no checkpoints are saved).
        time_limit_s: stop early once training has run this long (None: run all ``steps``).
        max_length: longest tokenized example (longer ones are truncated).
        seed: the trainer's seed (data order, init of nothing else).
        progress: show a progress bar (TRL's per-log printing stays quiet either way).
        log_history: a list extended with the trainer's log entries (loss per logging step, ...).
        **config: further :class:`trl.SFTConfig` fields (e.g. ``lr_scheduler_type``, ``warmup_steps``).
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.trainer_callback import PrinterCallback
    from trl import SFTConfig, SFTTrainer

    if type(steps) is not int or steps < 1:
        raise ValueError(f"steps must be an int >= 1, got {steps!r}")
    missing = {"prompt", "completion"} - set(dataset.column_names)
    if missing:
        raise ValueError(f"dataset needs 'prompt' and 'completion' columns (see expert_demonstrations); "
                         f"missing {sorted(missing)}")
    if isinstance(model_path_or_model, (str, os.PathLike)):
        path = os.fspath(model_path_or_model)
        model = AutoModelForCausalLM.from_pretrained(path)
        tokenizer = tokenizer if tokenizer is not None else AutoTokenizer.from_pretrained(path)
    else:
        model = model_path_or_model
        if tokenizer is None:
            tokenizer = AutoTokenizer.from_pretrained(model.config._name_or_path)
    dataset = dataset.select_columns(["prompt", "completion"])  # candidates and the rest: not TRL's business
    settings = dict(output_dir=os.fspath(output_dir), max_steps=steps, learning_rate=lr,
                    per_device_train_batch_size=batch_size, gradient_accumulation_steps=1,
                    use_cpu=not torch.cuda.is_available(),
                    report_to="none", bf16=False, fp16=False, save_strategy="no", logging_steps=max(1, steps // 20),
                    disable_tqdm=True, max_length=max_length, completion_only_loss=True, packing=False,
                    dataloader_num_workers=0, seed=seed, data_seed=seed, warmup_steps=min(20, steps // 10),
                    lr_scheduler_type="cosine", dataset_num_proc=None,
                    activation_checkpointing=False)  # TRL turns it on by default: pure recompute cost for tiny models
    settings.update(config)
    callbacks = [_time_limit(time_limit_s)] if time_limit_s is not None else []
    if progress:
        callbacks.append(_progress_bar("warm start: SFT"))
    trainer = SFTTrainer(model=model, args=SFTConfig(**settings), train_dataset=dataset, processing_class=tokenizer,
                         callbacks=callbacks)
    trainer.remove_callback(PrinterCallback)      # it prints every log dict; the history is kept in log_history
    trainer.train()
    if log_history is not None:
        log_history.extend(trainer.state.log_history)
    trained = trainer.model
    trained.eval()
    return trained


def choice_sft(model, tokenizer, dataset, *, steps: int = 300, lr: float = 3e-3, batch_size: int = 8,
               time_limit_s: float | None = None, warmup_steps: int = 10, weight_decay: float = 0.0,
               likelihood_weight: float = 0.0, score: str = "sum", max_batch_tokens: int = 16_384, seed: int = 0,
               progress: bool = True, log_history: list | None = None):
    """Listwise warm start: train a choice policy to rank the expert's command first among the admissible ones.

    Each demonstration state's candidates are scored exactly as :class:`~rla_train.backends.choice.ChoiceBackend`
    scores them when acting (``log p(command + end-of-turn | prompt)``, summed or with ``score="mean"``
    averaged over its tokens), and the loss is the cross-entropy of the expert's command under
    ``softmax(scores)``: what decides the choice (``take`` vs ``go to``) gets all the gradient, rather than
    the shared tokens token-level SFT spends most of its loss on. All candidates of a state go through one
    packed forward pass with the prompt computed once
    (:meth:`~rla_train.backends.choice.ChoiceBackend.packed_token_logprobs`). AdamW, linear warm-up then
    constant learning rate; data order and everything else fixed by ``seed``.

    Args:
        model: a causal LM, trained in place and returned (in eval mode).
        tokenizer: its tokenizer (renders the prompts with its chat template).
        dataset: rows with ``prompt``, ``completion`` (the expert's command) and, when present,
            ``candidates`` (otherwise read from the prompt, see :func:`~rla_train.backends.choice.admissible_from_prompt`),
            e.g. :func:`expert_demonstrations`. States with fewer than two candidates, or whose expert
            command is not among them, teach nothing and are skipped.
        steps: optimizer steps (``batch_size`` states each).
        lr: the learning rate after warm-up.
        batch_size: states per step.
        time_limit_s: stop early once training has run this long (None: run all ``steps``).
        warmup_steps: linear warm-up steps.
        weight_decay: AdamW's weight decay.
        likelihood_weight: adds this times the expert command's mean per-token negative log-likelihood
            (token-level SFT's loss on the same rows, free here) to the listwise loss; 0 = listwise only.
        score: ``"sum"`` or ``"mean"``, as the :class:`~rla_train.backends.choice.ChoiceBackend` that will act.
        max_batch_tokens: bounds one packed forward pass (states x packed width); a step may take several.
        seed: data order seed.
        progress: show a progress bar.
        log_history: a list extended with ``{"step", "loss", "choice_accuracy", "learning_rate"}`` entries,
            one per step (``choice_accuracy``: the batch's top-1 agreement before the step).
    """
    import torch
    from tqdm.auto import tqdm

    from rla_train.backends.hf import TransformersBackend
    from rla_train.backends.choice import SCORE_REDUCTIONS, ChoiceBackend, admissible_from_prompt

    if type(steps) is not int or steps < 1:
        raise ValueError(f"steps must be an int >= 1, got {steps!r}")
    if type(batch_size) is not int or batch_size < 1:
        raise ValueError(f"batch_size must be an int >= 1, got {batch_size!r}")
    if score not in SCORE_REDUCTIONS:
        raise ValueError(f"score must be one of {SCORE_REDUCTIONS}, got {score!r}")
    missing = {"prompt", "completion"} - set(dataset.column_names)
    if missing:
        raise ValueError(f"dataset needs 'prompt' and 'completion' columns (see expert_demonstrations); "
                         f"missing {sorted(missing)}")
    scorer = ChoiceBackend(TransformersBackend(model, tokenizer), max_batch_tokens=max_batch_tokens, method="packed")
    states = _choice_states(scorer, dataset, admissible_from_prompt)
    if not states:
        raise ValueError("no demonstration state has two or more candidates including the expert's command; "
                         "listwise training needs them (does the dataset carry 'candidates'?)")
    parameters = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(parameters, lr=lr, weight_decay=weight_decay)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda k: min(1.0, (k + 1) / max(1, warmup_steps)))
    generator = torch.Generator().manual_seed(seed)
    order: list[int] = []
    model.train()
    started = time.perf_counter()
    bar = tqdm(range(steps), desc="warm start: listwise", unit="step", disable=not progress, leave=False)
    try:
        for step in bar:
            if time_limit_s is not None and time.perf_counter() - started >= time_limit_s:
                break
            while len(order) < batch_size:  # epochs in a seeded random order
                order.extend(torch.randperm(len(states), generator=generator).tolist())
            batch, order = [states[i] for i in order[:batch_size]], order[batch_size:]
            loss, hits = _listwise_step(scorer, batch, optimizer, score, likelihood_weight)
            schedule.step()
            bar.set_postfix(loss=f"{loss:.3f}")
            if log_history is not None:
                log_history.append({"step": step + 1, "loss": loss, "choice_accuracy": hits / len(batch),
                                    "learning_rate": schedule.get_last_lr()[0]})
    finally:
        bar.close()
        optimizer.zero_grad(set_to_none=True)  # no gradient left on the model for a later update to add to its own
        model.eval()
    return model


def _choice_states(scorer, dataset, admissible_from_prompt) -> list[tuple[list[int], list[list[int]], int]]:
    """(prompt ids, candidate ids, expert's index) per trainable row, tokenized as the scorer acts."""
    columns = ["prompt", "completion"] + (["candidates"] if "candidates" in dataset.column_names else [])
    states = []
    for row in dataset.select_columns(columns):
        commands = list(dict.fromkeys(row.get("candidates") or admissible_from_prompt(row["prompt"])))
        expert = row["completion"][0]["content"]
        if len(commands) < 2 or expert not in commands:
            continue
        _, prompt_ids = scorer.backend.encode(row["prompt"])
        states.append((prompt_ids, [scorer.command_ids(c) for c in commands], commands.index(expert)))
    return states


def _listwise_step(scorer, batch, optimizer, score: str, likelihood_weight: float) -> tuple[float, int]:
    """One AdamW step on the batch's listwise cross-entropy; returns (loss, states ranked right before it)."""
    import torch

    optimizer.zero_grad(set_to_none=True)
    lengths = [len(p) + sum(map(len, cs)) for p, cs, _ in batch]
    total, hits = 0.0, 0
    for chunk in scorer.row_chunks(lengths):
        rows = [batch[i] for i in chunk]
        per_token = scorer.packed_token_logprobs([p for p, _, _ in rows], [cs for _, cs, _ in rows])
        losses = []
        for (_, _, expert), candidates in zip(rows, per_token):
            sums = torch.stack([c.sum() for c in candidates])
            scores = sums / torch.tensor([len(c) for c in candidates]) if score == "mean" else sums
            loss = torch.nn.functional.cross_entropy(scores.unsqueeze(0), torch.tensor([expert]))
            if likelihood_weight:
                loss = loss - likelihood_weight * candidates[expert].mean()
            losses.append(loss)
            hits += int(torch.argmax(scores.detach())) == expert
        chunk_loss = torch.stack(losses).sum() / len(batch)
        chunk_loss.backward()
        total += float(chunk_loss.detach())
    optimizer.step()
    return total, hits


def choice_accuracy(backend, dataset, *, batch_size: int = 16) -> float:
    """Top-1 agreement of a choice policy with the expert on demonstration states (teacher-forced).

    Args:
        backend: a :class:`~rla_train.backends.choice.ChoiceBackend`; its greedy choice (the highest-scoring
            admissible command, whatever its temperature) is compared with the demonstrated command.
        dataset: rows with ``prompt`` (a chat listing the admissible commands, as the agent builds it) and
            ``completion`` (``[{"role": "assistant", "content": command}]``), e.g. :func:`expert_demonstrations`
            on a held-out split.
        batch_size: prompts scored per call.

    Returns:
        the fraction of rows whose top-scoring candidate is the expert's command.
    """
    from rla_train.backends.choice import admissible_from_prompt

    if len(dataset) == 0:
        raise ValueError("choice_accuracy needs at least one demonstration row")
    hits = 0
    for start in range(0, len(dataset), batch_size):
        rows = dataset[start:start + batch_size]
        prompts = rows["prompt"]
        candidates = [admissible_from_prompt(prompt) for prompt in prompts]
        backend.choose(prompts, candidates)
        for choice, completion in zip(backend.last_choices, rows["completion"]):
            best = max(range(len(choice.scores)), key=choice.scores.__getitem__)
            hits += choice.candidates[best] == completion[0]["content"]
    return hits / len(dataset)
