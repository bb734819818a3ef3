"""Episode records are written whatever their text holds: a lone surrogate or an odd value loses no line."""

from __future__ import annotations


from rla_train.rollout.episode import Episode
from rla_train.rollout.records import append_records, read_records

SURROGATE = "ValueError: \ud800"  # what `raise ValueError('\ud800')` in a program leaves in the step's error


def test_a_lone_surrogate_does_not_lose_the_batch(tmp_path):
    path = tmp_path / "episodes.jsonl"
    episodes = [Episode(task_id=f"t{k}", observations=["start", "done"], actions=["x"], infos=[{}, {}]) for k in range(3)]
    episodes[1].infos[1]["error"] = SURROGATE
    episodes[1].action_error = SURROGATE
    append_records(path, [e.to_dict() for e in episodes])
    records = read_records(path)
    assert [r["task_id"] for r in records] == ["t0", "t1", "t2"]
    assert records[1]["infos"][1]["error"] == SURROGATE  # the same string comes back
    append_records(path, [{"task_id": "t3", "note": "café"}])
    assert "café" in path.read_text(encoding="utf-8")


def test_values_json_cannot_hold_become_text_or_a_stub_line(tmp_path):
    path = tmp_path / "episodes.jsonl"
    circular: dict = {"task_id": "loop"}
    circular["self"] = circular
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    append_records(path, [{"task_id": "a", "value": object}, circular, {"task_id": "deep", "v": deep},
                          {"task_id": "b"}])
    records = read_records(path)
    assert [r["task_id"] for r in records] == ["a", "loop", "deep", "b"]  # one line per record, in order
    assert records[0]["value"] == repr(object)
    assert "ValueError" in records[1]["unwritable_record"] and "RecursionError" in records[2]["unwritable_record"]
