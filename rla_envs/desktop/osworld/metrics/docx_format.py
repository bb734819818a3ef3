"""Metrics over Word documents' formatting and structure (python-docx), as OSWorld scores them.

Metrics whose OSWorld version first requires the two documents' text to match (``compare_docx_files`` with its
defaults) do so here too. A result document that is missing or unreadable scores 0; an unreadable reference is
an :class:`~rla_envs.desktop.osworld.errors.EvaluationError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rla_envs.desktop.osworld.metrics.docx import compare_docx_files, load_docx, squash_blanks
from rla_envs.desktop.osworld.metrics.rules import similarity_ratio

__all__ = ["compare_line_spacing", "compare_font_names", "compare_subscript_contains", "has_page_numbers_in_footers",
           "is_first_line_centered", "check_tabstops", "evaluate_strike_through_last_paragraph",
           "check_italic_font_size_14", "contains_page_break", "compare_docx_files_and_ignore_new_lines",
           "compare_references", "compare_unique_train_records", "compare_docx_images", "fuzzy_place_math",
           "evaluate_colored_words_in_tables"]

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"


def _pair(result: str | None, expected: str | None, *, same_text: bool = False):
    """Both documents, or None when the result is missing/unreadable (or, with ``same_text``, differs in text)."""
    if same_text and not compare_docx_files(result, expected):
        return None
    ours = load_docx(result, expected=False)
    return None if ours is None else (ours, load_docx(expected, expected=True))


def compare_line_spacing(result: str | None, expected: str | None, **options: Any) -> float:
    """1 when the texts match and every paragraph has the reference's line spacing."""
    docs = _pair(result, expected, same_text=True)
    if docs is None or len(docs[0].paragraphs) != len(docs[1].paragraphs):
        return 0.0
    return float(all(a.paragraph_format.line_spacing == b.paragraph_format.line_spacing
                     for a, b in zip(docs[0].paragraphs, docs[1].paragraphs)))


def compare_font_names(result: str | None, rules: Mapping[str, Any], **options: Any) -> float:
    """1 when every run of every paragraph uses the font ``rules["font_name"]``."""
    doc = load_docx(result, expected=False)
    if doc is None:
        return 0.0
    return float(all(run.font.name == rules["font_name"] for p in doc.paragraphs for run in p.runs))


def compare_subscript_contains(result: str | None, expected: str | None, **options: Any) -> float:
    """1 when some run is subscript in both documents at the same paragraph and run position."""
    docs = _pair(result, expected)
    if docs is None:
        return 0.0
    return float(any(r1.font.subscript and r2.font.subscript for p1, p2 in zip(docs[0].paragraphs, docs[1].paragraphs)
                     for r1, r2 in zip(p1.runs, p2.runs)))


def has_page_numbers_in_footers(result: str | None, *args: Any, **options: Any) -> float:
    """1 when the first footer paragraph of every section holds a digit (a page number)."""
    doc = load_docx(result, expected=False)
    if doc is None:
        return 0.0
    for section in doc.sections:
        paragraphs = section.footer.paragraphs
        if not any(char.isdigit() for char in (paragraphs[0].text if paragraphs else "")):
            return 0.0
    return 1.0


def is_first_line_centered(result: str | None, *args: Any, **options: Any) -> float:
    """1 when the first paragraph is centred."""
    from docx.enum.text import WD_PARAGRAPH_ALIGNMENT

    doc = load_docx(result, expected=False)
    if doc is None or not doc.paragraphs:
        return 0.0
    return float(doc.paragraphs[0].paragraph_format.alignment == WD_PARAGRAPH_ALIGNMENT.CENTER)


def check_tabstops(result: str | None, expected: str | None, **options: Any) -> float:
    """1 minus the mean distance between the tab stops of matching non-empty paragraphs (relative to the text
    width); 0 when their counts or alignments differ. Option ``word_number_split_by_tabstop`` (with ``index``):
    the tab-separated part at ``index`` of every paragraph must have that many words."""
    from docx.enum.text import WD_TAB_ALIGNMENT

    docs = _pair(result, expected)
    if docs is None:
        return 0.0
    ours = [p for p in docs[0].paragraphs if p.text.strip()]
    gold = [p for p in docs[1].paragraphs if p.text.strip()]
    if len(ours) != len(gold) or not gold:
        return 0.0
    words = options.get("word_number_split_by_tabstop")
    if words is not None:
        index = options.get("index", 0)
        for paragraph in ours:
            parts = paragraph.text.split("\t")
            if index >= len(parts) or len(parts[index].split()) != words:
                return 0.0
    section = docs[1].sections[0]
    width = section.page_width - section.left_margin - section.right_margin

    def stops(paragraph):
        return [t for t in paragraph.paragraph_format.tab_stops if not (
            t.alignment == WD_TAB_ALIGNMENT.CLEAR or (t.alignment == WD_TAB_ALIGNMENT.LEFT and t.position == 0))]

    penalty = 0.0
    for a, b in zip(ours, gold):
        tabs_a, tabs_b = stops(a), stops(b)
        if len(tabs_a) != len(tabs_b) or any(x.alignment != y.alignment for x, y in zip(tabs_a, tabs_b)):
            return 0.0
        penalty += sum(abs(x.position - y.position) for x, y in zip(tabs_a, tabs_b)) / width
    return max(0.0, 1.0 - penalty / len(ours))


def evaluate_strike_through_last_paragraph(result: str | None, expected: str | None, **options: Any) -> float:
    """1 when the texts match and every run of the last paragraph is struck through."""
    docs = _pair(result, expected, same_text=True)
    if docs is None or not docs[0].paragraphs:
        return 0.0
    return float(all(run.font.strike for run in docs[0].paragraphs[-1].runs))


def check_italic_font_size_14(result: str | None, expected: str | None, **options: Any) -> float:
    """1 when the texts match and every italic run is 14 pt."""
    docs = _pair(result, expected, same_text=True)
    if docs is None:
        return 0.0
    return float(all(run.font.size is not None and run.font.size.pt == 14
                     for p in docs[0].paragraphs for run in p.runs if run.italic))


def contains_page_break(result: str | None, rules: Mapping[str, Any] | None = None, **options: Any) -> float:
    """1 when the document has a page break (exactly ``rules["page_break_count"]`` of them, when given)."""
    doc = load_docx(result, expected=False)
    if doc is None:
        return 0.0
    count = sum(1 for p in doc.paragraphs for run in p.runs for br in run.element.iter(f"{_W}br")
                if br.get(f"{_W}type") == "page")
    wanted = (rules or {}).get("page_break_count") if isinstance(rules, Mapping) else None
    if wanted is not None and count != wanted:
        return 0.0
    return float(count > 0)


def compare_docx_files_and_ignore_new_lines(result: str | None, expected: str | None, **options: Any) -> float:
    """``compare_docx_files`` after dropping empty paragraphs (option ``ignore_blanks``, default True)."""
    docs = _pair(result, expected)
    if docs is None:
        return 0.0
    ours = [p.text for p in docs[0].paragraphs if p.text != ""]
    gold = [p.text for p in docs[1].paragraphs if p.text != ""]
    if options.get("ignore_blanks", True):
        return float(squash_blanks(ours) == squash_blanks(gold))
    return float(ours == gold)


def compare_references(result: str | None, expected: str | None, **options: Any) -> float:
    """How alike the reference lists are: the mean similarity of the items after the ``reference_indicator``
    paragraph (default ``"References"``), rescaled so that ``reference_base_result`` (default 0.5) scores 0."""
    docs = _pair(result, expected)
    if docs is None:
        return 0.0
    marker = options.get("reference_indicator", "References")
    base = options.get("reference_base_result", 0.5)
    texts = [[p.text for p in doc.paragraphs] for doc in docs]
    starts = [t.index(marker) if marker in t else -1 for t in texts]
    if starts == [-1, -1]:
        return 1.0
    if -1 in starts:
        return 0.0
    ours, gold = ([p for p in t[i + 1:] if p.strip()] for t, i in zip(texts, starts))
    if len(ours) != len(gold) or not gold:
        return float(len(ours) == len(gold))
    mean = sum(similarity_ratio(a, b) for a, b in zip(ours, gold)) / len(gold)
    return (mean - base) / (1 - base) if mean >= base + 0.01 else 0.0


def compare_unique_train_records(result: str | None, expected: list[str] | None, **options: Any) -> float:
    """1 when the result keeps one line per train id: only lines of the initial file (``expected[1]``), no
    repeated id, the gold file's (``expected[0]``) ids and line count (lines: ``time, train_id, station, platform``).
    """
    if not isinstance(expected, list) or len(expected) < 2:
        return 0.0
    ours = load_docx(result, expected=False)
    if ours is None:
        return 0.0

    def lines(doc) -> tuple[list[str], list[str]]:
        text = [p.text.strip() for p in doc.paragraphs if p.text.strip()]
        return text, [line.split(",")[1].strip() for line in text if len(line.split(",")) == 4]

    result_lines, result_ids = lines(ours)
    gold_lines, gold_ids = lines(load_docx(expected[0], expected=True))
    initial_lines, _ = lines(load_docx(expected[1], expected=True))
    return float(set(result_lines) <= set(initial_lines) and len(result_ids) == len(set(result_ids))
                 and set(result_ids) == set(gold_ids) and len(result_lines) == len(gold_lines))


def compare_docx_images(result: str | None, expected: str | None, **options: Any) -> float:
    """1 when both documents embed the same images (same pixels, in the same order)."""
    import io

    from PIL import Image

    docs = _pair(result, expected)
    if docs is None:
        return 0.0

    def images(doc) -> list[bytes]:
        return [Image.open(io.BytesIO(rel.target_part.blob)).tobytes()
                for rel in doc.part.rels.values() if "image" in rel.reltype]

    try:
        ours = images(docs[0])
    except Exception:  # an image PIL cannot read in the agent's file
        return 0.0
    return float(ours == images(docs[1]))


def fuzzy_place_math(result: str | None, rules: Mapping[str, Any], **options: Any) -> float:
    """The mean best similarity of the document's words to the accepted answers ``rules["expected"]``; 0 unless
    the document has exactly three words."""
    doc = load_docx(result, expected=False)
    if doc is None:
        return 0.0
    words = [word for p in doc.paragraphs for word in p.text.split()]
    if len(words) != 3:
        return 0.0
    return sum(max((similarity_ratio(w, answer) for answer in rules["expected"]), default=0.0) for w in words) / 3


_VOWEL_RED, _CONSONANT_BLUE = (255, 0, 0), (0, 0, 255)


def _colour_distance(rgb: tuple[int, int, int], target: tuple[int, int, int]) -> float:
    """CIEDE2000 colour difference of two 0-255 RGB colours (scikit-image's, as OSWorld computes it)."""
    from skimage.color import deltaE_ciede2000, rgb2lab  # heavy: only this metric needs it

    return float(deltaE_ciede2000(rgb2lab([c / 255.0 for c in rgb]), rgb2lab([c / 255.0 for c in target])))


def evaluate_colored_words_in_tables(result: str | None, expected: str | None, **options: Any) -> float:
    """1 when the texts match and, in every table cell, each run starting with a vowel is red and every other
    run is blue (within CIEDE2000 ``threshold``, default 3.5). A run without its own colour scores 0 (OSWorld
    raises on it)."""
    docs = _pair(result, expected, same_text=True)
    if docs is None:
        return 0.0
    threshold = options.get("threshold", 3.5)
    for table in docs[0].tables:
        for row in table.rows:
            for cell in row.cells:
                for run in (run for p in cell.paragraphs for run in p.runs if run.text):
                    colour = run.font.color.rgb
                    if colour is None:
                        return 0.0
                    target = _VOWEL_RED if run.text[0].lower() in "aeiou" else _CONSONANT_BLUE
                    if _colour_distance(tuple(colour), target) > threshold:
                        return 0.0
    return 1.0
