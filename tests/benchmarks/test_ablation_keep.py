"""Keeping an ablation's finished runs in the repository (benchmarks/ablation/keep.py): the small files only."""

from __future__ import annotations

import json

import pytest

from benchmarks.ablation.keep import KeptResultDiffers, keep_results, main


def _run(run_dir, *, finished=True, steps=b'{"step": 1}\n'):
    (run_dir / "checkpoints" / "step-000000").mkdir(parents=True)
    (run_dir / "checkpoints" / "step-000000" / "model.safetensors").write_bytes(b"weights")
    (run_dir / "config.yaml").write_text("train:\n  seed: 9\n")
    (run_dir / "metrics.jsonl").write_bytes(steps)
    if finished:
        (run_dir / "summary.json").write_text(json.dumps({"after": {"outcomes": [1, 0]}}))


def test_the_finished_runs_small_files_are_kept_and_nothing_else(tmp_path):
    real = tmp_path / "runs" / "real" / "seed-9"
    _run(real / "warm-start")
    _run(real / "warm-start" / "ood")
    _run(real / "arm-outcome_only")
    _run(real / "arm-oracle@0.9", finished=False)          # interrupted: its files are not a result yet
    (real / "exploitation.json").write_text("{}")
    outside = tmp_path / "secret.json"
    outside.write_text('{"after": {}}')
    (real / "arm-linked").mkdir()
    (real / "arm-linked" / "summary.json").symlink_to(outside)  # a link is not followed
    written = keep_results(tmp_path / "runs", tmp_path / "kept")
    kept = tmp_path / "kept" / "real" / "seed-9"
    assert sorted(str(p.relative_to(kept)) for p in written) == [
        "arm-outcome_only/config.yaml", "arm-outcome_only/metrics.jsonl", "arm-outcome_only/summary.json",
        "exploitation.json", "warm-start/config.yaml", "warm-start/metrics.jsonl", "warm-start/ood/config.yaml",
        "warm-start/ood/metrics.jsonl", "warm-start/ood/summary.json", "warm-start/summary.json"]
    assert sorted(p.name for p in kept.rglob("*") if p.is_file()) == sorted(p.name for p in written)
    assert (kept / "arm-outcome_only" / "summary.json").read_bytes() == (real / "arm-outcome_only" / "summary.json").read_bytes()
    assert keep_results(tmp_path / "runs", tmp_path / "kept") == []  # kept already, identical: nothing to write


def test_a_kept_result_that_differs_is_never_overwritten(tmp_path, capsys):
    real = tmp_path / "runs" / "real" / "seed-9"
    _run(real / "arm-outcome_only")
    keep_results(tmp_path / "runs", tmp_path / "kept")
    _run(real / "arm-policy")                                # a new run finished since ...
    (real / "arm-outcome_only" / "metrics.jsonl").write_bytes(b'{"step": 2}\n')  # ... and a kept one's file changed
    with pytest.raises(KeptResultDiffers, match="arm-outcome_only/metrics.jsonl"):
        keep_results(tmp_path / "runs", tmp_path / "kept")
    assert not (tmp_path / "kept" / "real" / "seed-9" / "arm-policy").exists()  # nothing copied
    assert (tmp_path / "kept" / "real" / "seed-9" / "arm-outcome_only" / "metrics.jsonl").read_bytes() == b'{"step": 1}\n'
    assert main([str(tmp_path / "runs"), str(tmp_path / "kept")]) == 2
    assert "differ from the runs' files" in capsys.readouterr().err
    assert main([str(tmp_path / "nothing"), str(tmp_path / "kept")]) == 2
    assert "give the ablation's --out" in capsys.readouterr().err
