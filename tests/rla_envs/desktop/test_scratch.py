"""ScratchDirs: a reset removes what an episode left in the scratch folders and keeps the desktop's own entries."""

from __future__ import annotations

import os

from rla_envs.desktop.controller.scratch import ScratchDirs


def test_entries_made_after_the_snapshot_go_and_the_booted_ones_stay(tmp_path):
    tmp, var_tmp = tmp_path / "tmp", tmp_path / "var-tmp"
    for d in (tmp / ".X11-unix", tmp / "runtime-user", var_tmp):
        d.mkdir(parents=True)
    (tmp / ".X99-lock").write_text("99")
    scratch = ScratchDirs((str(tmp), str(var_tmp)))
    scratch.snapshot()
    (tmp / "answer.txt").write_text("left for the next episode")
    (tmp / "dir" / "deep").mkdir(parents=True)
    (tmp / "dir" / "deep" / "f").write_text("x")
    os.symlink("/etc/passwd", tmp / "link")
    (var_tmp / "marker").write_text("seen")
    (tmp / "runtime-user" / "inside").write_text("kept with its dir")

    removed = scratch.clear()

    assert sorted(os.listdir(tmp)) == [".X11-unix", ".X99-lock", "runtime-user"]
    assert os.listdir(var_tmp) == []
    assert sorted(removed) == sorted(str(p) for p in (tmp / "answer.txt", tmp / "dir", tmp / "link", var_tmp / "marker"))
    assert (tmp / "runtime-user" / "inside").exists() and os.path.exists("/etc/passwd")  # a link goes, not its target


def test_a_folder_missing_at_the_snapshot_is_left_alone(tmp_path):
    scratch = ScratchDirs((str(tmp_path / "absent"),))
    scratch.snapshot()
    (tmp_path / "absent").mkdir()
    (tmp_path / "absent" / "f").write_text("x")
    assert scratch.clear() == [] and (tmp_path / "absent" / "f").exists()
