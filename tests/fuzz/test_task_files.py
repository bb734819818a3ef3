"""Fuzz: task files that are edited, truncated, not UTF-8, compressed or bombs end in one-line rla errors
that name the file (and, for JSONL, the line)."""

from __future__ import annotations

import base64
import json
import pickle
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rla_envs.code.tasks.jsonl import load_jsonl
from rla_envs.code.tasks.taskfile import load_task_file
from rla_envs.core.errors import DataNotFound, InvalidTask
from tests.fuzz.strategies import FUZZ, assert_clear_error, dumps, edited, outcome

LOADER_ERRORS = (InvalidTask, DataNotFound)


def _compressed(cases) -> str:
    return base64.b64encode(zlib.compress(pickle.dumps(json.dumps(cases)))).decode()


LCB = {
    "question_title": "Add", "question_id": "abc001_a", "platform": "atcoder", "difficulty": "easy",
    "question_content": "Print A+B.", "contest_date": "2023-01-01T00:00:00",
    "public_test_cases": json.dumps([{"input": "1 2\n", "output": "3\n", "testtype": "stdin"}]),
    "private_test_cases": _compressed([{"input": "5 5\n", "output": "10\n", "testtype": "stdin"}]),
}
CODECONTESTS = {
    "name": "1000_A. Sum", "description": "Print the sum of two integers.",
    "public_tests": {"input": ["1 2\n"], "output": ["3\n"]},
    "private_tests": {"input": ["2 2\n"], "output": ["4\n"]},
    "generated_tests": {"input": ["7 8\n"], "output": ["15\n"]},
    "solutions": {"language": [2, 3], "solution": ["int main(){}", "print(sum(map(int, input().split())))"]},
    "time_limit": {"seconds": 2, "nanos": 500000000}, "memory_limit_bytes": 268435456, "cf_rating": 800,
}
TASK_DICT = {"family": "code", "instruction": "Echo.", "origin": "dataset", "meta": {},
             "spec": {"form": "stdio", "hidden_tests": [{"stdin": "1\n", "stdout": "1\n"}],
                      "limits": {"timeout_s": 2.0}}}
TWO_FORM = {"id": "sq", "statement": "Square x.", "forms": {"function": {"entry_point": "solve"}, "stdio": {}},
            "hidden_tests": [{"input": 3, "output": 9}], "public_tests": [{"input": 2, "output": 4}],
            "limits_assumed": {"timeout_s": 3, "memory_max": "2 GiB"}}
RECORD_KEYS = ("time_limit", "memory_limit_bytes", "solutions", "private_test_cases", "public_tests", "name",
               "question_id", "testtype", "seconds", "nanos", "input", "output")


@pytest.mark.parametrize("record", [LCB, CODECONTESTS, TASK_DICT], ids=["lcb", "codecontests", "task"])
def test_the_base_records_load(tmp_path, record):
    path = tmp_path / "base.jsonl"
    path.write_text(json.dumps(record) + "\n")
    assert len(load_jsonl(path)) == 1


@settings(FUZZ, max_examples=400)
@given(data=st.data())
def test_jsonl_with_edited_records_names_the_file_and_line(tmp_path_factory, data):
    base = data.draw(st.sampled_from([LCB, CODECONTESTS, TASK_DICT]))
    record = data.draw(edited(base, extra_keys=RECORD_KEYS))
    path = tmp_path_factory.mktemp("jsonl") / "problems.jsonl"
    path.write_text(json.dumps(base) + "\n" + dumps(record) + "\n", encoding="utf-8", errors="surrogatepass")
    assert_clear_error(outcome(load_jsonl, path), allowed=LOADER_ERRORS, names=(f"{path}:2",))


@settings(FUZZ, max_examples=150)
@given(data=st.data())
def test_jsonl_bytes_that_are_not_json_or_not_utf8(tmp_path_factory, data):
    good = json.dumps(LCB).encode()
    cut = data.draw(st.integers(0, len(good)))
    junk = data.draw(st.one_of(st.binary(max_size=40), st.sampled_from([b"\xff\xfe", b"\x80", b"\xed\xa0\x80",
                                                                          b"\x1f\x8b\x08\x00", b"\x00" * 8])))
    path = tmp_path_factory.mktemp("jsonl") / "bytes.jsonl"
    path.write_bytes(good + b"\n" + good[:cut] + junk + good[cut:] + b"\n")
    assert_clear_error(outcome(load_jsonl, path), allowed=LOADER_ERRORS, names=(str(path),))


def test_jsonl_that_is_gzip_compressed_says_so(tmp_path):
    import gzip

    path = tmp_path / "problems.jsonl.gz"
    path.write_bytes(gzip.compress(json.dumps(LCB).encode()))
    with pytest.raises(InvalidTask, match=f"{path}.*gzip"):
        load_jsonl(path)


def test_a_zlib_bomb_in_lcb_tests_is_refused_before_it_is_inflated(tmp_path):
    import resource

    bomb = base64.b64encode(zlib.compress(b"\x00" * (400 << 20), 9)).decode()  # 400 MB of zeros, ~400 KB packed
    path = tmp_path / "bomb.jsonl"
    path.write_text(json.dumps({**LCB, "private_test_cases": bomb}) + "\n")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(InvalidTask, match=f"{path}:1.*private_test_cases.*inflates to more than 64 MB"):
        load_jsonl(path)
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024  # peak: alone, it could miss
    assert grown_mb < 200, f"peak memory grew by {grown_mb:.0f} MB: the bomb was inflated"  # (the match decides)


@pytest.mark.parametrize("time_limit, message", [
    ([1, 2], "time_limit"), ({"seconds": 10**12}, "time_limit"), ({"seconds": "2"}, "time_limit.seconds"),
    ({"seconds": 1, "nanos": -5}, "time_limit.nanos"), ({"seconds": float("nan")}, "time_limit"),
])
def test_codecontests_time_limits_that_cannot_be_used_are_refused(tmp_path, time_limit, message):
    path = tmp_path / "cc.jsonl"
    path.write_text(json.dumps({**CODECONTESTS, "time_limit": time_limit}) + "\n")
    with pytest.raises(InvalidTask, match=f"{path}:1.*{message}"):
        load_jsonl(path)


@settings(FUZZ, max_examples=250)
@given(data=st.data())
def test_task_json_files_edited_name_the_file(tmp_path_factory, data):
    base = data.draw(st.sampled_from([TASK_DICT, TWO_FORM]))
    document = data.draw(edited(base, extra_keys=("forms", "limits", "args", "entry_point", "signature")))
    path = tmp_path_factory.mktemp("taskfile") / "task.json"
    path.write_text(dumps(document), encoding="utf-8", errors="surrogatepass")
    assert_clear_error(outcome(load_task_file, path), allowed=LOADER_ERRORS, names=(str(path),))


@pytest.fixture(scope="module")
def osworld_files():
    from tests.paths import OSWORLD_TASKS

    files = sorted(OSWORLD_TASKS.rglob("*.json")) if OSWORLD_TASKS.is_dir() else []
    if not files:
        pytest.skip(f"no OSWorld task files at {OSWORLD_TASKS}")
    return [json.loads(f.read_text()) for f in files[:: max(1, len(files) // 16)]]


@settings(FUZZ, max_examples=200)
@given(data=st.data())
def test_osworld_files_edited_name_the_file(tmp_path_factory, osworld_files, data):
    from rla_envs.desktop.osworld.tasks import load_task

    document = data.draw(edited(data.draw(st.sampled_from(osworld_files)), extra_keys=("config", "evaluator")))
    path = tmp_path_factory.mktemp("osworld") / "task.json"
    path.write_text(dumps(document), encoding="utf-8", errors="surrogatepass")
    assert_clear_error(outcome(load_task, path), allowed=LOADER_ERRORS, names=(str(path),))


def test_osworld_file_nested_50000_deep_is_refused(tmp_path):
    from rla_envs.desktop.osworld.tasks import load_task

    path = tmp_path / "deep.json"
    path.write_text('{"id": "x", "instruction": "y", "evaluator": {"func": "infeasible"}, "deep": '
                    + "[" * 50_000 + "]" * 50_000 + "}")
    with pytest.raises(InvalidTask, match=f"{path}.*deep"):
        load_task(path)
