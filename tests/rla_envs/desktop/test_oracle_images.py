"""Differential tests: our image and GIMP metrics score what OSWorld's functions of the same name score.

Every image is drawn here (a picture of gradients and shapes, then edited: brighter, darker, more saturated,
more contrast, mirrored, resized, cropped, indexed; or replaced by an unrelated one). ``oracle_metric`` is
desktop-env's function (see ``osworld_oracle``). Cases where OSWorld raises on the agent's file and we score 0
(unreadable results, tiny images) are left to the unit tests.
"""

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageEnhance, ImageOps

from rla_envs.desktop.osworld.metrics import get_metric
from tests.rla_envs.desktop.image_factory import picture
from tests.rla_envs.desktop.osworld_oracle import oracle_metric

pytestmark = pytest.mark.oracle


def _agree(name, module, cases):
    ours, theirs = get_metric(name), oracle_metric(module, name)
    scores = [(ours(*args, **kwargs), theirs(*args, **kwargs)) for args, kwargs in cases]
    disagreements = [(case, score) for case, score in zip(cases, scores) if score[0] != score[1]]
    assert not disagreements, f"{name}: ours vs OSWorld's: {disagreements}"
    assert len({ours_score for ours_score, _ in scores}) > 1, f"{name}: the cases must not all score the same"
    return len(cases)



def noise(width=96, height=64, seed=0):
    """An unrelated picture: coloured noise."""
    return Image.fromarray(np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8), "RGB")


@pytest.fixture
def save(tmp_path):
    def _save(image, name):
        path = tmp_path / name
        image.save(path)
        return str(path)
    return _save


def test_compare_images_agrees(save):
    gold = save(picture(), "gold.png")
    cases = [((save(picture(), "same.png"), gold), {}),
             ((save(ImageEnhance.Brightness(picture()).enhance(1.2), "bright.png"), gold), {}),
             ((save(picture().resize((80, 50)), "small.png"), gold), {}),
             ((save(ImageOps.mirror(picture()), "mirror.png"), gold), {}),
             ((save(noise(), "noise.jpg"), gold), {}),
             ((save(picture(), "same2.png"), gold), {"reference_base_result": 0.54}),
             ((save(noise(), "noise2.png"), gold), {"reference_base_result": 0.11}),
             ((None, gold), {})]
    assert _agree("compare_images", "vlc", cases) == 8


def test_compare_image_list_agrees(save):
    gold = [save(picture(), "a.png"), save(noise(), "b.png")]
    touched = picture()
    touched.putpixel((5, 5), (0, 0, 0))
    rgba_gold = save(picture().convert("RGBA"), "c.png")
    recoloured = ImageEnhance.Brightness(picture()).enhance(0.5).convert("RGBA")
    cases = [(([save(picture(), "a1.png"), save(noise(), "b1.png")], gold), {}),
             (([save(touched, "a2.png"), save(noise(), "b2.png")], gold), {}),
             (([save(picture(), "a3.png"), None], gold), {}),
             ((save(picture().resize((48, 32)), "a4.png"), gold[0]), {}),
             ((save(picture().convert("L"), "a5.png"), gold[0]), {}),
             ((save(recoloured, "c1.png"), rgba_gold), {})]  # alpha-only getbbox: same alpha counts as equal
    assert _agree("compare_image_list", "gimp", cases) == 6


def test_structure_similarity_metrics_agree(save):
    gold = save(picture(), "gold.png")
    slightly = np.asarray(picture()).astype(np.int16) + np.random.default_rng(1).integers(-6, 7, (64, 96, 3))
    near = save(Image.fromarray(np.clip(slightly, 0, 255).astype(np.uint8)), "near.png")
    big_gold = save(picture(384, 256), "big_gold.png")
    same_jpg = save(picture(384, 256), "same.jpg")  # JPEG blurs the edges a little: SSIM ~0.97 at this size
    cases = {
        "check_structure_sim": [(save(picture(), "same.png"), gold), (near, gold), (save(noise(), "n.png"), gold),
                                (save(picture().resize((95, 64)), "size.png"), gold), (None, gold)],
        "check_file_exists_and_structure_sim": [(same_jpg, big_gold), (save(noise(), "n.jpg"), gold),
                                                (gold + ".missing", gold), (None, gold)],
        "check_image_mirror": [(save(ImageOps.mirror(picture()), "m.png"), gold), (gold, gold), (None, gold)],
        "check_palette_and_structure_sim": [
            (save(picture().quantize(64), "p.png"), gold), (save(picture(), "rgb.png"), gold),
            (save(noise().quantize(64), "pn.png"), gold), (None, gold)],
    }
    total = sum(_agree(name, "gimp", [(args, {}) for args in pairs]) for name, pairs in cases.items())
    assert total == 16


def test_structure_sim_resized_agrees(save):
    gold = save(picture(), "gold.png")
    framed = Image.new("RGBA", (140, 100), (0, 0, 0, 0))
    framed.paste(picture(96, 64).convert("RGBA"), (30, 20))
    cases = [(save(framed, "framed.png"), gold),
             (save(picture(192, 128), "double.png"), gold),
             (save(picture(48, 32), "half.png"), gold),
             (save(noise(48, 32), "noise.png"), gold),
             (save(Image.new("RGBA", (40, 40), (0, 0, 0, 0)), "clear.png"), gold),
             (save(picture(48, 32).quantize(32), "pal.png"), gold),
             (None, gold)]
    assert _agree("check_structure_sim_resized", "gimp", [(args, {}) for args in cases]) == 7


def test_tone_edit_metrics_agree(save):
    gold = save(picture(), "gold.png")
    darker = save(ImageEnhance.Brightness(picture()).enhance(0.7), "darker.png")
    brighter = save(ImageEnhance.Brightness(picture()).enhance(1.3), "brighter.png")
    vivid = save(ImageEnhance.Color(picture()).enhance(1.3), "vivid.png")
    dull = save(ImageEnhance.Color(picture()).enhance(0.5), "dull.png")
    crisp = save(ImageEnhance.Contrast(picture()).enhance(1.5), "crisp.png")
    flat = save(ImageEnhance.Contrast(picture()).enhance(0.6), "flat.png")
    dark_noise = save(ImageEnhance.Brightness(noise()).enhance(0.5), "dark_noise.png")
    count = _agree("check_brightness_decrease_and_structure_sim", "gimp",
                   [((darker, gold), {}), ((brighter, gold), {}), ((dark_noise, gold), {}),
                    ((gold, brighter), {"threshold": 0.15}), ((None, gold), {})])
    count += _agree("check_saturation_increase_and_structure_sim", "gimp",
                    [((vivid, gold), {}), ((dull, gold), {}), ((save(noise(), "n.png"), gold), {}), ((None, gold), {})])
    count += _agree("check_contrast_increase_and_structure_sim", "gimp",
                    [((crisp, gold), {}), ((flat, gold), {}), ((save(noise(), "n2.png"), gold), {}),
                     ((None, gold), {})])
    assert count == 13


def test_image_size_and_file_size_agree(save):
    plain = save(picture(128, 96), "plain.png")
    framed = Image.new("RGBA", (200, 200), (0, 0, 0, 0))
    framed.paste(picture(128, 96).convert("RGBA"), (10, 50))
    framed_path = save(framed, "framed.png")
    keyed = picture(128, 96).quantize(16)
    keyed.info["transparency"] = 0
    keyed_path = save(keyed, "keyed.png")
    cases = [((plain, {"width": 128, "height": 96}), {}), ((plain, {"height": 96}), {}),
             ((plain, {"width": 96}), {}), ((framed_path, {"height": 96, "ignore_transparent": True}), {}),
             ((framed_path, {"height": 96}), {}), ((keyed_path, {"width": 128}), {}), ((None, {"width": 1}), {})]
    count = _agree("check_image_size", "gimp", cases)
    count += _agree("check_image_file_size", "gimp",
                    [((plain, {"max_size": 600000}), {}), ((plain, {"max_size": 100}), {}),
                     ((None, {"max_size": 10}), {})])
    assert count == 10


def _canvas(size=(100, 80), colour=(255, 255, 255)):
    image = Image.new("RGB", size, colour)
    return image, ImageDraw.Draw(image)


def test_layout_metrics_agree(save):
    left, draw = _canvas()
    draw.rectangle((2, 30, 40, 40), fill=(0, 0, 0))
    right, draw = _canvas()
    draw.rectangle((50, 30, 90, 40), fill=(10, 10, 10))
    count = _agree("check_textbox_on_leftside", "gimp",
                   [((save(left, "left.png"),), {}), ((save(right, "right.png"),), {}),
                    ((save(_canvas()[0], "blank.png"),), {}), ((None,), {})])
    middle, draw = _canvas((120, 120))
    draw.polygon([(60, 40), (40, 80), (80, 80)], fill=(255, 220, 0))
    corner, draw = _canvas((120, 120))
    draw.polygon([(10, 5), (2, 30), (30, 30)], fill=(255, 220, 0))
    three, draw = _canvas((120, 120))
    draw.polygon([(60, 40), (40, 80), (80, 80)], fill=(255, 220, 0))
    draw.rectangle((0, 0, 20, 120), fill=(0, 0, 200))
    count += _agree("check_triangle_position", "gimp",
                    [((save(middle, "m.png"),), {}), ((save(corner, "c.png"),), {}),
                     ((save(three, "t.png"),), {}), ((None,), {})])
    assert count == 8


def test_green_background_agrees(save):
    mask, draw = _canvas((64, 64), (255, 255, 255))
    draw.ellipse((16, 16, 48, 48), fill=(0, 0, 0))
    gold = save(mask, "mask.png")
    green, draw = _canvas((64, 64), (20, 200, 30))
    draw.ellipse((16, 16, 48, 48), fill=(200, 50, 50))
    half, draw = _canvas((64, 64), (20, 200, 30))
    draw.rectangle((0, 0, 10, 63), fill=(200, 200, 200))
    cases = [(save(green, "green.png"), gold), (save(half, "half.png"), gold),
             (save(_canvas((64, 64), (250, 250, 250))[0], "white.png"), gold),
             (save(green.convert("RGBA"), "green_rgba.png"), gold), (None, gold)]
    assert _agree("check_green_background", "gimp", [(args, {}) for args in cases]) == 5


GIMPRC = """# GIMP gimprc
#
(theme "Light")
(undo-levels 100)
(default-image
    (width 1920)
    (height 1080))
(layer-new-name "Square")

# end of gimprc
"""


def test_check_config_status_agrees(tmp_path):
    path = tmp_path / "gimprc"
    path.write_text(GIMPRC, encoding="utf-8")
    rules = [{"key": "theme", "value": '"Light"'}, {"key": "theme", "value": '"Dark"'},
             {"key": "undo-levels", "value": "100"}, {"key": "layer-new-name", "value": '"Square"'},
             {"key": "hide-docks", "value": "yes"}, {"key": "width", "value": "1920"},
             {"key": "default-image", "value": "1080"}]
    flat = tmp_path / "sessionrc"  # OSWorld reads a list key's second word from every line: no one-word lines here
    flat.write_text('(session-info toplevel position 10)\n(hide-docks yes)\n', encoding="utf-8")
    pair_rules = [{"key": ["session-info", "toplevel"], "value": "10"}, {"key": ["session-info", "dock"], "value": "10"},
                  {"key": "hide-docks", "value": "yes"}]
    cases = ([((str(path), rule), {}) for rule in rules] + [((str(flat), rule), {}) for rule in pair_rules]
             + [((None, rules[0]), {})])
    assert _agree("check_config_status", "gimp", cases) == 11


def test_check_moved_jpgs_agrees():
    tree = {"type": "directory", "name": "cpjpg", "children": [{"type": "file", "name": "a.jpg"},
                                                                {"type": "file", "name": "b.jpg"}]}
    cases = [((tree, {"expected": ["b.jpg", "a.jpg"]}), {}), ((tree, {"expected": ["a.jpg"]}), {}),
             ((tree, {"expected": ["a.jpg", "c.jpg"]}), {}), ((dict(tree, children=[]), {"expected": []}), {})]
    assert _agree("check_moved_jpgs", "basic_os", cases) == 4
