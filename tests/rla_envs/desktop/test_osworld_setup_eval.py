"""Setup steps, getters and the evaluator against an in-memory stand-in for the controller client.

These check our own logic (dispatch, parameters, OSWorld's conj/infeasible rules, error mapping); the same code
against a real desktop session is in test_osworld_desktop.py (marker ``desktop``).
"""


import openpyxl
import pytest

from rla_envs.desktop.client import ControllerError
from rla_envs.desktop.osworld.cache import HF_FILE_CACHE_PREFIX, FileCache
from rla_envs.desktop.osworld.errors import EvaluationError, NotRunnable, SetupFailed
from rla_envs.desktop.osworld.evaluator import combine_scores, evaluate, is_fail_action
from rla_envs.desktop.osworld.setup import run_steps

TASK_ID = "aaaaaaaa-0000-0000-0000-000000000001"


class RecordingClient:
    """Files in a dict, commands answered from a script, every call recorded."""

    def __init__(self, files=None, outputs=None, fail=()):
        self.files = dict(files or {})
        self.outputs = list(outputs or [])
        self.fail = set(fail)
        self.calls = []

    def _record(self, name, *args, **kwargs):
        self.calls.append((name, args, kwargs))
        if name in self.fail:
            raise ControllerError(f"POST /setup/{name} -> HTTP 404: no such thing")

    def get_file(self, path):
        self._record("get_file", path)
        return self.files.get(path)

    def upload(self, path, data):
        self._record("upload", path)
        self.files[path] = data

    def _reply(self):
        if self.outputs:
            return self.outputs.pop(0)
        return {"status": "success", "output": "", "error": "", "returncode": 0}

    def execute(self, command, *, shell=False, timeout=120.0):
        self._record("execute", command, shell=shell)
        return self._reply()

    def setup_execute(self, command, *, shell=False, timeout=120.0):
        self._record("setup_execute", command, shell=shell)
        return self._reply()

    def launch(self, command, *, shell=False):
        self._record("launch", command, shell=shell)

    def open_file(self, path, *, timeout=60.0):
        self._record("open_file", path)

    def activate_window(self, name, *, strict=False, by_class=False):
        self._record("activate_window", name, strict=strict, by_class=by_class)

    def close_window(self, name, *, strict=False, by_class=False):
        self._record("close_window", name, strict=strict, by_class=by_class)

    def screen_size(self):
        self._record("screen_size")
        return 1920, 1080

    def stop_agent_processes(self):
        self._record("stop_agent_processes")
        return {"status": "success", "stopped": [], "window_owners": []}

    def accessibility_tree(self):
        self._record("accessibility_tree")
        return "<desktop-frame name='main'/>"


def _cache_with(tmp_path, app, name, data):
    path = tmp_path / "cache" / app / TASK_ID / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return FileCache(tmp_path / "cache"), f"{HF_FILE_CACHE_PREFIX}{app}/{TASK_ID}/{name.replace(' ', '%20')}"


# ---------------------------------------------------------------- setup steps
def test_steps_run_in_order_with_their_parameters(tmp_path):
    cache, url = _cache_with(tmp_path, "os", "notes file.txt", b"hello")
    client, slept = RecordingClient(), []
    steps = [
        {"type": "download", "parameters": {"files": [{"url": url, "path": "/home/user/notes.txt"}]}},
        {"type": "open", "parameters": {"path": "/home/user/notes.txt"}},
        {"type": "launch", "parameters": {"command": "xterm -T demo"}},
        {"type": "execute", "parameters": {"command": ["python", "-c", "print({SCREEN_WIDTH_HALF})"]}},
        {"type": "command", "parameters": {"command": "echo {CLIENT_PASSWORD}", "shell": True}},
        {"type": "sleep", "parameters": {"seconds": 0.5}},
        {"type": "activate_window", "parameters": {"window_name": "notes.txt - Mousepad", "strict": True}},
        {"type": "close_window", "parameters": {"window_name": "xterm", "by_class": True}},
    ]
    run_steps(client, steps, cache=cache, task_id=TASK_ID, sleep=slept.append, password="pw")
    assert client.files["/home/user/notes.txt"] == b"hello"
    calls = [(name, args, kwargs) for name, args, kwargs in client.calls if name != "screen_size"]
    assert calls == [
        ("upload", ("/home/user/notes.txt",), {}),
        ("open_file", ("/home/user/notes.txt",), {}),
        ("launch", (["xterm", "-T", "demo"],), {"shell": False}),     # split on spaces, as OSWorld does
        ("setup_execute", (["python", "-I", "-c", "print(960)"],), {"shell": False}),  # isolated: no ~/*.py
        ("setup_execute", ("echo pw",), {"shell": True}),
        ("activate_window", ("notes.txt - Mousepad",), {"strict": True, "by_class": False}),
        ("close_window", ("xterm",), {"strict": False, "by_class": True}),
    ]
    assert slept == [0.5]


def test_a_missing_download_names_the_step_and_the_url(tmp_path):
    url = f"{HF_FILE_CACHE_PREFIX}os/{TASK_ID}/eval.sh"
    steps = [{"type": "sleep", "parameters": {"seconds": 0}},
             {"type": "download", "parameters": {"files": [{"url": url, "path": "eval.sh"}]}}]
    with pytest.raises(SetupFailed) as caught:
        run_steps(RecordingClient(), steps, cache=FileCache(tmp_path), task_id=TASK_ID, sleep=lambda s: None)
    assert caught.value.step_index == 2 and caught.value.step_type == "download"
    assert str(caught.value) == (f"setup step 2 (download) failed: download: {url} is not in the cache {tmp_path}")


def test_unsupported_and_malformed_steps_fail_clearly():
    with pytest.raises(SetupFailed, match=r"step 1 \(tidy_desktop\): step type 'tidy_desktop' is not suppo"):
        run_steps(RecordingClient(), [{"type": "tidy_desktop", "parameters": {}}])
    with pytest.raises(SetupFailed, match="'seconds' must be a non-negative number"):
        run_steps(RecordingClient(), [{"type": "sleep", "parameters": {"seconds": "soon"}}])
    with pytest.raises(SetupFailed, match="has no 'command'"):
        run_steps(RecordingClient(), [{"type": "launch", "parameters": {}}], phase="postconfig")
    with pytest.raises(SetupFailed, match=r"open\) failed: POST /setup/open_file"):
        run_steps(RecordingClient(fail={"open_file"}), [{"type": "open", "parameters": {"path": "/x"}}])


def test_window_steps_that_find_no_window_are_only_logged():
    client = RecordingClient(fail={"activate_window", "close_window"})
    run_steps(client, [{"type": "activate_window", "parameters": {"window_name": "Nope"}},
                       {"type": "close_window", "parameters": {"window_name": "Nope"}}])
    assert [c[0] for c in client.calls] == ["activate_window", "close_window"]


def test_execute_until_repeats_then_times_out(monkeypatch):
    replies = [{"output": "", "error": "", "returncode": 1}, {"output": "ready\n", "error": "", "returncode": 0}]
    client, slept = RecordingClient(outputs=replies), []
    run_steps(client, [{"type": "execute", "parameters": {"command": "check", "shell": True,
                                                          "until": {"stdout": "ready"}}}], sleep=slept.append)
    assert len([c for c in client.calls if c[0] == "setup_execute"]) == 2 and slept == [0.3]
    monkeypatch.setattr("rla_envs.desktop.osworld.setup.UNTIL_TIMEOUT_S", 0.0)
    with pytest.raises(SetupFailed, match="never met until"):
        run_steps(RecordingClient(), [{"type": "execute", "parameters": {"command": "x", "until": {"returncode": 7}}}],
                  sleep=lambda s: None)


# ---------------------------------------------------------------- evaluator
def _text_task(result_path="/home/user/out.txt", **extra):
    evaluator = {"func": "check_include_exclude",
                 "result": {"type": "vm_command_line", "command": ["cat", result_path]},
                 "expected": {"type": "rule", "rules": {"include": ["done"], "exclude": ["error"]}}}
    evaluator.update(extra)
    return {"id": TASK_ID, "instruction": "x", "config": [], "evaluator": evaluator}


def test_infeasible_and_fail_rules():
    infeasible = {"id": TASK_ID, "instruction": "x", "evaluator": {"func": "infeasible"}}
    assert evaluate(RecordingClient(), infeasible, last_action="FAIL") == 1.0
    assert evaluate(RecordingClient(), infeasible, last_action={"action_type": "FAIL"}) == 1.0
    assert evaluate(RecordingClient(), infeasible, last_action="DONE") == 0.0
    assert evaluate(RecordingClient(), infeasible) == 0.0
    client = RecordingClient(outputs=[{"output": "done\n", "error": "", "returncode": 0}])
    assert evaluate(client, _text_task(), last_action="FAIL") == 0.0      # gave up on a feasible task
    assert client.calls == []                                              # decided without touching the session
    assert is_fail_action(" FAIL ") and not is_fail_action("pyautogui.click()") and not is_fail_action(None)


def test_single_metric_with_postconfig_first(tmp_path):
    client = RecordingClient(outputs=[{"output": "", "error": "", "returncode": 0},
                                      {"output": "all done\n", "error": "", "returncode": 0}])
    task = _text_task(postconfig=[{"type": "execute", "parameters": {"command": ["sync"]}}])
    assert evaluate(client, task, last_action="DONE") == 1.0
    # the agent's leftover processes are stopped before the postconfig step, which comes before the getter
    assert [c[0] for c in client.calls] == ["stop_agent_processes", "setup_execute", "execute"]
    client = RecordingClient(outputs=[{"output": "error: done badly", "error": "", "returncode": 0}])
    assert evaluate(client, _text_task()) == 0.0


def test_conj_and_stops_at_a_zero_and_or_at_a_one():
    def task(conj):
        return {"id": TASK_ID, "instruction": "x", "evaluator": {
            "func": ["exact_match", "exact_match", "exact_match"], "conj": conj,
            "result": [{"type": "vm_command_line", "command": "a"}] * 3,
            "expected": [{"type": "rule", "rules": {"expected": "yes\n"}}] * 3}}

    def outputs(*texts):
        return [{"output": t, "error": "", "returncode": 0} for t in texts]

    client = RecordingClient(outputs=outputs("yes\n", "no\n", "yes\n"))
    assert evaluate(client, task("and")) == 0.0 and len(client.calls) == 3  # stop_agent_processes, 2 getters
    assert evaluate(RecordingClient(outputs=outputs("yes\n") * 3), task("and")) == 1.0
    client = RecordingClient(outputs=outputs("no\n", "yes\n", "no\n"))
    assert evaluate(client, task("or")) == 1.0 and len(client.calls) == 3
    assert evaluate(RecordingClient(outputs=outputs("no\n") * 3), task("or")) == 0.0
    assert combine_scores([1.0, 0.5], "and") == 0.75 and combine_scores([0.25, 0.5], "or") == 0.5


def test_vm_file_and_cloud_file_land_under_their_dest_names(tmp_path):
    def book(path, value):
        workbook = openpyxl.Workbook()
        workbook.active.append(["Id"])
        workbook.active.append([value])
        workbook.save(path)
        return path.read_bytes()

    gold_bytes = book(tmp_path / "g.xlsx", "0001234")
    cache, gold_url = _cache_with(tmp_path, "libreoffice_calc", "Customers_gold.xlsx", gold_bytes)
    _, csv_url = _cache_with(tmp_path, "libreoffice_calc", "Customers_gold.csv", b"Id\n0001234\n")
    task = {"id": TASK_ID, "instruction": "x", "evaluator": {
        "func": "compare_table",
        "result": {"type": "vm_file", "multi": True, "path": ["/home/user/C.xlsx", "/home/user/C-Sheet.csv"],
                   "dest": ["C.xlsx", "C-Sheet.csv"]},
        "expected": {"type": "cloud_file", "multi": True, "path": [gold_url, csv_url],
                     "dest": ["C_gold.xlsx", "C_gold-Sheet.csv"]},
        "options": {"rules": [{"type": "sheet_print", "sheet_idx0": 0, "sheet_idx1": "EI0"},
                              {"type": "sheet_data", "sheet_idx0": 0, "sheet_idx1": "EI0"}]}}}
    good = RecordingClient(files={"/home/user/C.xlsx": book(tmp_path / "r.xlsx", "0001234"),
                                  "/home/user/C-Sheet.csv": b"Id\n0001234\n"})
    workdir = tmp_path / "work"
    assert evaluate(good, task, cache=cache, workdir=workdir) == 1.0
    assert sorted(p.name for p in workdir.iterdir()) == ["C-Sheet.csv", "C.xlsx", "C_gold-Sheet.csv", "C_gold.xlsx"]
    bad = RecordingClient(files={"/home/user/C.xlsx": book(tmp_path / "r2.xlsx", 1234),
                                 "/home/user/C-Sheet.csv": b"Id\n1234\n"})
    assert evaluate(bad, task, cache=cache) == 0.0
    assert evaluate(RecordingClient(), task, cache=cache) == 0.0      # the agent never saved the file
    with pytest.raises(NotRunnable, match="cloud_file: .* is not in the cache"):
        evaluate(good, task, cache=FileCache(tmp_path / "empty"))


def test_other_getters(tmp_path):
    tree_task = {"id": TASK_ID, "instruction": "x", "evaluator": {
        "func": "check_include_exclude", "result": {"type": "accessibility_tree"},
        "expected": {"type": "rule", "rules": {"include": ["desktop-frame"]}}}}
    assert evaluate(RecordingClient(), tree_task) == 1.0
    stderr_task = {"id": TASK_ID, "instruction": "x", "evaluator": {
        "func": "check_include_exclude", "result": {"type": "vm_command_error", "command": ["python", "-c", "1/0"]},
        "expected": {"type": "rule", "rules": {"include": [], "exclude": ["Error"]}}}}
    client = RecordingClient(outputs=[{"output": "", "error": "ZeroDivisionError", "returncode": 1}])
    assert evaluate(client, stderr_task) == 0.0
    stdout_task = {"id": TASK_ID, "instruction": "x", "evaluator": {
        "postconfig": [{"type": "execute", "parameters": {"command": "ls", "shell": True, "stdout": "listing.txt"}}],
        "func": "file_contains", "result": {"type": "cache_file", "path": "listing.txt"},
        "expected": {"type": "rule", "rules": {"expected": ["report.pdf"]}}}}
    client = RecordingClient(outputs=[{"output": "a.txt\nreport.pdf\n", "error": "", "returncode": 0}])
    assert evaluate(client, stdout_task) == 1.0


def test_run_time_failures_raise_instead_of_scoring(tmp_path):
    with pytest.raises(NotRunnable, match="metric 'no_such_metric' is not supported"):
        evaluate(RecordingClient(), {"id": TASK_ID, "instruction": "x", "evaluator": {
            "func": "no_such_metric", "result": {"type": "vm_file", "path": "/a.pptx", "dest": "a.pptx"}}})
    with pytest.raises(SetupFailed, match="postconfig step 1"):
        evaluate(RecordingClient(fail={"open_file"}),
                 _text_task(postconfig=[{"type": "open", "parameters": {"path": "/x"}}]))

    class Broken(RecordingClient):
        def execute(self, command, *, shell=False, timeout=120.0):
            raise ControllerError("POST /execute failed: connection refused")

    with pytest.raises(EvaluationError, match="connection refused"):
        evaluate(Broken(), _text_task())
    # a dest that cannot be a file under the evaluation folder is a reason the task cannot run (refused before
    # any episode, and again here), never an OSError from the file system
    for dest, reason in (("../a", "'dest' must be a file name"), ("x" * 300, "longer than 255 bytes")):
        bad_options = _text_task(func="compare_text_file", result={"type": "vm_file", "path": "/a", "dest": dest})
        with pytest.raises(NotRunnable, match=reason):
            evaluate(RecordingClient(files={"/a": b"x"}), bad_options)


def test_relative_time_expected_values_through_the_evaluator():
    import datetime as dt
    import json

    tomorrow = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=1)).date()
    task = {"id": TASK_ID, "instruction": "x", "evaluator": {
        "func": "check_direct_json_object",
        "result": {"type": "vm_command_line", "command": "cat /home/user/booking.json", "shell": True},
        "expected": {"type": "rule_relativeTime", "rules": {
            "relativeTime": {"from": "tomorrow"}, "timezone": "UTC",
            "expected": {"start": "JFK", "time": "{Year}-{Month0D}-{Day0D}"}}}}}

    def reply(day):
        return [{"output": json.dumps({"start": "JFK", "time": day.isoformat()}), "error": "", "returncode": 0}]

    # (a run exactly at midnight UTC could see two different days; the test accepts either)
    good = evaluate(RecordingClient(outputs=reply(tomorrow)), task)
    late = evaluate(RecordingClient(outputs=reply(tomorrow + dt.timedelta(days=1))), task)
    assert good == 1.0 or late == 1.0
    assert evaluate(RecordingClient(outputs=reply(tomorrow + dt.timedelta(days=7))), task) == 0.0


def test_a_socat_listener_is_launched_with_reuseaddr():
    from rla_envs.desktop.osworld.setup import listen_reusably

    osworld = ["socat", "tcp-listen:9222,fork", "tcp:localhost:1337"]
    assert listen_reusably(osworld) == ["socat", "tcp-listen:9222,fork,reuseaddr", "tcp:localhost:1337"]
    assert osworld == ["socat", "tcp-listen:9222,fork", "tcp:localhost:1337"]  # the task is not changed
    assert listen_reusably(["/usr/bin/socat", "TCP4-LISTEN:80,reuseaddr", "-"]) == ["/usr/bin/socat",
                                                                                 "TCP4-LISTEN:80,reuseaddr", "-"]
    assert listen_reusably(["google-chrome", "tcp-listen:1"]) == ["google-chrome", "tcp-listen:1"]
    assert listen_reusably("socat tcp-listen:9222,fork tcp:localhost:1337") == \
        "socat tcp-listen:9222,fork tcp:localhost:1337"  # a shell string is the shell's to run
