"""compare_archive and compare_zip_files over archives made here."""

import io
import tarfile
import zipfile

import pytest

from rla_envs.desktop.osworld.errors import EvaluationError
from rla_envs.desktop.osworld.metrics.archive import compare_archive, compare_zip_files
from rla_envs.desktop.osworld.runnable import evaluator_reasons


def _zip(path, members):
    with zipfile.ZipFile(path, "w") as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    return str(path)


def test_compare_archive_scores_the_mean_over_files(tmp_path):
    gold = _zip(tmp_path / "gold.zip", {"book/a.txt": "one", "book/b.txt": "two"})
    half = _zip(tmp_path / "half.zip", {"book/a.txt": "one", "book/b.txt": "2"})
    assert compare_archive(gold, gold, file_path="book") == 1.0
    assert compare_archive(half, gold, file_path="book") == 0.5
    assert compare_archive(half, gold) == 0.0  # the top folder lists only "book" in both, compared as text: fails
    assert compare_archive(half, gold, file_path="missing") == 0.0
    assert compare_archive(str(tmp_path / "none.zip"), gold, file_path="book") == 0.0


def test_compare_archive_refuses_unknown_file_types_and_bad_references(tmp_path):
    gold = _zip(tmp_path / "gold.zip", {"a.txt": "one"})
    with pytest.raises(EvaluationError, match="file_type 'movie' is not supported"):
        compare_archive(gold, gold, file_type="movie")
    broken = tmp_path / "broken.zip"
    broken.write_bytes(b"not an archive")
    with pytest.raises(EvaluationError, match="cannot be unpacked"):
        compare_archive(gold, str(broken))
    assert compare_archive(str(broken), gold) == 0.0


def test_compare_archive_keeps_tar_members_inside(tmp_path):
    hostile = tmp_path / "hostile.tar"
    with tarfile.open(hostile, "w") as archive:
        info = tarfile.TarInfo("../escaped.txt")
        info.size = 3
        archive.addfile(info, io.BytesIO(b"bad"))
    gold = _zip(tmp_path / "gold.zip", {"escaped.txt": "bad"})
    assert compare_archive(str(hostile), gold) == 0.0
    assert not (tmp_path / "escaped.txt").exists()


def test_compare_zip_files(tmp_path):
    gold = _zip(tmp_path / "gold.zip", {"a.txt": "one", "b.bin": b"\x00"})
    assert compare_zip_files(gold, gold) == 1.0
    assert compare_zip_files(_zip(tmp_path / "r.zip", {"a.txt": "one"}), gold) == 0.0
    assert compare_zip_files(_zip(tmp_path / "s.zip", {"a.txt": "One", "b.bin": b"\x00"}), gold) == 0.0
    assert compare_zip_files(None, gold) == 0.0


@pytest.mark.parametrize(("file_type", "reason"), [
    ("pdf", None), ("movie", "compare_archive file_type 'movie' is not supported")])
def test_runnable_checks_the_archive_file_type(file_type, reason):
    evaluator = {"func": "compare_archive", "options": {"file_type": file_type},
                 "result": {"type": "vm_file", "path": "/home/user/a.zip", "dest": "a.zip"},
                 "expected": {"type": "vm_file", "path": "/home/user/b.zip", "dest": "b.zip"}}
    reasons = evaluator_reasons(evaluator, cache=None, task_id=None, has_app=lambda name: True)
    assert reasons == ([reason] if reason else [])
