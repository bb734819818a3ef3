"""OSWorld metrics this env supports, by name: each scores a result against an expected value in [0, 1].

A metric is called as OSWorld calls it: ``metric(result, expected, **options)`` when the task has an
``expected`` getter, else ``metric(result, **options)``. Modules (imported on first use, so openpyxl and
python-docx load only when needed):

    text     compare_text_file, diff_text_file, file_contains, check_list, compare_csv, compare_result_files,
             compare_python_pure_text, check_line_number
    general  check_include_exclude, exact_match, match_in_list, is_in_list, literal_match,
             check_direct_json_object
    table    compare_table (see its docstring for the rule types it supports)
    docx     compare_docx_files, compare_docx_tables
    chrome   tabs, URLs, bookmarks, history, cookies and settings of Chrome (is_expected_tabs, ...)
    pdf      compare_pdfs (text laid out as PyMuPDF does), check_pdf_pages, compare_pdf_images
    records  check_json (JSON/YAML keys), check_csv (rows), run_sqlite3 (a query on a SQLite file)
    a11y_tree    check_accessibility_tree (CSS or XPath over the accessibility tree)
    archive  compare_archive (member files by a file metric), compare_zip_files
    thunderbird  check_thunderbird_prefs (prefs.js), check_thunderbird_filter (msgFilterRules.dat)
    vlc      vlcrc settings (check_qt_bgcone, ...), is_vlc_playing, is_vlc_recordings_folder, is_vlc_fullscreen
    docx_format  Word formatting and structure: line spacing, fonts, tab stops, page breaks, footers, images...
    images   two images compared: compare_images, compare_image_list, SSIM structure checks, brightness/saturation/
             contrast edits, mirror, palette (Pillow, numpy, scikit-image)
    image_checks  one image's size, file size and layout (check_image_size, check_triangle_position, ...)
    config_files  apps' config files: check_config_status (GIMP's gimprc/sessionrc), find_default_font
                  (LibreOffice's registrymodifications.xcu)
    os_settings  OS settings from command output: is_utc_0, check_gnome_favorite_apps, is_in_vm_clickboard
    sheet_columns  a column of a workbook: compare_conference_city_in_order
    html_pages  compare_htmls (BeautifulSoup's parse trees, node by node)
    ebooks   compare_epub (an EPUB's parts, line by line)
    directories  a folder's listing: check_moved_jpgs
    slides   compare_pptx_files (PowerPoint structure, text and formatting, with OSWorld's options)
    impress  one property of a deck (transition, orientation, background, slide number colour, a stretched
             picture), of LibreOffice's settings (presenter console, auto-save) or of the window (slide panel)

``infeasible`` is not a function here: the evaluator scores it from the last action.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

__all__ = ["METRICS", "get_metric", "is_supported"]

METRICS: dict[str, str] = {
    "compare_text_file": "text",
    "diff_text_file": "text",
    "file_contains": "text",
    "check_list": "text",
    "compare_csv": "text",
    "compare_result_files": "text",
    "compare_python_pure_text": "text",
    "check_line_number": "text",
    "check_include_exclude": "general",
    "exact_match": "general",
    "match_in_list": "general",
    "is_in_list": "general",
    "literal_match": "general",
    "check_direct_json_object": "general",
    "compare_table": "table",
    "compare_docx_files": "docx",
    "compare_docx_tables": "docx",
    "compare_line_spacing": "docx_format",
    "compare_font_names": "docx_format",
    "compare_subscript_contains": "docx_format",
    "has_page_numbers_in_footers": "docx_format",
    "is_first_line_centered": "docx_format",
    "check_tabstops": "docx_format",
    "evaluate_strike_through_last_paragraph": "docx_format",
    "check_italic_font_size_14": "docx_format",
    "contains_page_break": "docx_format",
    "compare_docx_files_and_ignore_new_lines": "docx_format",
    "compare_references": "docx_format",
    "compare_unique_train_records": "docx_format",
    "compare_docx_images": "docx_format",
    "fuzzy_place_math": "docx_format",
    "evaluate_colored_words_in_tables": "docx_format",
    "is_expected_active_tab": "chrome",
    "is_expected_active_tab_approximate": "chrome",
    "is_expected_url_pattern_match": "chrome",
    "is_expected_installed_extensions": "chrome",
    "is_expected_tabs": "chrome",
    "is_expected_bookmarks": "chrome",
    "is_expected_search_query": "chrome",
    "is_cookie_deleted": "chrome",
    "is_shortcut_on_desktop": "chrome",
    "check_history_deleted": "chrome",
    "check_enabled_experiments": "chrome",
    "check_font_size": "chrome",
    "is_added_to_steam_cart": "chrome",
    "compare_pdfs": "pdf",
    "check_pdf_pages": "pdf",
    "compare_pdf_images": "pdf",
    "check_json": "records",
    "check_csv": "records",
    "run_sqlite3": "records",
    "check_accessibility_tree": "a11y_tree",
    "compare_archive": "archive",
    "compare_zip_files": "archive",
    "compare_images": "images",
    "compare_image_list": "images",
    "check_structure_sim": "images",
    "check_structure_sim_resized": "images",
    "check_structure_sim_with_threshold": "images",
    "check_file_exists_and_structure_sim": "images",
    "check_image_mirror": "images",
    "check_palette_and_structure_sim": "images",
    "check_brightness_decrease_and_structure_sim": "images",
    "check_saturation_increase_and_structure_sim": "images",
    "check_contrast_increase_and_structure_sim": "images",
    "check_image_size": "image_checks",
    "check_image_file_size": "image_checks",
    "check_textbox_on_leftside": "image_checks",
    "check_triangle_position": "image_checks",
    "check_green_background": "image_checks",
    "check_config_status": "config_files",
    "find_default_font": "config_files",
    "is_utc_0": "os_settings",
    "check_gnome_favorite_apps": "os_settings",
    "is_in_vm_clickboard": "os_settings",
    "compare_conference_city_in_order": "sheet_columns",
    "compare_htmls": "html_pages",
    "compare_epub": "ebooks",
    "check_moved_jpgs": "directories",
    "check_thunderbird_prefs": "thunderbird",
    "check_thunderbird_filter": "thunderbird",
    "is_vlc_playing": "vlc",
    "is_vlc_recordings_folder": "vlc",
    "is_vlc_fullscreen": "vlc",
    "check_qt_bgcone": "vlc",
    "check_qt_max_volume": "vlc",
    "check_qt_minimal_view": "vlc",
    "check_qt_slider_colours": "vlc",
    "check_global_key_play_pause": "vlc",
    "check_one_instance_when_started_from_file": "vlc",
    "check_play_and_exit": "vlc",
    "compare_pptx_files": "slides",
    "check_transition": "impress",
    "check_slide_orientation_Portrait": "impress",
    "evaluate_presentation_fill_to_rgb_distance": "impress",
    "check_page_number_colors": "impress",
    "check_image_stretch_and_center": "impress",
    "check_presenter_console_disable": "impress",
    "check_auto_saving_time": "impress",
    "check_left_panel": "impress",
    "infeasible": "",
}
"""Supported metric names -> the module (in this package) that defines them; ``infeasible`` has none."""


def is_supported(name: Any) -> bool:
    """Whether ``name`` is a metric this env can score."""
    return isinstance(name, str) and name in METRICS


def get_metric(name: str) -> Callable[..., float]:
    """The metric function called ``name`` (KeyError for an unsupported one, ValueError for ``infeasible``)."""
    module = METRICS[name]
    if not module:
        raise ValueError(f"{name!r} is scored by the evaluator from the last action, not by a function")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
