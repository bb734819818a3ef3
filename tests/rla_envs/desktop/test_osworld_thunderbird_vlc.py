"""Thunderbird and VLC support: metrics on hand-written files, getters whose session scripts really run (against
a local stand-in for the controller; VLC's HTTP status against servers in its place: test_listener_probe.py),
refusals, and a real VLC answering its HTTP status in a real session (``desktop``)."""

import os
from pathlib import Path

import pytest

from rla_envs.desktop.osworld.cache import FileCache
from rla_envs.desktop.osworld.getters import EvalContext, run_getter
from rla_envs.desktop.osworld.getters import vlc as vlc_getters
from rla_envs.desktop.osworld.getters.window import window_size_from_wmctrl
from rla_envs.desktop.osworld.metrics import get_metric
from rla_envs.desktop.osworld.metrics.thunderbird import read_filters
from rla_envs.desktop.osworld.runnable import REFUSED_METRICS, not_runnable_reasons
from tests.rla_envs.desktop.conftest import LocalSessionClient, wait_until

def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


# ----------------------------------------------------------------------------------------- Thunderbird
def test_prefs_expect_the_last_setting_and_refuse_an_unexpected_one(tmp_path):
    prefs = _write(tmp_path, "prefs.js", '// header\nuser_pref("mail.identity.id1.auto_quote", true);\n'
                                         'user_pref("mail.identity.id1.auto_quote", false);\n'
                                         'user_pref("mail.identity.id1.htmlSigText", "Anonym\\nXYZ Lab");\n'
                                         'user_pref("mail.server.default.autosync_offline_stores", false);\n')
    check = get_metric("check_thunderbird_prefs")
    assert check(prefs, {"expect": {"mail.identity.id1.auto_quote": {"method": "eq", "ref": False}}}) == 1.0
    assert check(prefs, {"expect": {"mail.identity.id1.htmlSigText": {"method": "re.S", "ref": "Anonym\\nXYZ"}}}) == 1.0
    assert check(prefs, {"expect": {"mail.identity.id1.auto_quote": {"method": "eq", "ref": True}}}) == 0.0
    assert check(prefs, {"expect": {"never.set": {"method": "eq", "ref": 1}}}) == 0.0
    assert check(prefs, {"unexpect": {"mail.server.default.autosync_offline_stores":
                                      {"method": "eq", "ref": False}}}) == 0.0
    assert check(None, {"expect": {}}) == 0.0


def test_filters_are_read_field_by_field_and_matched_as_patterns(tmp_path):
    rules = _write(tmp_path, "msgFilterRules.dat",
                   'version="9"\nlogging="no"\nname="Sale \\"50%\\""\nenabled="yes"\ntype="17"\n'
                   'action="Move to folder"\nactionValue="mailbox://nobody@Local%20Folders/Promotions"\n'
                   'condition="AND (subject,contains,\\"x\\") OR (from,is,\\"a b\\") AND (body,is,y)"\n'
                   'name="All"\nenabled="no"\ntype="17"\naction="Forward"\nactionValue="x@y.org"\ncondition="ALL"\n')
    first, second = read_filters(rules)
    assert first["name"] == 'Sale "50%"' and first["action"] == "Move to folder"
    # a quoted value runs to the last '")' of the line: two terms after a quoted one read as one (OSWorld's split)
    assert first["condition"] == ['AND (subject,contains,"x") OR (from,is,"a b")', "AND (body,is,y)"]
    assert second == {"name": "All", "enabled": "no", "type": "17", "action": "Forward", "actionValue": "x@y.org",
                      "condition": ["ALL"]}
    check = get_metric("check_thunderbird_filter")
    assert check(rules, {"expect": [{"action": "Forward", "condition": ["ALL"]}]}) == 1.0
    assert check(rules, {"expect": [{"action": "Forward", "enabled": "yes"}]}) == 0.0
    assert check(rules, {"expect": [{"name": "All"}], "unexpect": [{"enabled": "no"}]}) == 0.0
    assert check(None, {"expect": []}) == 0.0


def test_a_filter_field_before_any_name_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="before any name"):
        read_filters(_write(tmp_path, "bad.dat", 'enabled="yes"\nname="x"\ncondition="ALL"\n'))


# ----------------------------------------------------------------------------------------- VLC metrics
VLCRC = ("[qt]\n# Show background cone or art (boolean)\n#qt-bgcone=1\nqt-max-volume=200\n"
         "#play-and-exit=0\nglobal-key-play-pause=Ctrl+Space\ninput-record-path=/home/user/Desktop\n")


def test_vlcrc_settings_last_line_wins_commented_defaults_count(tmp_path):
    config = _write(tmp_path, "vlcrc", VLCRC)
    assert get_metric("check_qt_bgcone")(config, {"expected_qt_bgcone": 1}) == 1.0       # '#qt-bgcone=1' counts
    assert get_metric("check_qt_bgcone")(config, {"expected_qt_bgcone": 0}) == 0.0
    assert get_metric("check_qt_max_volume")(config, {"expected_qt_max_volume": 200}) == 1.0
    assert get_metric("check_qt_minimal_view")(config, {"expected_qt_minimal_view": 0}) == 1.0   # the default
    assert get_metric("check_play_and_exit")(config, {"expected_play_and_exit": 0}) == 1.0
    assert get_metric("check_play_and_exit")(_write(tmp_path, "on", "play-and-exit=1\n"),
                                             {"expected_play_and_exit": 0}) == 0.0
    assert get_metric("check_global_key_play_pause")(config, {"expected_global_key_play_pause": 1}) == 1.0
    assert get_metric("is_vlc_recordings_folder")(config, {"recording_file_path": "/home/user/Desktop"}) == 1.0
    assert get_metric("check_one_instance_when_started_from_file")(
        config, {"expected_one_instance_when_started_from_file": 0}) == 0.0               # default 1
    assert get_metric("check_qt_bgcone")(None, {"expected_qt_bgcone": 0}) == 0.0


def test_slider_colours_blackish_needs_every_colour_dark(tmp_path):
    check = get_metric("check_qt_slider_colours")
    assert check(_write(tmp_path, "a", "qt-slider-colours=0;0;0;99;99;99\n"), {"type": "blackish"}) == 1.0
    assert check(_write(tmp_path, "b", "qt-slider-colours=0;0;0;99;100;99\n"), {"type": "blackish"}) == 0.0
    assert check(_write(tmp_path, "c", ""), {"type": "blackish"}) == 0.0                    # VLC's green default
    with pytest.raises(ValueError, match="'match' or 'blackish'"):
        check(_write(tmp_path, "d", ""), {"type": "whitish"})


def _status(state, **meta):
    infos = "".join(f'<info name="{key}">{value}</info>' for key, value in meta.items())
    return f'<root><state>{state}</state><information><category name="meta">{infos}</category></information></root>'


def test_is_vlc_playing_by_file_name_and_stream_url(tmp_path):
    check = get_metric("is_vlc_playing")
    by_name = {"type": "file_name", "file_name": "song.mp4"}
    assert check(_write(tmp_path, "a", _status("playing", filename="song.mp4")), by_name) == 1.0
    assert check(_write(tmp_path, "b", _status("paused", filename="song.mp4")), by_name) == 0.0
    assert check(_write(tmp_path, "c", _status("playing", filename="other.mp4")), by_name) == 0.0
    by_url = {"type": "url", "url": "https://cdn.example.com/live/master.m3u8"}
    assert check(_write(tmp_path, "d", _status("playing", filename="master.m3u8")), by_url) == 1.0
    assert check(_write(tmp_path, "e", _status("playing", url="https://cdn.example.com/live/master.m3u8?t=1")),
                 by_url) == 1.0
    assert check(_write(tmp_path, "f", _status("playing", url="https://evil.example.org/master.m3u8.x")),
                 by_url) == 0.0


def test_fullscreen_compares_window_and_screen_sizes():
    check = get_metric("is_vlc_fullscreen")
    assert check({"width": 1920, "height": 1080}, {"width": 1920, "height": 1080}) == 1.0
    assert check({"width": 1920, "height": 1053}, {"width": 1920, "height": 1080}) == 0.0
    assert check(None, {"width": 1920, "height": 1080}) == 0.0


def test_window_size_from_wmctrl_matches_instance_or_class():
    listing = ("0x00c00003  0 0    0    800  600  mousepad.Mousepad  host  notes.txt - Mousepad\n"
               "0x01a00004  0 0    0    1920 1080 vlc.vlc  host  VLC media player\n")
    assert window_size_from_wmctrl(listing, "VLC") == {"width": 1920, "height": 1080}
    assert window_size_from_wmctrl(listing, "mousepad") == {"width": 800, "height": 600}
    assert window_size_from_wmctrl(listing, "pad") is None


# ----------------------------------------------------------------------------------------- getters
def _ctx(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    return EvalContext(client=LocalSessionClient(home), cache=FileCache(None), task_id=None, workdir=work), home


def test_vlc_config_copies_the_home_vlcrc_or_gives_none(tmp_path):
    ctx, home = _ctx(tmp_path)
    assert run_getter(ctx, {"type": "vlc_config", "dest": "vlcrc"}) is None
    (home / ".config/vlc").mkdir(parents=True)
    (home / ".config/vlc/vlcrc").write_text("qt-bgcone=0\n")
    local = run_getter(ctx, {"type": "vlc_config", "dest": "vlcrc"})
    assert Path(local).read_text() == "qt-bgcone=0\n"
    assert get_metric("check_qt_bgcone")(local, {"expected_qt_bgcone": 0}) == 1.0


def test_default_video_player_votes_over_video_types(tmp_path):
    ctx, _ = _ctx(tmp_path)
    fake = tmp_path / "bin"
    fake.mkdir()
    script = fake / "xdg-mime"  # mp4 and webm open with vlc, avi with totem, the rest with nothing
    script.write_text('#!/bin/sh\ncase "$3" in video/mp4|video/webm) echo vlc.desktop;; '
                      "video/avi) echo org.gnome.Totem.desktop;; esac\n")
    script.chmod(0o755)
    ctx.client.env["PATH"] = f"{fake}:{os.environ['PATH']}"
    assert run_getter(ctx, {"type": "default_video_player"}) == "vlc.desktop\n"
    script.write_text("#!/bin/sh\nexit 1\n")
    assert run_getter(ctx, {"type": "default_video_player"}) == "unknown"
    assert vlc_getters.VIDEO_SUBTYPES.count("x-ogm+ogg") == 1 and vlc_getters.VIDEO_SUBTYPES.count("mp4") == 2


def test_screen_size_getter(tmp_path):
    ctx, _ = _ctx(tmp_path)
    assert run_getter(ctx, {"type": "vm_screen_size"}) == {"width": 1920, "height": 1080}


# ----------------------------------------------------------------------------------------- refusals
def _task(func, result, expected):
    return {"id": "t", "instruction": "x", "config": [],
            "evaluator": {"func": func, "result": result, "expected": expected}}


def test_refusals_name_the_missing_piece():
    slider = _task("check_qt_slider_colours", {"type": "vlc_config", "dest": "vlcrc"},
                   {"type": "rule", "rules": {"type": "whitish"}})
    assert not_runnable_reasons(slider) == ["check_qt_slider_colours rule type 'whitish' is not supported"]
    player = _task("check_include_exclude", {"type": "default_video_player"},
                   {"type": "rule", "rules": {"include": ["vlc.desktop"]}})
    assert not_runnable_reasons(player, has_app=lambda name: name != "xdg-mime") == [
        "getter default_video_player: 'xdg-mime' is not installed"]
    audio = _task("compare_audios", {"type": "vm_file", "path": "/a.mp3", "dest": "a.mp3"}, None)
    assert not_runnable_reasons(audio) == [REFUSED_METRICS["compare_audios"]]
    assert REFUSED_METRICS["compare_audios"].startswith("metric 'compare_audios' is not supported: ")


OSWORLD_EVALUATORS = [  # as in OSWorld's vlc and thunderbird task files
    {"func": "check_qt_bgcone", "expected": {"type": "rule", "rules": {"expected_qt_bgcone": 0}},
     "result": {"type": "vlc_config", "dest": "vlcrc"},
     "postconfig": [{"type": "launch", "parameters": {"command": ["pkill", "vlc"]}},
                    {"type": "launch", "parameters": {"command": "vlc --no-audio --no-video-title-show",
                                                      "shell": True}}]},
    {"func": "is_vlc_playing", "expected": {"type": "rule", "rules": {"type": "file_name", "file_name": "a.mp4"}},
     "result": {"type": "vlc_playing_info", "dest": "status.xml"}},
    {"func": "is_vlc_fullscreen", "expected": {"type": "vm_window_size", "app_class_name": "vlc"},
     "result": {"type": "vm_screen_size"}},
    {"func": "check_thunderbird_filter",
     "result": {"type": "vm_file", "path": "/home/user/.thunderbird/t5q2a5hp.default-release/ImapMail/"
                "outlook.office365.com/msgFilterRules.dat", "dest": "msgFilterRules.dat"},
     "expected": {"type": "rule", "rules": {"expect": [{"enabled": "yes", "action": "Forward",
                                                        "actionValue": "anonym-x2024@gmail.com",
                                                        "condition": ["ALL"]}]}}},
    {"func": "check_include_exclude", "result": {"type": "default_video_player"},
     "expected": {"type": "rule", "rules": {"include": ["vlc.desktop"]}}},
]


@pytest.mark.parametrize("evaluator", OSWORLD_EVALUATORS, ids=lambda e: e["func"])
def test_osworld_vlc_and_thunderbird_evaluators_are_runnable(evaluator):
    task = {"id": "t", "instruction": "x", "config": [], "evaluator": evaluator}
    assert not_runnable_reasons(task, has_app=lambda name: True) == []


# ----------------------------------------------------------------------------------------- a real VLC
@pytest.mark.desktop
def test_a_real_vlc_reports_what_it_plays_over_http(desktop_client, tmp_path):
    if desktop_client.execute(["sh", "-c", "command -v vlc"])["returncode"] != 0:
        pytest.skip("vlc is not installed in the session (scripts/install-desktop.sh)")
    if desktop_client.execute(["id", "-u"])["output"].strip() == "0":
        pytest.skip("the session runs as root, and VLC refuses to run as root")
    import io
    import wave

    sound = io.BytesIO()
    with wave.open(sound, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(8000)
        out.writeframes(b"\x00\x00" * 8000 * 60)
    desktop_client.upload("~/Music/tone.wav", sound.getvalue())
    desktop_client.launch(f"vlc --intf dummy --extraintf http --http-host 127.0.0.1 --http-port "
                          f"{vlc_getters.VLC_HTTP_PORT} --http-password {vlc_getters.VLC_HTTP_PASSWORD} "
                          f"--no-audio --loop ~/Music/tone.wav", shell=True)
    ctx = EvalContext(client=desktop_client, cache=FileCache(None), task_id=None, workdir=tmp_path)
    rule = {"type": "file_name", "file_name": "tone.wav"}
    playing = get_metric("is_vlc_playing")
    assert wait_until(lambda: playing(run_getter(ctx, {"type": "vlc_playing_info", "dest": "s.xml"}), rule), 30)
    assert playing(run_getter(ctx, {"type": "vlc_playing_info", "dest": "s.xml"}),
                   {"type": "file_name", "file_name": "other.wav"}) == 0.0
