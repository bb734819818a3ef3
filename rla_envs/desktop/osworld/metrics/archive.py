"""Archive metrics: ``compare_archive`` (unpack both, compare member files with a file metric) and
``compare_zip_files`` (same member names and contents; PDFs by text similarity).

``compare_archive`` options: ``file_path`` (a folder inside both archives to compare, default the top) and
``file_type``, which names the metric each pair of files goes through (:data:`FILE_TYPE_METRICS`); every other
option is passed on to it. The folders must list the same names; the score is the mean over the files. Archives
unpack (zip and tar, with tar's ``data`` filter: no links out, no absolute paths) next to themselves, into
``<name>_pred`` and ``<name>_gold`` as in OSWorld.
"""

from __future__ import annotations

import difflib
import io
import logging
import os
import shutil
import tarfile
import zipfile
from pathlib import Path
from typing import Any

from rla_envs.desktop.osworld.errors import EvaluationError

__all__ = ["compare_archive", "compare_zip_files", "FILE_TYPE_METRICS", "PDF_TEXT_SIMILARITY"]

logger = logging.getLogger(__name__)

FILE_TYPE_METRICS = {"text": "compare_text_file", "pdf": "compare_pdfs", "docx": "compare_docx_files",
                     "ppt": "compare_pptx_files", "image": "compare_images", "csv": "compare_csv",
                     "table": "compare_table", "audio": "compare_audios", "video": "compare_videos"}
"""``compare_archive``'s ``file_type`` -> the metric that compares each pair of member files."""

PDF_TEXT_SIMILARITY = 0.95
"""``compare_zip_files``: two PDF members match when their texts are at least this similar (difflib's ratio)."""


def _file_metric(file_type: str):
    from rla_envs.desktop.osworld.metrics import get_metric, is_supported

    name = FILE_TYPE_METRICS.get(file_type)
    if name is None:
        raise EvaluationError(f"compare_archive file_type {file_type!r} is not supported "
                              f"(supported: {', '.join(FILE_TYPE_METRICS)})")
    if not is_supported(name):
        raise EvaluationError(f"compare_archive file_type {file_type!r} needs metric {name!r}, which is not supported")
    return get_metric(name)


def _unpack(archive: str, folder: Path, *, fresh: bool) -> None:
    if folder.exists():
        if not fresh:
            return
        shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as members:  # extractall drops absolute paths and ".." parts
            members.extractall(folder)
    elif tarfile.is_tarfile(archive):
        with tarfile.open(archive) as members:
            members.extractall(folder, filter="data")
    else:
        raise ValueError(f"{archive} is neither a zip nor a tar archive")


def compare_archive(result: Any, expected: Any, **options: Any) -> float:
    """Mean score of the archives' member files under ``file_path``, by ``file_type``'s metric (0 if names differ).

    A missing or unreadable result archive scores 0; an unreadable reference raises :class:`EvaluationError`.
    """
    file_path = options.pop("file_path", "")
    compare = _file_metric(options.pop("file_type", "text"))
    if not result or not Path(result).is_file():
        return 0.0
    if not expected or not Path(expected).is_file():
        raise EvaluationError(f"compare_archive: the reference archive {expected!r} is missing")
    result_folder = Path(os.path.splitext(result)[0] + "_pred")
    expected_folder = Path(os.path.splitext(expected)[0] + "_gold")
    try:
        _unpack(result, result_folder, fresh=True)
        names = sorted(os.listdir(result_folder / file_path))
    except (OSError, ValueError, zipfile.BadZipFile, tarfile.TarError) as exc:  # not an archive, a hostile member, no such folder
        logger.info("compare_archive: %s cannot be unpacked or lacks %r (%s): score 0", result, file_path, exc)
        return 0.0
    try:
        _unpack(expected, expected_folder, fresh=False)
        expected_names = sorted(os.listdir(expected_folder / file_path))
    except (OSError, ValueError, zipfile.BadZipFile, tarfile.TarError) as exc:
        raise EvaluationError(f"compare_archive: the reference {expected} cannot be unpacked: {exc}") from exc
    if names != expected_names:
        return 0.0
    if not names:
        raise EvaluationError(f"compare_archive: the reference folder {file_path or '/'!r} holds no files")
    total = sum(compare(str(result_folder / file_path / name), str(expected_folder / file_path / name), **options)
                for name in names)
    return total / len(names)


def _pdf_text(content: bytes) -> str:
    from pypdf import PdfReader

    return "".join(page.extract_text() for page in PdfReader(io.BytesIO(content)).pages)


def _same_member(name: str, first: bytes, second: bytes) -> bool:
    if not name.lower().endswith(".pdf"):
        return first == second
    return difflib.SequenceMatcher(None, _pdf_text(first), _pdf_text(second)).ratio() >= PDF_TEXT_SIMILARITY


def compare_zip_files(result: Any, expected: Any, **options: Any) -> float:
    """1 when the two zip files hold the same member names with equal contents (PDFs: texts 95% similar)."""
    if not result or not Path(result).is_file():
        return 0.0
    try:
        result_zip = zipfile.ZipFile(result)
    except (OSError, zipfile.BadZipFile) as exc:
        logger.info("compare_zip_files: %s is not a zip file (%s): score 0", result, exc)
        return 0.0
    try:
        expected_zip = zipfile.ZipFile(expected)
    except (OSError, zipfile.BadZipFile, TypeError) as exc:
        raise EvaluationError(f"compare_zip_files: the reference {expected!r} cannot be read: {exc}") from exc
    with result_zip, expected_zip:
        names = set(result_zip.namelist())
        if names != set(expected_zip.namelist()):
            return 0.0
        try:
            same = all(_same_member(name, result_zip.read(name), expected_zip.read(name)) for name in names)
        except Exception as exc:  # a corrupt member or PDF in the agent's archive
            logger.info("compare_zip_files: a member of %s cannot be read (%s): score 0", result, exc)
            return 0.0
    return float(same)
