"""FileCache: OSWorld's download URLs and cloud_file paths resolved to local files, offline."""

import uuid
from pathlib import Path

import pytest

from rla_envs.desktop.osworld.cache import BUNDLED_ROOT, HF_FILE_CACHE_PREFIX, FileCache

TASK = "0bf05a7d-b28b-44d2-955a-50b41e24012a"


def _put(path: Path, data: bytes = b"x") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def test_hf_mirror_layout_with_an_escaped_name(tmp_path):
    stored = _put(tmp_path / "multi_apps" / TASK / "Gold subtitles.srt")
    url = f"{HF_FILE_CACHE_PREFIX}multi_apps/{TASK}/Gold%20subtitles.srt"
    assert FileCache(tmp_path).resolve(url) == stored
    # the same URL is also found in a flat <root>/<task-id>/<file> mirror
    flat = tmp_path / "flat"
    stored_flat = _put(flat / TASK / "Gold subtitles.srt")
    assert FileCache(flat).resolve(url) == stored_flat


def test_osworld_cloud_file_layout_uses_dest(tmp_path):
    url = f"{HF_FILE_CACHE_PREFIX}libreoffice_calc/{TASK}/Customers_New_7digit_Id_gold.csv"
    stored = _put(tmp_path / TASK / "Customers_New_7digit_Id_gold-Sheet1.csv")
    cache = FileCache(tmp_path)
    assert cache.resolve(url, task_id=TASK, dest="Customers_New_7digit_Id_gold-Sheet1.csv", kind="cloud_file") == stored
    # a download never picks a file by its destination name (that could be the agent's previous output)
    assert cache.resolve(url, task_id=TASK, dest="/home/user/Customers_New_7digit_Id_gold-Sheet1.csv") is None


def test_osworld_download_cache_layout_and_basename_fallback(tmp_path):
    url = "https://drive.google.com/uc?id=123&export=download"
    stored = _put(tmp_path / TASK / f"{uuid.uuid5(uuid.NAMESPACE_URL, url)}_report.docx")
    cache = FileCache(tmp_path)
    assert cache.resolve(url, task_id=TASK, dest="/home/user/Desktop/report.docx") == stored
    other = "https://example.org/files/data%20set.xlsx?version=2"
    by_name = _put(tmp_path / TASK / "data set.xlsx")
    assert cache.resolve(other, task_id=TASK, dest="/home/user/x.xlsx") == by_name
    assert cache.resolve(other, task_id="another-task") is None


def test_bundled_scheme_resolves_inside_the_package_only(tmp_path):
    bundled = _put(tmp_path / "bundled" / "notes" / "todo.txt")
    cache = FileCache(None, bundled_root=tmp_path / "bundled")
    assert cache.resolve("rla-bundled://notes/todo.txt") == bundled
    assert cache.resolve("rla-bundled://../bundled/notes/todo.txt") is None
    assert cache.resolve("rla-bundled:///etc/passwd") is None
    assert FileCache(None).bundled_root == BUNDLED_ROOT


def test_missing_files_and_no_cache(tmp_path):
    url = f"{HF_FILE_CACHE_PREFIX}os/{TASK}/eval.sh"
    cache = FileCache(tmp_path)
    assert cache.resolve(url, task_id=TASK) is None
    assert cache.missing("download", url) == f"download: {url} is not in the cache {tmp_path}"
    assert FileCache(None).resolve(url, task_id=TASK) is None
    assert FileCache(None).missing("cloud_file", url).endswith("is not in the cache (no cache directory)")
    (tmp_path / TASK).mkdir()
    (tmp_path / TASK / "eval.sh").mkdir()  # a directory is not a file
    assert cache.resolve(url, task_id=TASK) is None


@pytest.mark.parametrize("task_id", ["../escape", "/abs"])
def test_task_ids_cannot_leave_the_root(tmp_path, task_id):
    _put(tmp_path / "escape" / "f.txt")
    assert FileCache(tmp_path / "root").resolve("https://x.org/f.txt", task_id=task_id) is None
