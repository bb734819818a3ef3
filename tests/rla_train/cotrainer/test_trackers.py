"""Experiment trackers (rla_train.cotrainer.trackers): what is logged is read back from each tracker's own files,
offline: TensorBoard's event files and W&B's offline transaction log (``WANDB_MODE=offline``)."""

from __future__ import annotations

import json
import struct
import sys
import time
from pathlib import Path

import pytest

from rla_envs.core.errors import MissingDependency
from rla_envs.core.trajectory import Trajectory
from tests.rla_envs.alfworld.conftest import alfworld_cache  # noqa: F401  (a private RLA_CACHE for the session)
from rla_train.cotrainer.trackers import (TRAJECTORY_COLUMNS, WANDB_ID_FILE, close_trackers, open_trackers,
                                          summary_scalars, trajectory_rows)


def wandb_file_records(data: bytes) -> list | None:
    """The ``wandb_internal_pb2.Record`` s of one offline ``run-*.wandb`` file's bytes: a 7-byte header, then
    LevelDB-log records (4-byte CRC, 2-byte length, 1-byte type: 1 full, 2 first, 3 middle, 4 last) in 32 KiB blocks.
    None while the file is not yet whole: W&B's writer process may still be flushing it after ``finish()`` returns, so
    a record cut short, or a file that does not end with the run's exit record, means "read it again"."""
    from wandb.proto import wandb_internal_pb2

    records, pos, pieces = [], 7, []
    while pos + 7 <= len(data):
        if 32768 - pos % 32768 < 7:  # a block's tail too short for a header is padding
            pos += 32768 - pos % 32768
            continue
        _, length, kind = struct.unpack("<IHB", data[pos:pos + 7])
        if pos + 7 + length > len(data):
            return None
        pieces.append(data[pos + 7:pos + 7 + length])
        pos += 7 + length
        if kind in (1, 4):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(b"".join(pieces))
            records.append(record)
            pieces = []
    whole = pos == len(data) and not pieces and records and records[-1].WhichOneof("record_type") == "exit"
    return records if whole else None


def wandb_records(run_dir: Path, wait_s: float = 120.0) -> tuple[list[dict], dict]:
    """The history rows (key -> value) and the last summary of the W&B runs under ``run_dir/wandb``, read from the
    offline ``run-*.wandb`` files once each is whole (waiting up to ``wait_s`` for W&B's writer to flush them)."""
    history, summary = [], {}
    for path in sorted((run_dir / "wandb").glob("offline-run-*/run-*.wandb")):
        deadline = time.monotonic() + wait_s
        while (records := wandb_file_records(path.read_bytes())) is None:
            assert time.monotonic() < deadline, f"{path} did not end with a whole exit record within {wait_s} s"
            time.sleep(0.2)
        for record in records:
            if record.WhichOneof("record_type") == "history":
                history.append({item.key or "/".join(item.nested_key): json.loads(item.value_json)
                                for item in record.history.item})
            elif record.WhichOneof("record_type") == "summary":
                summary.update({item.key or "/".join(item.nested_key): json.loads(item.value_json)
                                for item in record.summary.update})
    return history, summary


@pytest.fixture
def offline_wandb(monkeypatch, tmp_path):
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_CONFIG_DIR", str(tmp_path / "wandb-config"))
    monkeypatch.setenv("WANDB_CACHE_DIR", str(tmp_path / "wandb-cache"))


def test_trajectory_rows_show_actions_with_their_votes_and_stop_at_the_limit():
    judged = Trajectory("task-a", observations=["o0", "o1", "o2"], actions=["go to desk 1", "take pen"], won=True,
                        judgments=[[1, 1, -1], [1, 1, 1]])
    plain = Trajectory("task-b", observations=["o0", "o1"], actions=["look"], won=False)
    rows = trajectory_rows(7, [judged, plain, judged], limit=2)
    # mean vote (1 + 1 - 1 + 3) / 6 = 0.667
    assert rows == [[7, "task-a", True, 2, pytest.approx(4 / 6), "go to desk 1 [+1 +1 -1] | take pen [+1 +1 +1]"],
                    [7, "task-b", False, 1, None, "look"]]
    assert len(rows[0]) == len(TRAJECTORY_COLUMNS)
    long = Trajectory("t", observations=["o"] * 101, actions=["x" * 50] * 100)
    assert trajectory_rows(0, [long], max_chars=120)[0][-1].endswith(" ...")


def test_summary_scalars_flatten_two_levels_of_numbers():
    summary = {"steps": 2, "mode": "gigpo", "before": {"heldout": {"success_rate": 0.25, "outcomes": [1, 0]}},
               "heldout_paired": {"p_value": 0.5, "better": True}, "threads": 1}
    assert summary_scalars(summary) == {"steps": 2.0, "before/heldout/success_rate": 0.25,
                                        "heldout_paired/p_value": 0.5, "threads": 1.0}


def test_unknown_or_missing_trackers_fail_when_opened(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="known: none, tensorboard, trackio, wandb"):
        open_trackers(["mlflow"], tmp_path, project="p", run_name="r", config={})
    assert open_trackers(["none"], tmp_path, project="p", run_name="r", config={}) == []
    monkeypatch.setitem(sys.modules, "wandb", None)  # importing it now raises ImportError
    with pytest.raises(MissingDependency, match=r'pip install "rla\[tracking\]"'):
        open_trackers(["tensorboard", "wandb"], tmp_path, project="p", run_name="r", config={})


def test_tensorboard_gets_scalars_and_the_table_as_text(tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    trackers = open_trackers(["tensorboard"], tmp_path, project="p", run_name="r", config={})
    trackers[0].log(1, {"success_rate": 0.5})
    trackers[0].log_table(1, "trajectories", ["task", "won"], [["a|b", True]])
    close_trackers(trackers)
    events = EventAccumulator(str(tmp_path / "tensorboard"), size_guidance={"tensors": 0})
    events.Reload()
    assert [(e.step, e.value) for e in events.Scalars("success_rate")] == [(1, 0.5)]
    text = events.Tensors("trajectories/text_summary")[0].tensor_proto.string_val[0].decode()
    assert "| task | won |" in text and "a\\|b" in text


def test_wandb_offline_run_holds_the_metrics_the_table_and_the_summary_and_resumes_in_place(tmp_path, offline_wandb):
    trackers = open_trackers(["wandb"], tmp_path, project="rla-test", run_name="run", config={"train": {"seed": 3}})
    for step in (1, 2):
        trackers[0].log(step, {"success_rate": step / 4})
    trackers[0].log_table(2, "trajectories", TRAJECTORY_COLUMNS, [[2, "t", True, 3, 0.5, "look [+1]"]])
    trackers[0].log_summary(2, {"after/heldout/success_rate": 0.75})
    close_trackers(trackers)
    run_id = (tmp_path / WANDB_ID_FILE).read_text().strip()
    history, summary = wandb_records(tmp_path)
    assert [(row["_step"], row["success_rate"]) for row in history] == [(1, 0.25), (2, 0.5)]
    assert history[1]["trajectories/_type"] == "table-file" and history[1]["trajectories/nrows"] == 1
    table = json.loads(next((tmp_path / "wandb").glob("offline-run-*/files/media/table/trajectories_*.json")).read_text())
    assert table["columns"] == TRAJECTORY_COLUMNS and table["data"] == [[2, "t", True, 3, 0.5, "look [+1]"]]
    assert summary["after/heldout/success_rate"] == 0.75
    # a resumed run (from any checkpoint, step 0 too) continues the same W&B run; a fresh one starts another
    resumed = open_trackers(["wandb"], tmp_path, project="rla-test", run_name="run", config={}, start_step=0,
                            resuming=True)
    resumed[0].log(3, {"success_rate": 1.0})
    close_trackers(resumed)
    assert (tmp_path / WANDB_ID_FILE).read_text().strip() == run_id
    assert {path.name for path in (tmp_path / "wandb").glob("offline-run-*/run-*.wandb")} == {f"run-{run_id}.wandb"}
    fresh = open_trackers(["wandb"], tmp_path, project="rla-test", run_name="run", config={})
    close_trackers(fresh)
    assert (tmp_path / WANDB_ID_FILE).read_text().strip() != run_id


def test_a_training_run_mirrors_its_metrics_tables_and_summary_to_wandb(tmp_path, offline_wandb, alfworld_cache):
    from rla_train.config import load_config
    from rla_train.cotrainer.loop import train
    from tests.rla_train.cotrainer.test_cotrain import SMALL, metrics

    config = load_config(None, [*SMALL, "train.mode=policy", "train.eval_every=1", "train.steps=2",
                                f"output.dir={tmp_path}", "output.report_to=[wandb, tensorboard]",
                                "output.run_name=tiny"])
    summary = train(config, progress=False)
    history, wandb_summary = wandb_records(tmp_path)
    rows = metrics(tmp_path)
    by_step: dict[int, dict] = {}
    for row in history:
        by_step.setdefault(row["_step"], {}).update(row)
    # step 0: the evaluation before co-training; steps 1-2: every metrics.jsonl value, the same numbers
    assert sorted(by_step) == [0, 1, 2]
    assert by_step[0]["heldout_success_rate"] == summary["before"]["success_rate"]
    for row in rows:
        logged = by_step[row["step"]]
        assert {k: v for k, v in row.items() if k not in ("step", "time") and v is not None} == \
            {k: logged[k] for k in row if k not in ("step", "time") and row[k] is not None}
    assert "judge_good_vote_fraction" in by_step[1] and "trajectories/_type" in by_step[1]  # evaluated at step 1
    assert by_step[2]["heldout_success_rate"] == summary["after"]["success_rate"]
    assert wandb_summary["after/success_rate"] == summary["after"]["success_rate"]
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(tmp_path / "tensorboard"))
    events.Reload()
    assert [(e.step, e.value) for e in events.Scalars("success_rate")] == \
        [(row["step"], pytest.approx(row["success_rate"])) for row in rows]
    assert [e.step for e in events.Scalars("heldout_success_rate")] == [0, 1, 2]
