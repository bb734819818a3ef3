"""python -m rla_envs.desktop.survey over the 369 real OSWorld tasks, and over a small folder made here."""

import json
import subprocess
import sys

import pytest

from rla_envs.desktop.osworld.cache import HF_FILE_CACHE_PREFIX, FileCache
from rla_envs.desktop.survey import main, reason_kind, survey
from tests.paths import OSWORLD_TASKS

EXAMPLES = OSWORLD_TASKS / "examples"
needs_examples = pytest.mark.skipif(not EXAMPLES.is_dir(), reason=f"OSWorld task files not found at {EXAMPLES}")
TASK_ID = "bbbbbbbb-0000-0000-0000-000000000002"


@needs_examples
def test_survey_of_the_real_tasks_adds_up(tmp_path):
    report = survey(EXAMPLES, cache=FileCache(tmp_path))
    assert report["total"] == 369
    assert report["runnable"] + report["not_runnable"] == 369
    assert sum(report["first_reason_counts"].values()) == report["not_runnable"]
    assert sum(total for _, total in report["by_app"].values()) == 369
    assert sum(ok for ok, _ in report["by_app"].values()) == report["runnable"]
    assert all(count <= report["not_runnable"] for count in report["reason_counts"].values())
    # an empty cache blocks every task that downloads a file, and the reason says where it looked
    assert report["reason_counts"][f"download: a file is not in the cache {tmp_path}"] >= 200
    # what needs the internet stays refused with its exact reason (8 tasks set up Google Drive)
    assert report["reason_counts"]["setup step 'googledrive': needs the internet and OSWorld's Google Drive account"] == 8


@needs_examples
def test_cli_prints_the_summary_and_writes_json(tmp_path):
    out = tmp_path / "report.json"
    done = subprocess.run([sys.executable, "-m", "rla_envs.desktop.survey", str(EXAMPLES), "--json", str(out),
                           "--apps", "python,bash,libreoffice,mousepad,xterm"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "total: 369" in done.stdout and "runnable:" in done.stdout
    report = json.loads(out.read_text())
    assert len(report["tasks"]) == 369 and report["runnable"] + report["not_runnable"] == 369
    assert "launch: 'google-chrome' is not installed" in report["reason_counts"]


def _write_task(folder, url):
    task = {"id": TASK_ID, "instruction": "Edit the notes.", "config": [
        {"type": "download", "parameters": {"files": [{"url": url, "path": "/home/user/notes.txt"}]}}],
        "evaluator": {"func": "compare_text_file", "result": {"type": "vm_file", "path": "/home/user/notes.txt",
                                                                "dest": "notes.txt"},
                      "expected": {"type": "cloud_file", "path": url, "dest": "gold.txt"}}}
    (folder / "os").mkdir(parents=True)
    (folder / "os" / f"{TASK_ID}.json").write_text(json.dumps(task))


def test_a_task_missing_a_cache_file_reports_it_until_the_file_is_there(tmp_path, capsys):
    url = f"{HF_FILE_CACHE_PREFIX}os/{TASK_ID}/notes.txt"
    tasks, cache = tmp_path / "tasks", tmp_path / "cache"
    _write_task(tasks, url)
    cache.mkdir()
    assert main([str(tasks), "--cache", str(cache)]) == 0
    printed = capsys.readouterr().out
    assert "total: 1   runnable: 0   not runnable: 1" in printed
    assert f"download: a file is not in the cache {cache}" in printed
    report = survey(tasks, cache=FileCache(cache))
    assert report["tasks"][0]["reasons"] == [f"download: {url} is not in the cache {cache}",
                                             f"cloud_file: {url} is not in the cache {cache}"]
    assert report["only_missing_files"] == 1
    (cache / "os" / TASK_ID).mkdir(parents=True)
    (cache / "os" / TASK_ID / "notes.txt").write_text("gold")
    assert main([str(tasks), "--cache", str(cache)]) == 0
    assert "total: 1   runnable: 1   not runnable: 0" in capsys.readouterr().out


def test_bad_directory_is_a_clear_error(tmp_path, capsys):
    assert main([str(tmp_path / "nowhere")]) == 2
    assert "no OSWorld task directory" in capsys.readouterr().err


def test_reason_kind_drops_only_urls():
    missing = "download: https://x.org/a.txt is not in the cache /c"
    assert reason_kind(missing) == "download: a file is not in the cache /c"
    assert reason_kind("metric 'x' is not supported") == "metric 'x' is not supported"
