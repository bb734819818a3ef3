"""Run-directory ownership: one run at a time, never over an earlier run unless told, and --resume only with a
checkpoint to continue from; each refusal is one line before any work (issue 15, item 2)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from rla_train.config import ConfigError, load_config
from rla_train.cotrainer.checkpoint import CorruptCheckpoint, save_checkpoint
from rla_train.cotrainer.run_dir import LOCK_FILE, RUN_FILES, RunDirError, claim_run_dir, lock_holder

# a 2-game TextWorld run: only its config matters here, every refusal comes before a game or a model is loaded
SMALL = ["env.id=rla/TextWorld-v0", "env.options={levels: [custom-1], games_per_level: 2}", "env.train_options={}",
         "env.eval_options={}", "train.mode=outcome_only", "reward_model.model=null", "train.steps=2",
         "train.warm_start_sft_steps=0"]


@pytest.fixture
def holder(tmp_path):
    """A second process that claims ``tmp_path / 'run'`` and holds it until killed; yields (run_dir, process)."""
    run_dir = tmp_path / "run"
    script = textwrap.dedent(f"""
        import sys, time
        from rla_train.cotrainer.run_dir import claim_run_dir
        with claim_run_dir({str(run_dir)!r}):
            print("held", flush=True)
            time.sleep(600)
    """)
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline().strip() == "held"
        yield run_dir, process
    finally:
        process.kill()
        process.wait()


def test_a_second_run_on_a_held_directory_is_refused_with_the_holders_pid(holder):
    run_dir, process = holder
    assert lock_holder(run_dir) == process.pid
    with pytest.raises(RunDirError, match=f"in use by another run \\(pid {process.pid}\\)"):
        with claim_run_dir(run_dir, resume=True):
            pass
    process.send_signal(signal.SIGKILL)  # the kernel drops a dead holder's lock: no stale lock to clean up
    process.wait()
    with claim_run_dir(run_dir, resume=True):
        assert lock_holder(run_dir) == os.getpid()


def test_the_command_line_refuses_a_held_directory_in_one_line(holder, capsys):
    from rla_train.run import main

    run_dir, process = holder
    args = [arg for override in [*SMALL, f"output.dir={run_dir}"] for arg in ("--set", override)]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and f"pid {process.pid}" in err and "choose another output.dir" in err


def test_a_fresh_run_into_a_non_empty_directory_is_refused_unless_overwrite_or_resume(tmp_path):
    run_dir = tmp_path / "run"
    with claim_run_dir(run_dir):  # an empty (new) directory is fine
        for name in ("config.yaml", "metrics.jsonl"):
            (run_dir / name).write_text("earlier run\n")
        save_checkpoint(run_dir, 0, states={"x": 1})
    (run_dir / "notes.txt").write_text("not the run's\n")
    with pytest.raises(RunDirError, match="is not empty .*--resume .*--overwrite"):
        with claim_run_dir(run_dir):
            pass
    with claim_run_dir(run_dir, resume=True):  # resume keeps everything
        assert (run_dir / "checkpoints").is_dir() and (run_dir / "metrics.jsonl").is_file()
    with claim_run_dir(run_dir, overwrite=True):  # overwrite removes what a run writes, and only that
        assert sorted(p.name for p in run_dir.iterdir()) == sorted([LOCK_FILE, "notes.txt"])
    assert "notes.txt" not in RUN_FILES
    with pytest.raises(RunDirError, match="pass one of them"):
        with claim_run_dir(run_dir, resume=True, overwrite=True):
            pass


def test_a_run_directory_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(RunDirError, match="is a file"):
        with claim_run_dir(tmp_path / "file"):
            pass


def _train(overrides, **kwargs):
    from rla_train.cotrainer.loop import train

    return train(load_config(None, [*SMALL, *overrides], check_hardware=False), progress=False, **kwargs)


def test_resume_with_nothing_to_resume_is_refused(tmp_path):
    (tmp_path / "config.yaml").write_text("# killed before its first checkpoint\n")
    with pytest.raises(RunDirError, match="no checkpoint to continue from.*--overwrite"):
        _train([f"train.resume_from={tmp_path}"])


def test_resume_with_fewer_steps_than_done_is_refused(tmp_path):
    save_checkpoint(tmp_path, 2, states={})
    with pytest.raises(ConfigError, match="train.steps=1, but the run .* has done 2 steps.*train.steps >= 2"):
        _train([f"train.resume_from={tmp_path}", "train.steps=1"])


def test_resume_with_no_intact_checkpoint_is_refused(tmp_path):
    save_checkpoint(tmp_path, 1, states={})
    (tmp_path / "checkpoints" / "step-000001" / "rng.pt").write_bytes(b"")
    with pytest.raises(CorruptCheckpoint, match="no intact checkpoint.*rng.pt has 0 bytes"):
        _train([f"train.resume_from={tmp_path}"])


def test_a_refused_run_leaves_the_earlier_run_untouched(tmp_path):
    (tmp_path / "config.yaml").write_text("earlier\n")
    (tmp_path / "metrics.jsonl").write_text('{"step": 1}\n')
    with pytest.raises(RunDirError, match="is not empty"):
        _train([f"output.dir={tmp_path}"])
    assert (tmp_path / "config.yaml").read_text() == "earlier\n"
    assert (tmp_path / "metrics.jsonl").read_text() == '{"step": 1}\n'


def test_the_command_line_passes_overwrite_and_refuses_it_with_resume(tmp_path, capsys):
    from rla_train.config import parse_command_line

    config, args = parse_command_line(["--overwrite", "--set", f"output.dir={tmp_path}"])
    assert args.overwrite and config.output.dir == str(tmp_path)
    (tmp_path / "config.yaml").write_text(config.to_yaml())
    with pytest.raises(SystemExit):
        parse_command_line(["--resume", str(tmp_path), "--overwrite"])
    assert "pass one of them" in capsys.readouterr().err


@pytest.mark.parametrize("held", [False, True])
def test_the_command_line_refuses_a_used_directory_before_importing_torch(holder, held):
    run_dir, process = holder
    if not held:  # an earlier run's files, nobody holding the directory
        process.kill()
        process.wait()
        (run_dir / "summary.json").write_text("{}")
    args = [arg for override in [*SMALL, f"output.dir={run_dir}"] for arg in ("--set", override)]
    script = ("import sys\nfrom rla_train.run import main\n"
              f"code = main({args!r})\nprint(code, 'torch' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert result.stdout.split() == ["2", "False"], (result.stdout, result.stderr)
    error = result.stderr.strip()
    assert "\n" not in error and error.startswith("python -m rla_train.run: error:")
    assert ("in use by another run" if held else "is not empty") in error
