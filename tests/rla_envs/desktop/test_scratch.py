"""ScratchDirs: a reset brings the writable folders outside the home back to what the booted desktop made."""

from __future__ import annotations

import os

import pytest

from rla_envs.desktop.controller.scratch import ScratchDirs


def _booted(tmp_path):
    """A /tmp and /var/tmp as a booted desktop leaves them: the X socket dir, a runtime dir with the buses'
    folders and dconf's two-byte flag, a lock file."""
    tmp, var_tmp = tmp_path / "tmp", tmp_path / "var-tmp"
    for d in (tmp / ".X11-unix", tmp / "runtime-user" / "at-spi", tmp / "runtime-user" / "dconf", var_tmp):
        d.mkdir(parents=True)
    (tmp / ".X99-lock").write_text("99")
    (tmp / "runtime-user" / "dconf" / "user").write_bytes(b"\0\0")
    os.symlink("at-spi", tmp / "runtime-user" / "a11y")
    return tmp, var_tmp


def test_entries_made_after_the_snapshot_go_at_any_depth_and_the_booted_ones_stay(tmp_path):
    tmp, var_tmp = _booted(tmp_path)
    scratch = ScratchDirs((str(tmp), str(var_tmp)))
    scratch.snapshot()
    (tmp / "answer.txt").write_text("left for the next episode")
    (tmp / "dir" / "deep").mkdir(parents=True)
    (tmp / "dir" / "deep" / "f").write_text("x")
    os.symlink("/etc/passwd", tmp / "link")
    (var_tmp / "marker").write_text("seen")
    # inside the folders the desktop made (kept whole before): the runtime dir, the X socket dir
    (tmp / "runtime-user" / "inside").write_text("planted in the runtime dir")
    (tmp / "runtime-user" / "at-spi" / "deeper").write_text("planted deeper")
    (tmp / ".X11-unix" / "X5").write_text("not a socket")

    cleared = scratch.clear()

    assert sorted(os.listdir(tmp)) == [".X11-unix", ".X99-lock", "runtime-user"]
    assert os.listdir(var_tmp) == [] and os.listdir(tmp / ".X11-unix") == []
    assert sorted(os.listdir(tmp / "runtime-user")) == ["a11y", "at-spi", "dconf"]
    assert os.listdir(tmp / "runtime-user" / "at-spi") == []
    assert sorted(cleared.removed) == sorted(str(p) for p in (
        tmp / "answer.txt", tmp / "dir", tmp / "link", var_tmp / "marker", tmp / "runtime-user" / "inside",
        tmp / "runtime-user" / "at-spi" / "deeper", tmp / ".X11-unix" / "X5"))
    assert cleared.missing == [] and os.path.exists("/etc/passwd")  # a link goes, not its target


def test_kept_files_get_their_bytes_mode_time_and_attributes_back(tmp_path):
    tmp, var_tmp = _booted(tmp_path)
    flag, lock = tmp / "runtime-user" / "dconf" / "user", tmp / ".X99-lock"
    before = {p: os.stat(p) for p in (flag, lock, tmp, tmp / "runtime-user")}
    scratch = ScratchDirs((str(tmp), str(var_tmp)))
    scratch.snapshot()
    flag.write_bytes(b"a note kept in the desktop's own file")
    os.chmod(lock, 0o600)
    os.utime(lock, ns=(1, 1))
    os.chmod(tmp / "runtime-user", 0o777)
    os.unlink(tmp / "runtime-user" / "a11y")
    os.symlink("/somewhere/else", tmp / "runtime-user" / "a11y")  # a kept link pointed elsewhere
    try:
        os.setxattr(tmp, "user.note", b"a marker on the folder itself")
        has_xattrs = True
    except OSError:  # the test's file system keeps no user attributes
        has_xattrs = False

    cleared = scratch.clear()

    assert flag.read_bytes() == b"\0\0"
    for path, old in before.items():
        now = os.stat(path)
        assert (now.st_mode, now.st_mtime_ns) == (old.st_mode, old.st_mtime_ns), path
    if has_xattrs:
        assert os.listxattr(tmp) == []
    assert cleared.missing == [] and os.readlink(tmp / "runtime-user" / "a11y") == "at-spi"  # made again


def test_a_kept_folder_or_file_that_is_gone_is_made_again_and_a_gone_socket_is_reported(tmp_path):
    import socket

    tmp, var_tmp = _booted(tmp_path)
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(tmp / ".X11-unix" / "X99"))
    scratch = ScratchDirs((str(tmp),))
    scratch.snapshot()
    os.unlink(tmp / "runtime-user" / "dconf" / "user")  # dconf itself deletes its flag file and makes it again
    os.rmdir(tmp / "runtime-user" / "at-spi")
    os.unlink(tmp / ".X11-unix" / "X99")

    cleared = scratch.clear()

    assert (tmp / "runtime-user" / "dconf" / "user").read_bytes() == b"\0\0"
    assert (tmp / "runtime-user" / "at-spi").is_dir()
    assert cleared.missing == [str(tmp / ".X11-unix" / "X99")]
    listener.close()


def test_a_folder_inside_another_is_covered_once_and_a_missing_one_is_left_alone(tmp_path):
    tmp, _ = _booted(tmp_path)
    scratch = ScratchDirs((str(tmp), str(tmp / "runtime-user"), str(tmp_path / "absent")))
    assert scratch.dirs == [tmp_path / "absent", tmp]  # the runtime dir lies inside tmp
    scratch.snapshot()
    (tmp_path / "absent").mkdir()
    (tmp_path / "absent" / "f").write_text("x")
    (tmp / "runtime-user" / "f").write_text("x")
    assert scratch.clear().removed == [str(tmp / "runtime-user" / "f")]
    assert (tmp_path / "absent" / "f").exists()


@pytest.mark.skipif(not os.path.isdir("/proc/sysvipc"), reason="no System V IPC in this kernel")
def test_sysv_objects_made_after_the_snapshot_by_a_process_that_is_gone_are_removed():
    import ctypes
    import subprocess
    import sys

    from rla_envs.desktop.controller.ipc import SysvIpc, list_objects

    libc = ctypes.CDLL(None, use_errno=True)
    ipc = SysvIpc()
    ipc.snapshot()
    kept = libc.shmget(0, 4096, 0o1600)  # IPC_PRIVATE, IPC_CREAT | 0600: made by this (living) process
    # a segment, a queue and a semaphore set made by a process that then exits (as the agent's do before a reset)
    made = subprocess.run([sys.executable, "-c", (
        "import ctypes; c = ctypes.CDLL(None); "
        "print(c.shmget(0, 4096, 0o1600), c.msgget(0, 0o1600), c.semget(0, 1, 0o1600))")],
        capture_output=True, text=True, check=True).stdout.split()
    try:
        removed = ipc.clear()
        left = {(kind, ident) for kind, ident, _ in list_objects()}
        assert sorted(removed) == sorted(f"{kind}:{ident}" for kind, ident in zip(("shm", "msg", "sem"), made))
        assert ("shm", kept) in left and not {("shm", int(made[0])), ("msg", int(made[1]))} & left
    finally:
        libc.shmctl(kept, 0, None)
        for kind, ident in zip(("shm", "msg", "sem"), map(int, made)):
            if kind == "shm":
                libc.shmctl(ident, 0, None)
            elif kind == "msg":
                libc.msgctl(ident, 0, None)
            else:
                libc.semctl(ident, 0, 0)
