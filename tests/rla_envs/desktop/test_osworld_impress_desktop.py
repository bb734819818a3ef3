"""Impress in a real local desktop session: a .pptx opens in LibreOffice Impress, is saved the way OSWorld's
postconfig saves it (Ctrl+S in the window), and the slide metrics score the saved file."""

import shutil
import subprocess

import pytest

from rla_envs.desktop.osworld.cache import HF_FILE_CACHE_PREFIX, FileCache
from rla_envs.desktop.osworld.evaluator import evaluate
from rla_envs.desktop.osworld.getters.impress import background_image_source
from rla_envs.desktop.osworld.setup import run_steps
from tests.rla_envs.desktop.conftest import wait_until
from tests.rla_envs.desktop.pptx_factory import Deck, make_deck

pytestmark = pytest.mark.desktop

TASK_ID = "cccccccc-0000-0000-0000-000000000019"
WINDOW = "deck.pptx - LibreOffice Impress"
SAVE = [{"type": "activate_window", "parameters": {"window_name": WINDOW, "strict": True}},
        {"type": "sleep", "parameters": {"seconds": 0.5}},
        {"type": "execute", "parameters": {"command": [
            "python", "-c", "import pyautogui; import time; pyautogui.hotkey('ctrl', 's'); time.sleep(2);"]}},
        {"type": "sleep", "parameters": {"seconds": 2}}]
RESULT = {"type": "vm_file", "path": "/home/user/deck.pptx", "dest": "deck.pptx"}


def _libreoffice_copy(source, tmp_path):
    """``source`` as LibreOffice Impress writes it (a headless conversion with its own profile on the host)."""
    if not shutil.which("soffice"):
        pytest.skip("LibreOffice (soffice) is not installed on the host")
    out = tmp_path / "libreoffice"
    subprocess.run(["soffice", f"-env:UserInstallation=file://{tmp_path}/profile", "--headless", "--convert-to",
                    "pptx", "--outdir", str(out), str(source)], check=True, capture_output=True, timeout=300)
    return out / source.name


def _task(evaluator):
    return {"id": TASK_ID, "instruction": "test", "config": [], "evaluator": evaluator}


def test_impress_opens_saves_and_scores_a_pptx(desktop_client, tmp_path):
    client, cache = desktop_client, FileCache(tmp_path / "cache")
    source = tmp_path / "deck.pptx"
    make_deck(source, Deck(transition="dissolve", portrait=True))
    gold = _libreoffice_copy(source, tmp_path)
    urls = {}
    for name, path in (("deck.pptx", source), ("gold.pptx", gold)):
        target = cache.root / "libreoffice_impress" / TASK_ID / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(path.read_bytes())
        urls[name] = f"{HF_FILE_CACHE_PREFIX}libreoffice_impress/{TASK_ID}/{name}"
    run_steps(client, [{"type": "download", "parameters": {"files": [
                           {"url": urls["deck.pptx"], "path": RESULT["path"]}]}},
                       {"type": "open", "parameters": {"path": RESULT["path"]}}], cache=cache, task_id=TASK_ID)
    assert wait_until(lambda: WINDOW in (client.execute(["wmctrl", "-l"]).get("output") or ""), timeout=60)

    same = _task({"postconfig": SAVE, "func": "compare_pptx_files", "result": RESULT,
                  "expected": {"type": "cloud_file", "path": urls["gold.pptx"], "dest": "gold.pptx"}})
    assert evaluate(client, same, cache=cache) == 1.0   # Impress saved the deck as the headless conversion did
    transition = _task({"func": "check_transition", "result": RESULT,
                        "expected": {"type": "rule", "rules": {"slide_idx": 0, "transition_type": "dissolve"}}})
    assert evaluate(client, transition, cache=cache) == 1.0
    assert evaluate(client, _task({"func": "check_slide_orientation_Portrait", "result": RESULT}), cache=cache) == 1.0

    other = tmp_path / "other.pptx"
    make_deck(other, Deck(font_size=28))
    client.upload(RESULT["path"], other.read_bytes())
    del same["evaluator"]["postconfig"]  # Impress still shows the old deck: score the uploaded file as it is
    assert evaluate(client, same, cache=cache) == 0.0
    assert evaluate(client, transition, cache=cache) == 0.0


def test_background_picture_of_a_deck_saved_by_impress(tmp_path):
    source = tmp_path / "deck.pptx"
    make_deck(source, Deck(background_picture="blue"))
    saved = _libreoffice_copy(source, tmp_path).read_bytes()
    kind, member = background_image_source(saved, 1)
    assert kind == "member" and member.startswith("ppt/media/")
    assert background_image_source(saved, 0) is None
