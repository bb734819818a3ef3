"""HomeTemplate: a reset restores the home seeded at boot exactly, from a snapshot the session's files cannot reach."""

from __future__ import annotations

import os
import stat

import pytest

from rla_envs.desktop.controller import home as home_module
from rla_envs.desktop.controller.home import HomeTemplate


def tree(root) -> dict[str, tuple]:
    """Every entry under ``root``: its kind, permission bits, content or link target, and mtime (files)."""
    found = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            full = os.path.join(folder, name)
            info = os.lstat(full)
            relative = os.path.relpath(full, root)
            if stat.S_ISLNK(info.st_mode):
                found[relative] = ("link", os.readlink(full))
            elif stat.S_ISDIR(info.st_mode):
                found[relative] = ("dir", stat.S_IMODE(info.st_mode))
            else:
                found[relative] = ("file", stat.S_IMODE(info.st_mode), open(full, "rb").read(), info.st_mtime_ns)
    return found


def test_the_seeded_home_comes_back_exactly_and_no_snapshot_lies_on_disk(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_text("from the image\n")
    os.chmod(home / ".bashrc", 0o640)
    os.symlink(".bashrc", home / ".profile")
    template = HomeTemplate(home)
    template.prepare()
    booted = tree(home)
    assert ".config/vlc/vlcrc" in booted and booted[".profile"] == ("link", ".bashrc")
    assert sorted(os.listdir(tmp_path)) == ["home"]   # nothing the session's user could edit holds the snapshot

    (home / "planted.txt").write_text("left for the next episode")
    (home / ".config" / "vlc" / "vlcrc").write_text("changed")
    os.chmod(home / ".bashrc", 0o777)
    (home / ".profile").unlink()
    (home / ".profile").write_text("a file now")
    (home / "Documents" / "deep" / "er").mkdir(parents=True)
    os.rmdir(home / "Downloads")

    template.restore()

    assert tree(home) == booted
    template.restore()   # and again, from the same snapshot
    assert tree(home) == booted


def test_a_prepared_template_is_copied_in_at_boot_and_on_reset(tmp_path):
    prepared, home = tmp_path / "prepared", tmp_path / "home"
    (prepared / "Desktop").mkdir(parents=True)
    (prepared / "Desktop" / "task.txt").write_text("given")
    template = HomeTemplate(home, prepared)
    template.prepare()
    assert (home / "Desktop" / "task.txt").read_text() == "given"
    (home / "Desktop" / "task.txt").write_text("edited")
    (home / "new").write_text("x")
    template.restore()
    assert tree(home) == tree(prepared)


def test_a_home_too_large_to_keep_in_memory_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(home_module, "SNAPSHOT_LIMIT_BYTES", 1000)
    (tmp_path / "big.bin").write_bytes(b"x" * 2000)
    with pytest.raises(RuntimeError, match="--home-template"):
        HomeTemplate(tmp_path).prepare()


def test_restore_before_prepare_is_a_clear_error(tmp_path):
    with pytest.raises(RuntimeError, match="before prepare"):
        HomeTemplate(tmp_path).restore()
