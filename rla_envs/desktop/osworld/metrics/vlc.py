"""OSWorld's VLC metrics: settings in ``vlcrc``, what VLC is playing, whether its window fills the screen.

The ``vlcrc`` checks read the file the ``vlc_config`` getter copies out of the session and score as OSWorld's
functions of the same name do, quirks included: a setting's value is taken from the LAST line that contains
``<key>=`` anywhere (VLC writes its defaults as comments, ``#qt-bgcone=1``, so a commented line counts too), as the
text after the line's last ``=``; without such a line the setting has VLC's default. An integer in the rule is
compared as its text (``0`` -> ``"0"``). A missing result file (None) scores 0.

``is_vlc_playing`` reads the ``status.xml`` of VLC's HTTP interface (the ``vlc_playing_info`` getter).
``compare_videos`` and ``compare_audios`` are not here: OSWorld decodes video with OpenCV and compares audio by
MFCC features (librosa) aligned with fastdtw, and no light library computes the same numbers.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlparse
from xml.etree import ElementTree

__all__ = ["is_vlc_playing", "is_vlc_recordings_folder", "is_vlc_fullscreen", "check_qt_bgcone",
           "check_qt_max_volume", "check_qt_minimal_view", "check_qt_slider_colours", "check_global_key_play_pause",
           "check_one_instance_when_started_from_file", "check_play_and_exit", "VLC_DEFAULTS"]

VLC_DEFAULTS: dict[str, str] = {
    "qt-bgcone": "1",
    "qt-max-volume": "125",
    "qt-minimal-view": "0",
    "qt-slider-colours": "153;210;153;20;210;20;255;199;15;245;39;29",
    "one-instance-when-started-from-file": "1",
    "play-and-exit": "0",
}
"""VLC 3.0's default for each setting the metrics check (what OSWorld assumes when ``vlcrc`` lacks the line)."""

BLACKISH_BELOW = 100
"""A slider colour is blackish when each of its red, green and blue values is below this."""

_FILE_INFO_NAMES = ("filename", "title", "uri", "location", "name")
_URL_INFO_PATHS = tuple(f'information/category[@name="meta"]/info[@name="{name}"]'
                        for name in ("url", "URI", "location", "title", "filename")) + tuple(
    f'information/category[@name="Stream 0"]/info[@name="{name}"]' for name in ("Codec", "Type", "Language"))


def _read_text(path: str) -> str:
    with open(path, "rb") as file:
        return file.read().decode("utf-8")


def vlcrc_setting(text: str, key: str, default: str, *, marker: str | None = None) -> str:
    """The value OSWorld reads for ``key`` from ``vlcrc`` text: the text after the last ``=`` of the last line
    containing ``marker`` (default ``"<key>="``), stripped; ``default`` without such a line."""
    marker = f"{key}=" if marker is None else marker
    value = default
    for line in text.split("\n"):
        if marker in line:
            value = line.split("=")[-1].strip()
    return value


def _as_text(expected: Any) -> Any:
    """An integer rule value as its text (OSWorld's ``str(int)``; True becomes ``"True"``), anything else as is."""
    return str(expected) if isinstance(expected, int) else expected


def _setting_check(key: str, rule_key: str) -> Callable[[Any, Mapping[str, Any]], float]:
    def check(actual_config_path: Any, rule: Mapping[str, Any]) -> float:
        if actual_config_path is None:
            return 0.0
        text = _read_text(actual_config_path)
        expected = _as_text(rule[rule_key])
        return 1.0 if vlcrc_setting(text, key, VLC_DEFAULTS[key]) == expected else 0.0

    check.__name__ = f"check_{key.replace('-', '_')}"
    check.__doc__ = (f"1 when vlcrc's ``{key}`` (default {VLC_DEFAULTS[key]}) is ``rule[{rule_key!r}]``, else 0.")
    return check


check_qt_bgcone = _setting_check("qt-bgcone", "expected_qt_bgcone")
check_qt_max_volume = _setting_check("qt-max-volume", "expected_qt_max_volume")
check_qt_minimal_view = _setting_check("qt-minimal-view", "expected_qt_minimal_view")
check_one_instance_when_started_from_file = _setting_check("one-instance-when-started-from-file",
                                                           "expected_one_instance_when_started_from_file")
check_play_and_exit = _setting_check("play-and-exit", "expected_play_and_exit")


def check_global_key_play_pause(actual_config_path: Any, rule: Mapping[str, Any]) -> float:
    """1 when a global play/pause hotkey is set (``"1"``) or not (``"0"``) as ``rule`` expects, else 0.

    Set means the last line containing ``global-key-play-pause=`` has text after its last ``=``.
    """
    if actual_config_path is None:
        return 0.0
    text = _read_text(actual_config_path)
    expected = _as_text(rule["expected_global_key_play_pause"])
    value = vlcrc_setting(text, "global-key-play-pause", "")
    return 1.0 if ("1" if value else "0") == expected else 0.0


def check_qt_slider_colours(actual_config_path: Any, rule: Mapping[str, Any]) -> float:
    """1 when the volume slider's colours (``qt-slider-colours``) match the rule, else 0.

    ``{"type": "match", "expected_qt_slider_colours": "r;g;b;..."}`` compares the text;
    ``{"type": "blackish"}`` wants every ``r;g;b`` triple below :data:`BLACKISH_BELOW` (an unparsable value
    scores 0, and so does a rule without a type). Any other type raises ValueError (OSWorld returns no score).
    """
    if actual_config_path is None:
        return 0.0
    text = _read_text(actual_config_path)
    key = "qt-slider-colours"
    value = vlcrc_setting(text, key, VLC_DEFAULTS[key], marker=key)
    kind = rule.get("type")
    if kind is None:
        return 0.0
    if kind == "match":
        return 1.0 if "expected_qt_slider_colours" in rule and value == rule["expected_qt_slider_colours"] else 0.0
    if kind == "blackish":
        try:
            numbers = [int(part) for part in value.split(";")]
        except ValueError:
            return 0.0
        colours = list(zip(numbers[0::3], numbers[1::3], numbers[2::3]))  # an incomplete last triple is dropped
        return 1.0 if all(max(colour) < BLACKISH_BELOW for colour in colours) else 0.0
    raise ValueError(f"check_qt_slider_colours: rule type must be 'match' or 'blackish', got {kind!r}")


def is_vlc_recordings_folder(actual_config_path: Any, rule: Mapping[str, Any]) -> float:
    """1 when VLC's record folder (``input-record-path``, the first uncommented line naming it) is
    ``rule["recording_file_path"]``, else 0."""
    if actual_config_path is None:
        return 0.0
    text = _read_text(actual_config_path)
    expected = rule["recording_file_path"]
    for line in text.split("\n"):
        if line.startswith("#") or not line.strip():
            continue
        if "input-record-path" in line:
            return 1.0 if line.split("=")[-1].strip() == expected else 0.0
    return 0.0


def is_vlc_fullscreen(actual_window_size: Any, screen_size: Any) -> float:
    """1 when VLC's window (``{"width", "height"}``) is exactly the screen's size, else 0 (0 without either)."""
    if screen_size is None or actual_window_size is None:
        return 0.0
    same = (actual_window_size["width"] == screen_size["width"]
            and actual_window_size["height"] == screen_size["height"])
    return 1.0 if same else 0.0


def is_vlc_playing(actual_status_path: Any, rule: Mapping[str, Any]) -> float:
    """1 when VLC's status says ``playing`` the expected file or stream, else 0.

    ``{"type": "file_name", "file_name": ...}``: the first non-empty meta ``filename``/``title``/``uri``/
    ``location``/``name`` must end with the name. ``{"type": "url", "url": ...}``: the first non-empty meta
    ``url``/``URI``/``location``/``title``/``filename`` (or Stream 0's ``Codec``/``Type``/``Language``) must contain
    or end with the URL, be the URL's file name, or be a URL on the same host whose path contains the URL's path.
    A status without a ``state`` element raises ValueError (OSWorld fails on it too).
    """
    if actual_status_path is None:
        return 0.0
    tree = ElementTree.fromstring(_read_text(actual_status_path))
    state = tree.find("state")
    if state is None:
        raise ValueError("is_vlc_playing: VLC's status has no <state> element")
    if state.text != "playing":
        return 0.0
    kind = rule["type"]
    if kind == "file_name":
        info = _first_text(tree, [f'information/category[@name="meta"]/info[@name="{name}"]'
                                  for name in _FILE_INFO_NAMES])
        expected = rule["file_name"]
        return 1.0 if info and (os.path.basename(info) == expected or info.endswith(expected)) else 0.0
    if kind == "url":
        info = _first_text(tree, _URL_INFO_PATHS)
        return 1.0 if info and _url_matches(rule["url"], info) else 0.0
    return 0.0


def _first_text(tree: ElementTree.Element, paths: Any) -> str | None:
    for path in paths:
        element = tree.find(path)
        if element is not None and element.text:
            return element.text
    return None


def _url_matches(expected_url: str, shown: str) -> bool:
    """Whether what VLC shows for a stream (``shown``) is the stream at ``expected_url``."""
    if expected_url in shown:
        return True
    try:
        expected = urlparse(expected_url)
        if shown == os.path.basename(expected.path):
            return True
        if "://" in shown:
            actual = urlparse(shown)
            return expected.netloc == actual.netloc and expected.path in actual.path
    except ValueError:  # an unparsable URL (a bad port or IPv6 host) matches nothing
        return False
    return False
