"""not_runnable_reasons on synthetic task dicts: each unsupported kind gets its exact reason, before any episode."""

import pytest

from rla_envs.desktop.osworld.cache import HF_FILE_CACHE_PREFIX, FileCache
from rla_envs.desktop.osworld.runnable import LIVE_WEB_STATE_METRICS, not_runnable_reasons, program_of, programs_of
from rla_envs.desktop.osworld.tasks import load_task

TASK_ID = "11111111-2222-3333-4444-555555555555"
GOLD_URL = f"{HF_FILE_CACHE_PREFIX}libreoffice_calc/{TASK_ID}/gold.xlsx"
DOC_URL = f"{HF_FILE_CACHE_PREFIX}libreoffice_calc/{TASK_ID}/start.xlsx"


def everything_installed(_name):
    return True


def _task(config=None, **evaluator):
    evaluator.setdefault("func", "exact_match")
    evaluator.setdefault("result", {"type": "vm_command_line", "command": "cat /home/user/x.txt", "shell": True})
    evaluator.setdefault("expected", {"type": "rule", "rules": {"expected": "ok\n"}})
    return {"id": TASK_ID, "instruction": "Do the thing.", "config": config or [], "evaluator": evaluator}


def _reasons(task, cache=None, has_app=everything_installed):
    return not_runnable_reasons(task, cache=cache, has_app=has_app)


def test_a_plain_supported_task_is_runnable():
    assert _reasons(_task([{"type": "sleep", "parameters": {"seconds": 1}}])) == []
    assert _reasons(load_task(_task())) == []   # a Task works as well as the dict


@pytest.mark.parametrize("step", ["tidy_desktop", "act", "replay", "change_wallpaper"])
def test_unsupported_setup_steps(step):
    assert _reasons(_task([{"type": step, "parameters": {}}])) == [f"setup step '{step}' is not supported"]


def test_unsupported_postconfig_step():
    task = _task(postconfig=[{"type": "tidy_desktop", "parameters": {}}])
    assert _reasons(task) == ["postconfig step 'tidy_desktop' is not supported"]


def test_download_missing_from_the_cache_then_present(tmp_path):
    task = _task([{"type": "download", "parameters": {"files": [{"url": DOC_URL, "path": "/home/user/s.xlsx"}]}}])
    assert _reasons(task, FileCache(tmp_path)) == [f"download: {DOC_URL} is not in the cache {tmp_path}"]
    assert _reasons(task) == [f"download: {DOC_URL} is not in the cache (no cache directory)"]
    stored = tmp_path / "libreoffice_calc" / TASK_ID / "start.xlsx"
    stored.parent.mkdir(parents=True)
    stored.write_bytes(b"PK")
    assert _reasons(task, FileCache(tmp_path)) == []


def test_cloud_file_missing_from_the_cache(tmp_path):
    task = _task(func="compare_table", result={"type": "vm_file", "path": "/home/user/s.xlsx", "dest": "s.xlsx"},
                 expected={"type": "cloud_file", "path": GOLD_URL, "dest": "gold.xlsx"},
                 options={"rules": [{"type": "sheet_data", "sheet_idx0": 0, "sheet_idx1": "EI0"}]})
    assert _reasons(task, FileCache(tmp_path)) == [f"cloud_file: {GOLD_URL} is not in the cache {tmp_path}"]
    (tmp_path / TASK_ID).mkdir()
    (tmp_path / TASK_ID / "gold.xlsx").write_bytes(b"PK")          # OSWorld's own <task-id>/<dest> layout
    assert _reasons(task, FileCache(tmp_path)) == []


def test_apps_that_are_not_installed():
    installed = {"python", "bash", "libreoffice"}.__contains__
    task = _task([{"type": "launch", "parameters": {"command": ["google-chrome", "--remote-debugging-port=1337"]}},
                  {"type": "launch", "parameters": {"command": "socat tcp-listen:9222,fork tcp:localhost:1337",
                                                    "shell": True}},
                  {"type": "launch", "parameters": {"command": ["libreoffice", "--calc"]}},
                  {"type": "execute", "parameters": {"command": ["python", "-c", "import pyautogui"]}},
                  {"type": "command", "parameters": {"command": "code --install-extension x", "shell": True}},
                  {"type": "execute", "parameters": {"command": ["./setup.sh"]}}],   # a downloaded script
                 result={"type": "vm_command_line", "command": "gsettings get org.gnome.x y", "shell": True})
    assert _reasons(task, has_app=installed) == ["launch: 'google-chrome' is not installed",
                                                 "launch: 'socat' is not installed",
                                                 "execute: 'code' is not installed",
                                                 "getter vm_command_line: 'gsettings' is not installed"]


def test_open_needs_the_app_for_the_file_type():
    installed = {"localc", "lowriter", "mousepad", "cat"}.__contains__

    def opening(path):
        return _reasons(_task([{"type": "open", "parameters": {"path": path}}]), has_app=installed)

    assert opening("/home/user/Desktop/budget.xlsx") == []
    assert opening("/home/user/essay.DOCX") == []
    assert opening("/home/user/notes.txt") == []
    assert opening("/home/user/talk.pptx") == [
        "open: '.pptx' files need LibreOffice Impress ('loimpress'), which is not installed"]
    assert opening("/home/user/photo.png") == ["open: '.png' files need GIMP ('gimp'), which is not installed"]
    assert opening("/home/user/archive.xyz") == ["open: no app in the session opens '.xyz' files"]
    assert _reasons(_task([{"type": "open", "parameters": {"path": "/home/user/talk.pptx"}}])) == []


def test_every_line_of_a_shell_script_is_checked():
    script = "export DBUS_SESSION_BUS_ADDRESS='unix:path=/run/user/1000/bus'\ngnome-terminal --maximize\nls -l"
    task = _task([{"type": "execute", "parameters": {"command": script, "shell": True}}])
    assert _reasons(task, has_app={"ls", "cat"}.__contains__) == ["execute: 'gnome-terminal' is not installed"]
    assert programs_of("if [ -f x ]; then\n  rm x\nfi") == ["rm"]


def test_sudo_is_not_available():
    task = _task([{"type": "execute", "parameters": {"command": "echo {CLIENT_PASSWORD} | sudo -S apt install x",
                                                     "shell": True}}])
    assert _reasons(task) == ["execute: needs sudo (the password), which the session does not grant"]


def test_services_the_session_does_not_run():
    timezone = _task(func="is_utc_0", result={"type": "vm_command_line", "command": "timedatectl status",
                                              "shell": True}, expected=None)
    assert _reasons(timezone) == [
        "getter vm_command_line: needs systemd's time service (timedatectl), which the session does not run"]
    favourites = "export DBUS_SESSION_BUS_ADDRESS=x\ngsettings set org.gnome.shell favorite-apps \"['a.desktop']\""
    assert _reasons(_task([{"type": "execute", "parameters": {"command": favourites, "shell": True}}])) == [
        "execute: needs GNOME Shell's settings (org.gnome.shell), which the openbox session does not have"]
    wallpaper = "gsettings get org.gnome.desktop.background picture-uri"
    assert _reasons(_task(result={"type": "vm_command_line", "command": wallpaper, "shell": True})) == []


def test_live_web_pages_are_refused():
    assert _reasons(_task(func="literal_match", expected={"type": "info_from_website", "url": "https://x.org"})) == [
        "getter 'info_from_website': needs the internet (it reads the expected values from a live web page)"]


def test_unsupported_metrics_and_getters():
    assert _reasons(_task(func="no_such_metric")) == ["metric 'no_such_metric' is not supported"]
    assert _reasons(_task(result={"type": "an_unknown_getter"})) == ["getter 'an_unknown_getter' is not supported"]
    assert _reasons(_task(result={"type": "active_tab_html_parse"})) == [
        "getter 'active_tab_html_parse' category None is not supported (supported: class, class&url, input, xpath)"]
    assert _reasons(_task(expected={"type": "googledrive_file"})) == ["getter 'googledrive_file' is not supported"]
    # found by the fuzz test: a metric name that is an object raised TypeError (unhashable) out of the survey
    assert _reasons(_task(func={"name": "exact_match"})) == ["evaluator: metric name {'name': 'exact_match'} is not a string"]


def test_relative_time_rules():
    def relative(**rules):
        rules.setdefault("expected", {"time": "{Year}-{Month0D}-{Day0D}"})
        return _task(func="check_direct_json_object", expected={"type": "rule_relativeTime", "rules": rules})

    assert _reasons(relative(relativeTime={"from": "next week Saturday", "to": "next week Sunday"},
                             timezone="America/New_York")) == []
    assert _reasons(relative(relativeTime={"from": "the day after Easter"})) == [
        "getter 'rule_relativeTime': relative time 'the day after Easter' is not supported"]
    assert _reasons(relative(relativeTime={"from": "tomorrow"}, timezone="Mars/Olympus")) == [
        "getter 'rule_relativeTime': unknown timezone 'Mars/Olympus'"]
    assert _reasons(relative(relativeTime="tomorrow")) == [
        "getter 'rule_relativeTime': needs rules with 'relativeTime' {'from': ...} and 'expected'"]


@pytest.mark.parametrize("rule", ["sparkline", "filter"])
def test_unsupported_compare_table_rules(rule):
    task = _task(func="compare_table", result={"type": "vm_file", "path": "/home/user/s.xlsx", "dest": "s.xlsx"},
                 expected=None, options={"rules": [{"type": "sheet_name"}, {"type": rule}]})
    assert _reasons(task) == [f"compare_table rule '{rule}' is not supported"]


def test_compare_table_chart_properties():
    options = {"rules": [{"type": "chart", "sheet_idx0": 0, "sheet_idx1": "EI0", "chart_props": ["type", "shadow"]}]}
    task = _task(func="compare_table", result={"type": "vm_file", "path": "/home/user/s.xlsx", "dest": "s.xlsx"},
                 expected=None, options=options)
    assert _reasons(task) == ["compare_table chart property 'shadow' is not supported"]


def test_compare_table_cell_properties_and_methods():
    options = {"rules": [{"type": "check_cell", "sheet_idx": 0, "coordinate": "A1",
                          "props": {"shadow": {"method": "eq", "ref": 1}, "value": {"method": "soundex", "ref": 1}}}]}
    task = _task(func="compare_table", result={"type": "vm_file", "path": "/home/user/s.xlsx", "dest": "s.xlsx"},
                 expected=None, options=options)
    assert _reasons(task) == ["compare_table check_cell property 'shadow' is not supported",
                              "compare_table rule method 'soundex' is not supported"]


def test_list_evaluators_check_every_entry_and_their_lengths():
    task = _task(func=["exact_match", "no_such_metric"], conj="or",
                 result=[{"type": "vm_command_line", "command": "ls"}, {"type": "vm_file", "path": "/a", "dest": "a"}],
                 expected=[{"type": "rule", "rules": {"expected": "x"}}, {"type": "vm_file", "path": "/b", "dest": "b"}])
    assert _reasons(task) == ["metric 'no_such_metric' is not supported"]
    short = _task(func=["exact_match", "exact_match"], result=[{"type": "vm_command_line", "command": "ls"}],
                  expected=[{"type": "rule", "rules": {"expected": "x"}}] * 2)
    assert _reasons(short) == ["evaluator: 'func' lists 2 metrics but 'result' has 1 entries"]
    assert _reasons(_task(conj="xor", func=["exact_match"], result=[{"type": "rule", "rules": "x"}],
                          expected=[{"type": "rule", "rules": {"expected": "x"}}])) == [
        "evaluator: conj 'xor' is not 'and' or 'or'"]


def test_odt_documents_are_not_supported():
    task = _task(func="compare_docx_files", result={"type": "vm_file", "path": "/home/user/a.odt", "dest": "a.odt"},
                 expected={"type": "vm_file", "path": "/home/user/b.odt", "dest": "b.odt"})
    assert _reasons(task) == ["compare_docx_files: .odt files are not supported"]


def test_infeasible_needs_no_getters():
    assert _reasons({"id": "x", "instruction": "y", "evaluator": {"func": "infeasible"}}) == []


def test_reasons_are_listed_once():
    step = {"type": "tidy_desktop", "parameters": {}}
    assert _reasons(_task([step, step])) == ["setup step 'tidy_desktop' is not supported"]


@pytest.mark.parametrize("command, program", [
    (["google-chrome", "--x"], "google-chrome"), ("socat a b", "socat"), (["tinyproxy -c /tmp/c -d"], "tinyproxy"),
    ("FOO=1 bar -x", "bar"), ("X=$(timeout 10 gsettings get a b)", None), ("[ -f x ] && echo y", None),
    ("", None), ([], None), (None, None), ("pulseaudio --start\npactl list", "pulseaudio"),
])
def test_program_of(command, program):
    assert program_of(command) == program


def test_a_metric_list_needs_getter_lists_beside_it():
    # OSWorld (and the evaluator) walk 'result' entry by entry beside 'func': a single getter there is malformed
    getter = {"type": "vm_command_line", "command": "cat /home/user/x.txt", "shell": True}
    task = _task(func=["exact_match", "exact_match"], result=getter,
                 expected=[{"type": "rule", "rules": {"expected": "a"}}, {"type": "rule", "rules": {"expected": "b"}}])
    assert _reasons(task) == ["evaluator: 'func' lists 2 metrics but 'result' is not a list"]
    task["evaluator"]["result"] = [getter, getter]
    assert _reasons(task) == []


def test_open_step_extensions_follow_the_controllers_table():
    # .srt and .bib open in mousepad in the session, so an open step on them is runnable when mousepad is
    installed = {"mousepad", "cat"}.__contains__
    for name in ("subtitles.srt", "refs.bib"):
        assert _reasons(_task([{"type": "open", "parameters": {"path": f"/home/user/{name}"}}]), has_app=installed) == []
    assert _reasons(_task([{"type": "open", "parameters": {"path": "/home/user/a.xlsx"}}]), has_app=installed) != []


def test_a_goal_that_only_the_internet_could_unmake_is_refused():
    """chrome/7b6c7e24 ("get rid of Amazon's tracking cookies"): its setup opens amazon.com, offline no cookie is ever
    set, so the goal would hold at reset; seeded offline (no web page opened) the same metric stays runnable."""
    opens = [{"type": "chrome_open_tabs", "parameters": {"urls_to_open": ["https://www.amazon.com"]}}]
    evaluator = {"func": "is_cookie_deleted", "result": {"type": "cookie_data", "dest": "Cookies"},
                 "expected": {"type": "rule", "rules": {"type": "domains", "domains": [".amazon.com"]}}}
    assert _reasons(_task(opens, **evaluator)) == [LIVE_WEB_STATE_METRICS["is_cookie_deleted"]]
    assert _reasons(_task([], **evaluator)) == []
    assert _reasons(_task([{"type": "chrome_open_tabs", "parameters": {"urls_to_open": "not a list"}}], **evaluator)) == []
