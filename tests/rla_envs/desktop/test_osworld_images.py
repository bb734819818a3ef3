"""The image and GIMP metrics, the gimp_config_file getter and their refusals: what our versions decide themselves.

Agreement with OSWorld's functions is in test_oracle_images.py (marker ``oracle``); these cover the cases where we
deliberately differ (OSWorld raises, we score 0 or raise EvaluationError), the metric OSWorld 1.0.2 lacks, and the
evaluation path from a task's JSON to a score.
"""

import subprocess

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageEnhance, ImageOps

from rla_envs.desktop.osworld.cache import FileCache
from rla_envs.desktop.osworld.errors import EvaluationError
from rla_envs.desktop.osworld.evaluator import evaluate
from rla_envs.desktop.osworld.getters import EvalContext, run_getter
from rla_envs.desktop.osworld.metrics import METRICS, get_metric
from rla_envs.desktop.osworld.runnable import not_runnable_reasons
from tests.rla_envs.desktop.image_factory import picture

IMAGE_MODULES = ("images", "image_checks", "config_files")



@pytest.fixture
def save(tmp_path):
    def _save(image, name):
        path = tmp_path / name
        image.save(path)
        return str(path)
    return _save


@pytest.fixture
def broken(tmp_path):
    path = tmp_path / "broken.png"
    path.write_bytes(b"\x89PNG\r\n\x1a\n not really a picture")
    return str(path)


TWO_IMAGE_METRICS = sorted(name for name, module in METRICS.items() if module == "images")


def test_every_image_metric_is_registered_and_importable():
    assert len(TWO_IMAGE_METRICS) == 11
    for name, module in METRICS.items():
        if module in IMAGE_MODULES:
            assert callable(get_metric(name)), name


@pytest.mark.parametrize("name", TWO_IMAGE_METRICS)
def test_a_missing_or_unreadable_result_scores_0_and_a_bad_reference_raises(name, save, broken):
    metric, gold = get_metric(name), save(picture(), "gold.png")
    assert metric(None, gold) == 0.0
    assert metric(broken, gold) == 0.0
    with pytest.raises(EvaluationError, match="not a readable image"):
        metric(save(ImageOps.mirror(picture()) if name == "check_image_mirror" else picture(), "ok.png"), broken)


def test_compare_images_scores_tiny_images_0_and_never_below_0(save):
    compare = get_metric("compare_images")
    tiny = save(Image.new("RGB", (5, 40), "white"), "tiny.png")
    assert compare(tiny, save(picture(), "gold.png")) == 0.0  # OSWorld's SSIM raises: the window does not fit
    stripes = np.tile(np.array([0, 255] * 24, dtype=np.uint8), (48, 1))
    inverse = save(Image.fromarray(255 - stripes), "inverse.png")
    assert compare(inverse, save(Image.fromarray(stripes), "stripes.png")) == 0.0  # SSIM is negative here
    assert compare(save(picture(), "same.png"), save(picture(), "gold2.png")) == 1.0


def test_compare_images_rewards_only_the_gain_over_the_base(save):
    compare, gold = get_metric("compare_images"), save(picture(), "gold.png")
    assert compare(save(picture(), "same.png"), gold, reference_base_result=0.54) == 1.0
    mirrored = save(ImageOps.mirror(picture()), "mirror.png")
    raw = compare(mirrored, gold)
    assert 0.2 < raw < 0.9
    assert compare(mirrored, gold, reference_base_result=raw) == 0.0  # no gain of 0.01 over the base


def test_structure_sim_with_threshold_resizes_and_takes_the_threshold(save):
    metric, gold = get_metric("check_structure_sim_with_threshold"), save(picture(96, 64), "gold.png")
    doubled = save(picture(192, 128), "double.png")  # SSIM ~0.95 once resized to 96x64
    assert metric(doubled, gold) == 1.0
    assert metric(doubled, gold, ssim_threshold=0.99) == 0.0
    assert metric(save(ImageEnhance.Brightness(picture()).enhance(0.3), "dark.png"), gold) == 0.0
    small_gold = save(picture(9, 6), "small_gold.png")  # a 5-pixel window (the largest odd one that fits)
    assert metric(save(picture(9, 6), "small.png"), small_gold) == 1.0


def test_image_size_ignores_transparent_borders_only_when_asked(save):
    metric = get_metric("check_image_size")
    framed = Image.new("RGBA", (200, 200), (0, 0, 0, 0))
    framed.paste(picture(128, 96).convert("RGBA"), (10, 50))
    path = save(framed, "framed.png")
    assert metric(path, {"height": 96, "width": 128, "ignore_transparent": True}) == 1.0
    assert metric(path, {"height": 96}) == 0.0
    assert metric(path, {"height": 200}) == 1.0
    with pytest.raises(EvaluationError, match="rule object"):
        metric(path, "height=200")


def test_image_file_size_is_strictly_under_the_limit(save):
    metric = get_metric("check_image_file_size")
    path = save(picture(), "p.png")
    size = len(open(path, "rb").read())
    assert metric(path, {"max_size": size + 1}) == 1.0
    assert metric(path, {"max_size": size}) == 0.0
    assert metric(path + ".gone", {"max_size": 10**9}) == 0.0


def test_green_background_works_on_wide_images_and_needs_the_same_size(save):
    metric = get_metric("check_green_background")
    mask = Image.new("RGB", (120, 40), "white")
    ImageDraw.Draw(mask).rectangle((40, 10, 80, 30), fill="black")
    green = Image.new("RGB", (120, 40), (10, 200, 20))
    ImageDraw.Draw(green).rectangle((40, 10, 80, 30), fill=(250, 0, 0))  # the object itself may be any colour
    gold = save(mask, "mask.png")
    assert metric(save(green, "green.png"), gold) == 1.0
    ImageDraw.Draw(green).rectangle((0, 0, 5, 5), fill=(200, 200, 200))
    assert metric(save(green, "grey_corner.png"), gold) == 0.0
    assert metric(save(green.resize((60, 20)), "small.png"), gold) == 0.0


def test_textbox_and_triangle_positions(save):
    textbox, triangle = get_metric("check_textbox_on_leftside"), get_metric("check_triangle_position")
    image = Image.new("RGB", (200, 100), "white")
    ImageDraw.Draw(image).text((3, 40), "Hello", fill="black")
    assert textbox(save(image, "left.png")) == 1.0
    moved = Image.new("RGB", (200, 100), "white")
    moved.paste(image.crop((0, 0, 100, 100)), (60, 0))
    assert textbox(save(moved, "moved.png")) == 0.0
    assert triangle(save(Image.new("RGB", (50, 50), "white"), "one_colour.png")) == 0.0  # OSWorld raises
    assert triangle(save(Image.new("L", (50, 50), 255), "grey.png")) == 0.0


GIMPRC = '# GIMP gimprc\n\n(theme "Light")\n   \n(undo-levels 100)\n(default-image\n    (width 1920))\n'


def test_check_config_status_reads_gimp_settings(tmp_path):
    metric = get_metric("check_config_status")
    path = tmp_path / "gimprc"
    path.write_text(GIMPRC, encoding="utf-8")
    assert metric(str(path), {"key": "undo-levels", "value": "100"}) == 1.0  # after a line of blanks
    assert metric(str(path), {"key": "theme", "value": '"Dark"'}) == 0.0
    assert metric(str(path), {"key": "width", "value": "1920"}) == 1.0
    assert metric(str(path), {"key": ["default-image", "width"], "value": "1920"}) == 0.0
    assert metric(None, {"key": "theme", "value": '"Light"'}) == 0.0
    with pytest.raises(EvaluationError, match="'key' and 'value'"):
        metric(str(path), {"type:": "key-value"})


class FilesClient:
    """A controller client whose session holds only the files given (``~`` paths as the controller sees them)."""

    def __init__(self, files):
        self.files = files
        self.asked = []

    def get_file(self, path):
        self.asked.append(path)
        return self.files.get(path)

    def stop_agent_processes(self):
        return {"status": "success", "stopped": [], "window_owners": []}


GIMP_TASK = {
    "id": "7767eef2-56a3-4cea-8c9f-48c070c7d65b",
    "instruction": "Please help change GIMP's theme from dark to light.",
    "config": [],
    "evaluator": {"func": "check_config_status",
                  "result": {"type": "gimp_config_file", "file_name": "gimprc", "dest": "gimprc"},
                  "expected": {"type": "rule", "rules": {"type:": "key-value", "key": "theme", "value": '"Light"'}}},
}


def test_gimp_config_task_scores_from_the_sessions_gimprc(tmp_path):
    light = FilesClient({"~/.config/GIMP/2.10/gimprc": b'(theme "Light")\n'})
    assert evaluate(light, GIMP_TASK, workdir=tmp_path / "a") == 1.0
    assert light.asked == ["~/.config/GIMP/2.10/gimprc"]
    assert evaluate(FilesClient({"~/.config/GIMP/2.10/gimprc": b'(theme "Dark")\n'}), GIMP_TASK) == 0.0
    assert evaluate(FilesClient({}), GIMP_TASK) == 0.0  # GIMP never wrote its settings
    assert not_runnable_reasons(GIMP_TASK, has_app=lambda _: True) == []


def test_gimp_config_getter_refuses_paths_outside_gimps_folder(tmp_path):
    ctx = EvalContext(client=FilesClient({}), cache=FileCache(None), task_id=None, workdir=tmp_path)
    with pytest.raises(EvaluationError, match="must be a file name"):
        run_getter(ctx, {"type": "gimp_config_file", "file_name": "../../.bashrc", "dest": "x"})


def test_ocr_metric_stays_refused_with_its_reason():
    task = {"id": "t", "config": [], "evaluator": {
        "func": "compare_image_text", "result": {"type": "vm_file", "path": "/home/user/Desktop/ls.png", "dest": "ls.png"},
        "expected": {"type": "rule", "rules": {"type": "text", "text": "ls"}}}}
    assert not_runnable_reasons(task, has_app=lambda _: True) == [
        "metric 'compare_image_text' needs OCR (easyocr), which is not installed"]


class LocalShellClient:
    """Runs the getter's command on this machine, as the session's controller would run it there."""

    def execute(self, command, *, shell=False, timeout=120.0):
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
        return {"status": "success", "output": done.stdout, "error": done.stderr, "returncode": done.returncode}


def test_moved_jpgs_task_lists_the_real_folder(tmp_path):
    folder = tmp_path / "cpjpg"
    (folder / "nested").mkdir(parents=True)
    for name in ("a.jpg", "b.jpg"):
        (folder / name).write_bytes(b"\xff\xd8")
    ctx = EvalContext(client=LocalShellClient(), cache=FileCache(None), task_id=None, workdir=tmp_path)
    tree = run_getter(ctx, {"type": "list_directory", "path": str(folder)})
    assert tree == {"type": "directory", "name": "cpjpg", "children": [
        {"type": "file", "name": "a.jpg"}, {"type": "file", "name": "b.jpg"},
        {"type": "directory", "name": "nested", "children": []}]}
    metric = get_metric("check_moved_jpgs")
    assert metric(tree, {"expected": ["b.jpg", "a.jpg", "nested"]}) == 1.0
    assert metric(tree, {"expected": ["a.jpg", "b.jpg"]}) == 0.0
    missing = run_getter(ctx, {"type": "list_directory", "path": str(tmp_path / "nowhere")})
    assert missing is None and metric(missing, {"expected": []}) == 0.0
