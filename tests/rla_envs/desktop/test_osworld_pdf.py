"""PDF metrics over PDFs written by ``pdf_files``: text lines, similarity, page counts and embedded images."""

import numpy as np
import pytest
from PIL import Image

from rla_envs.desktop.osworld.errors import EvaluationError
from rla_envs.desktop.osworld.metrics.pdf import (check_pdf_pages, compare_pdf_images, compare_pdfs,
                                                  perceptual_hash)
from rla_envs.desktop.osworld.metrics.pdf_text import pdf_text
from tests.rla_envs.desktop.pdf_files import write_pdf


def test_text_lines_follow_glyph_positions(tmp_path):
    # Helvetica 12: "Ada" is 21.3 pt wide, so a word at x=96 is 0.23 sizes on (a space), one at 106 is 1.06 (a line)
    pdf = write_pdf(tmp_path / "a.pdf", [[(72, 700, "Ada"), (96, 700, "Lovelace"), (72, 680, "Ada"),
                                          (106, 680, "Byron"), (72, 660, "fi (x)")], [(72, 700, "Two")]])
    assert pdf_text(pdf) == "Ada Lovelace\nAda\nByron\nfi (x)\nTwo"


def test_compare_pdfs_scores_text_similarity(tmp_path):
    gold = write_pdf(tmp_path / "gold.pdf", [[(72, 700, "abcd")]])
    near = write_pdf(tmp_path / "near.pdf", [[(72, 700, "abce")]])
    assert compare_pdfs(gold, gold) == 1.0
    assert compare_pdfs(near, gold) == pytest.approx(0.75)  # LCS "abc": 2 * 3 / (4 + 4)
    assert compare_pdfs([gold, near], [gold, gold]) == pytest.approx(0.875)
    assert compare_pdfs(str(tmp_path / "missing.pdf"), gold) == 0.0
    assert compare_pdfs(gold, [gold]) == 0.0  # a single result against a list: OSWorld reads none of it
    with pytest.raises(EvaluationError, match="at least one PDF"):
        compare_pdfs([], [])


def test_check_pdf_pages(tmp_path):
    two = write_pdf(tmp_path / "two.pdf", [[(72, 700, "a")], [(72, 700, "b")]])
    assert check_pdf_pages(two, {"relation": "eq", "ref_value": 2}) == 1.0
    assert check_pdf_pages(two, {"relation": "lt", "ref_value": 2}) == 0.0
    assert check_pdf_pages(None, {"relation": "eq", "ref_value": 2}) == 0.0
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"not a pdf")
    assert check_pdf_pages(str(broken), {"relation": "eq", "ref_value": 2}) == 0.0
    with pytest.raises(EvaluationError, match="relation 'contains' is not supported"):
        check_pdf_pages(two, {"relation": "contains", "ref_value": 2})


def _picture(seed):
    rng = np.random.default_rng(seed)
    return Image.fromarray((rng.random((40, 60, 3)) * 255).astype("uint8")).resize((120, 80))


def test_perceptual_hash_matches_imagehash():
    imagehash = pytest.importorskip("imagehash", reason="imagehash (the oracle's) is not installed")
    for seed in range(3):
        assert list(perceptual_hash(_picture(seed))) == list(imagehash.phash(_picture(seed)).hash.flatten())


def test_compare_pdf_images(tmp_path):
    one, two = _picture(0), _picture(1)
    gold = write_pdf(tmp_path / "gold.pdf", [[("image", 72, 600, one), ("image", 72, 300, two)]])
    half = write_pdf(tmp_path / "half.pdf", [[("image", 72, 600, one), ("image", 72, 300, one)]])
    single = write_pdf(tmp_path / "single.pdf", [[("image", 72, 600, one)]])
    text = write_pdf(tmp_path / "text.pdf", [[(72, 700, "no images")]])
    assert compare_pdf_images(gold, gold) == 1.0
    assert compare_pdf_images(half, gold) == 0.5
    assert compare_pdf_images(single, gold) == 0.0
    assert compare_pdf_images(text, text) == 1.0
    assert compare_pdf_images(str(tmp_path / "missing.pdf"), gold) == 0.0
