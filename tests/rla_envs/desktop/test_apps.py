"""The desktop's apps as OSWorld's tasks start them: the google-chrome launcher with its DevTools port behind
socat, Impress, VLC's HTTP interface, Thunderbird's seeded profile, GIMP; and the table that says which app
opens which file (the controller's open_file and the runnable check share it)."""

from __future__ import annotations

import io
import json
import math
import struct
import wave
from pathlib import Path, PurePosixPath

import pytest

from rla_envs.desktop.controller import openers
from rla_envs.desktop.controller.home import THUNDERBIRD_PROFILE, seed_home
from rla_envs.desktop.osworld.runnable import OPENERS, steps_reasons
from rla_envs.desktop.osworld.cache import FileCache
from rla_envs.desktop.osworld.setup import listen_reusably
from tests.rla_envs.desktop.conftest import wait_until

HOME = "/home/user"

# Polls a URL from inside the session (its network is its own) until it answers 200 or 60 s pass; prints the body.
HTTP_GET = """\
import base64, sys, time, urllib.request
url, password = sys.argv[1], sys.argv[2]
headers = {"Authorization": "Basic " + base64.b64encode(b":" + password.encode()).decode()} if password else {}
deadline = time.monotonic() + 60
while True:
    try:
        print(urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=5).read().decode())
        break
    except OSError as exc:
        if time.monotonic() > deadline:
            sys.exit(f"{url} did not answer: {exc}")
        time.sleep(0.3)
"""


def http_get_in_session(client, url: str, password: str = "") -> str:
    """The body of ``url`` fetched inside the session (polled until it answers)."""
    reply = client.execute(["python3", "-c", HTTP_GET, url, password], timeout=90)
    assert reply["returncode"] == 0, reply
    return reply["output"]


def window_titles(client) -> list[str]:
    return [line.split(None, 3)[-1] for line in client.execute(["wmctrl", "-l"])["output"].splitlines()]


def tone_wav(seconds: int = 30) -> bytes:
    """A mono 8 kHz sine tone, long enough to still be playing when it is asked about."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(8000)
        out.writeframes(b"".join(struct.pack("<h", int(8000 * math.sin(i / 8))) for i in range(8000 * seconds)))
    return buffer.getvalue()


# ----------------------------------------------------------------- the openers table (no desktop needed)

def test_every_extension_has_one_app_and_the_runnable_check_uses_the_same_table():
    seen: dict[str, str] = {}
    for opener in openers.OPENERS:
        for extension in opener.extensions:
            assert extension not in seen, f"{extension} opens in {seen[extension]} and {opener.app}"
            seen[extension] = opener.app
    assert OPENERS == {o.program: (o.app, o.extensions) for o in openers.OPENERS}
    assert {seen[e] for e in (".pptx", ".mp4", ".mp3", ".png", ".xcf", ".pdf", ".xlsx", ".docx", ".txt")} == {
        "LibreOffice Impress", "VLC", "GIMP", "Chromium", "LibreOffice Calc", "LibreOffice Writer", "Mousepad"}


@pytest.mark.parametrize("path, program", [("/home/user/a.mp4", "vlc"), ("/home/user/b.PNG", "gimp"),
                                           ("/home/user/c.pdf", "google-chrome"), ("/home/user/d.pptx", "loimpress")])
def test_an_open_step_needs_the_app_of_its_extension(path, program):
    step = [{"type": "open", "parameters": {"path": path}}]
    assert steps_reasons(step, phase="setup", cache=FileCache(None), task_id=None, has_app=lambda name: True) == []
    reasons = steps_reasons(step, phase="setup", cache=FileCache(None), task_id=None,
                            has_app=lambda name: name != program)
    assert reasons == [f"open: '{PurePosixPath(path).suffix.lower()}' files need {OPENERS[program][0]} "
                       f"('{program}'), which is not installed"]


def test_opener_for_names_the_command_only_when_the_app_is_installed(monkeypatch):
    monkeypatch.setattr(openers.shutil, "which", lambda name: f"/usr/bin/{name}" if name == "vlc" else None)
    assert openers.opener_for(Path("/home/user/clip.mp4")) == ["vlc", "--no-video-title-show", "/home/user/clip.mp4"]
    assert openers.opener_for(Path("/home/user/pic.png")) is None  # gimp missing
    assert openers.opener_for(Path("/home/user/data.xyz")) is None  # no app at all


def test_seeded_home_configures_vlc_http_and_a_thunderbird_profile_like_osworld(tmp_path):
    seed_home(tmp_path)
    vlcrc = (tmp_path / ".config/vlc/vlcrc").read_text().splitlines()
    assert {"extraintf=http", "http-password=password", "qt-privacy-ask=0"} <= set(vlcrc)
    profiles = (tmp_path / ".thunderbird/profiles.ini").read_text()
    assert f"Path={THUNDERBIRD_PROFILE}" in profiles and "Default=1" in profiles
    prefs = (tmp_path / ".thunderbird" / THUNDERBIRD_PROFILE / "user.js").read_text()
    assert 'user_pref("mail.provider.suppress_dialog_on_startup", true);' in prefs
    (tmp_path / ".config/vlc/vlcrc").write_text("kept\n")
    seed_home(tmp_path)  # a file already there is kept (an OSWorld task's own settings)
    assert (tmp_path / ".config/vlc/vlcrc").read_text() == "kept\n"


# ----------------------------------------------------------------- live: the apps in a real local session

@pytest.mark.desktop
def test_google_chrome_serves_devtools_through_socat_with_the_osworld_profile(desktop_client):
    desktop_client.upload(f"{HOME}/page.html", b"<title>rla probe page</title><p>hello</p>")
    # OSWorld's two launch steps as the setup runs them (socat may bind 9222 while an earlier test's connections sit
    # in TIME_WAIT there), plus a page to open (the launcher passes arguments on)
    desktop_client.launch(["google-chrome", "--remote-debugging-port=1337", f"file://{HOME}/page.html"])
    desktop_client.launch(listen_reusably(["socat", "tcp-listen:9222,fork", "tcp:localhost:1337"]))
    version = json.loads(http_get_in_session(desktop_client, "http://localhost:9222/json/version"))
    assert "Chrome/" in version["Browser"] and version["webSocketDebuggerUrl"].startswith("ws://")
    tabs = wait_until(lambda: [t for t in json.loads(http_get_in_session(desktop_client, "http://localhost:9222/json"))
                               if t.get("title") == "rla probe page"], timeout=30)
    assert tabs and tabs[0]["url"] == f"file://{HOME}/page.html", tabs
    # OSWorld's getters read the profile under ~/.config/google-chrome/Default
    assert wait_until(lambda: desktop_client.get_file(f"{HOME}/.config/google-chrome/Default/Preferences"), timeout=30)
    assert wait_until(lambda: any("rla probe page" in t for t in window_titles(desktop_client)), timeout=30)


@pytest.mark.desktop
def test_impress_opens_a_pptx(desktop_client):
    pptx = pytest.importorskip("pptx", reason="python-pptx makes the test deck (pip install 'rla[desktop]')")
    deck = pptx.Presentation()
    deck.slides.add_slide(deck.slide_layouts[0]).shapes.title.text = "Quarterly review"
    buffer = io.BytesIO()
    deck.save(buffer)
    desktop_client.upload(f"{HOME}/review.pptx", buffer.getvalue())
    desktop_client.open_file(f"{HOME}/review.pptx", timeout=90)
    assert "review.pptx - LibreOffice Impress" in window_titles(desktop_client)


@pytest.mark.desktop
def test_vlc_plays_a_file_and_its_http_interface_answers_with_osworlds_password(desktop_client):
    desktop_client.upload(f"{HOME}/Music/tone.wav", tone_wav())
    desktop_client.open_file(f"{HOME}/Music/tone.wav", timeout=60)
    status = http_get_in_session(desktop_client, "http://localhost:8080/requests/status.xml", "password")
    assert "<state>playing</state>" in status and "tone.wav" in status, status[:500]
    refused = desktop_client.execute(["python3", "-c", "import urllib.request as u; u.urlopen("
                                      "'http://localhost:8080/requests/status.xml', timeout=5)"])
    assert refused["returncode"] != 0 and "401" in refused["error"]  # no password, no status


@pytest.mark.desktop
def test_thunderbird_opens_the_seeded_profile_without_the_account_wizard(desktop_client):
    desktop_client.launch(["/usr/bin/thunderbird"])
    assert wait_until(lambda: any(t.endswith("Mozilla Thunderbird") for t in window_titles(desktop_client)),
                      timeout=90), window_titles(desktop_client)
    profile = f"{HOME}/.thunderbird/{THUNDERBIRD_PROFILE}"
    assert wait_until(lambda: desktop_client.get_file(f"{profile}/prefs.js"), timeout=60)
    listing = desktop_client.execute(["ls", f"{HOME}/.thunderbird"])["output"].split()
    assert [name for name in listing if "default" in name] == [THUNDERBIRD_PROFILE]  # no fresh profile made
    assert not any("Account" in t for t in window_titles(desktop_client)), window_titles(desktop_client)


@pytest.mark.desktop
def test_gimp_opens_a_png(desktop_client):
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (64, 48), (200, 30, 30)).save(buffer, format="PNG")
    desktop_client.upload(f"{HOME}/Desktop/swatch.png", buffer.getvalue())
    desktop_client.open_file(f"{HOME}/Desktop/swatch.png", timeout=120)
    assert any("[swatch]" in t and "GIMP" in t for t in window_titles(desktop_client)), window_titles(desktop_client)
