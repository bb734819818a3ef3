"""Setup steps, getters and the evaluator against a real local desktop session (conftest's ``desktop_client``)."""

import io

import openpyxl
import pytest

from rla_envs.desktop.osworld.cache import HF_FILE_CACHE_PREFIX, FileCache
from rla_envs.desktop.osworld.errors import SetupFailed
from rla_envs.desktop.osworld.evaluator import evaluate
from rla_envs.desktop.osworld.setup import run_steps

pytestmark = pytest.mark.desktop

TASK_ID = "cccccccc-0000-0000-0000-000000000003"


@pytest.fixture
def client(desktop_client):
    """The session's client, reset (apps closed, home restored)."""
    return desktop_client


@pytest.fixture
def cache(tmp_path):
    return FileCache(tmp_path / "cache")


def _store(cache: FileCache, app: str, name: str, data: bytes) -> str:
    path = cache.root / app / TASK_ID / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return f"{HF_FILE_CACHE_PREFIX}{app}/{TASK_ID}/{name}"


def _task(evaluator, config=()):
    return {"id": TASK_ID, "instruction": "test", "config": list(config), "evaluator": evaluator}


def _xlsx(rows) -> bytes:
    book = openpyxl.Workbook()
    for row in rows:
        book.active.append(row)
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def test_text_task_scores_1_then_0_after_the_file_changes(client, cache):
    url = _store(cache, "os", "notes.txt", b"buy milk\n")
    steps = [{"type": "download", "parameters": {"files": [{"url": url, "path": "/home/user/notes.txt"}]}},
             {"type": "execute", "parameters": {"command": ["python", "-c",
                                                            "open('/home/user/made.txt', 'w').write('made')"]}},
             {"type": "open", "parameters": {"path": "/home/user/notes.txt"}},
             {"type": "activate_window", "parameters": {"window_name": "notes.txt", "strict": False}},
             {"type": "sleep", "parameters": {"seconds": 0.2}}]
    run_steps(client, steps, cache=cache, task_id=TASK_ID)
    same = _task({"func": "compare_text_file",
                  "result": {"type": "vm_file", "path": "/home/user/notes.txt", "dest": "notes.txt"},
                  "expected": {"type": "cloud_file", "path": url, "dest": "gold.txt"}})
    assert evaluate(client, same, cache=cache, last_action="DONE") == 1.0
    made = _task({"func": "exact_match",
                  "result": {"type": "vm_command_line", "command": ["cat", "/home/user/made.txt"]},
                  "expected": {"type": "rule", "rules": {"expected": "made"}}})
    assert evaluate(client, made, cache=cache) == 1.0
    run_steps(client, [{"type": "execute", "parameters": {"command": "echo 'buy bread' > /home/user/notes.txt",
                                                          "shell": True}}])
    assert evaluate(client, same, cache=cache) == 0.0
    gone = _task(dict(same["evaluator"], result={"type": "vm_file", "path": "/home/user/absent.txt", "dest": "a.txt"}))
    assert evaluate(client, gone, cache=cache) == 0.0
    tree = _task({"func": "check_include_exclude", "result": {"type": "accessibility_tree"},
                  "expected": {"type": "rule", "rules": {"include": ["notes.txt"]}}})
    assert evaluate(client, tree, cache=cache) == 1.0


def test_calc_export_postconfig_and_sheet_print(client, cache):
    gold = _xlsx([["Id", "Name"], ["0001234", "Ada"], ["0000042", "Bob"]])
    url = _store(cache, "libreoffice_calc", "ids.xlsx", gold)
    run_steps(client, [{"type": "download", "parameters": {"files": [
        {"url": url, "path": "/home/user/ids.xlsx"}, {"url": url, "path": "/home/user/gold.xlsx"}]}}],
        cache=cache, task_id=TASK_ID)
    export = "csv:Text - txt - csv (StarCalc):44,34,UTF-8,,,,false,true,true,false,false,1"
    evaluator = {
        "postconfig": [{"type": "execute", "parameters": {"command": [
            "libreoffice", "--headless", "--convert-to", export, "--outdir", "/home/user",
            "/home/user/ids.xlsx", "/home/user/gold.xlsx"]}}],
        "func": "compare_table",
        "result": {"type": "vm_file", "multi": True, "path": ["/home/user/ids.xlsx", "/home/user/ids-Sheet.csv"],
                   "dest": ["ids.xlsx", "ids-Sheet.csv"]},
        "expected": {"type": "vm_file", "multi": True, "path": ["/home/user/gold.xlsx", "/home/user/gold-Sheet.csv"],
                     "dest": ["gold.xlsx", "gold-Sheet.csv"]},
        "options": {"rules": [{"type": "sheet_print", "sheet_idx0": 0, "sheet_idx1": "EI0"},
                              {"type": "sheet_data", "sheet_idx0": 0, "sheet_idx1": "EI0"}]}}
    assert evaluate(client, _task(evaluator), cache=cache) == 1.0
    client.upload("/home/user/ids.xlsx", _xlsx([["Id", "Name"], [1234, "Ada"], [42, "Bob"]]))
    assert evaluate(client, _task(evaluator), cache=cache) == 0.0


def test_docx_task(client, cache, tmp_path):
    import docx

    document = docx.Document()
    document.add_paragraph("Dear team,")
    document.add_paragraph("the meeting moves to Friday.")
    document.save(tmp_path / "letter.docx")
    url = _store(cache, "libreoffice_writer", "letter.docx", (tmp_path / "letter.docx").read_bytes())
    run_steps(client, [{"type": "download", "parameters": {"files": [{"url": url, "path": "/home/user/letter.docx"}]}}],
              cache=cache, task_id=TASK_ID)
    task = _task({"func": "compare_docx_files",
                  "result": {"type": "vm_file", "path": "/home/user/letter.docx", "dest": "letter.docx"},
                  "expected": {"type": "cloud_file", "path": url, "dest": "letter_gold.docx"}})
    assert evaluate(client, task, cache=cache) == 1.0
    document.add_paragraph("P.S. bring snacks")
    buffer = io.BytesIO()
    document.save(buffer)
    client.upload("/home/user/letter.docx", buffer.getvalue())
    assert evaluate(client, task, cache=cache) == 0.0


def test_a_failing_step_raises_setup_failed(client, cache):
    with pytest.raises(SetupFailed, match="step 1 \\(download\\)"):
        run_steps(client, [{"type": "download", "parameters": {"files": [
            {"url": f"{HF_FILE_CACHE_PREFIX}os/{TASK_ID}/absent.txt", "path": "/home/user/x.txt"}]}}],
            cache=cache, task_id=TASK_ID)


def test_relative_download_paths_land_in_home_like_osworlds_eval_scripts(client, cache):
    # OSWorld's os tasks download "eval.sh" (a relative path) in postconfig and then run "bash eval.sh"
    url = _store(cache, "os", "eval.sh", b"#!/bin/bash\necho \"checked $(pwd)\"\n")
    task = _task({"postconfig": [{"type": "download", "parameters": {"files": [{"url": url, "path": "eval.sh"}]}},
                                 {"type": "execute", "parameters": {"command": "chmod +x eval.sh", "shell": True}}],
                  "func": "check_include_exclude",
                  "result": {"type": "vm_command_line", "command": "bash eval.sh", "shell": True},
                  "expected": {"type": "rule", "rules": {"include": ["checked /home/user"], "exclude": ["No such"]}}})
    assert evaluate(client, task, cache=cache) == 1.0
    assert client.get_file("/home/user/eval.sh") is not None


def test_launch_and_close_window(client):
    import time

    def windows() -> str:
        return client.execute(["wmctrl", "-lx"]).get("output") or ""

    run_steps(client, [{"type": "launch", "parameters": {"command": "xterm -T rla-launch-test"}},
                       {"type": "sleep", "parameters": {"seconds": 0.5}}])
    deadline = time.monotonic() + 20
    while "rla-launch-test" not in windows() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert "rla-launch-test" in windows()
    run_steps(client, [{"type": "close_window", "parameters": {"window_name": "rla-launch-test", "strict": True}}])
    deadline = time.monotonic() + 20
    while "rla-launch-test" in windows() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert "rla-launch-test" not in windows()
    # a window that does not exist: logged and ignored, as in OSWorld
    run_steps(client, [{"type": "activate_window", "parameters": {"window_name": "no such window", "strict": True}}])
