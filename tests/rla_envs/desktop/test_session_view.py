"""system_view: which of the host's directories a local desktop session sees (the bubblewrap arguments)."""

from __future__ import annotations

import os

from rla_envs.desktop.session import system_view


def _fake_root(tmp_path):
    for directory in ("usr/bin", "usr/lib", "etc", "sys", "var/lib/dbus", "opt/rla-desktop/bin", "srv", "root",
                      "work/project"):
        (tmp_path / directory).mkdir(parents=True)
    os.symlink("usr/bin", tmp_path / "bin")
    os.symlink("usr/lib", tmp_path / "lib")
    (tmp_path / "opt/rla-desktop/pyvenv.cfg").write_text("home = /usr/bin\ninclude-system-site-packages = true\n")
    return tmp_path


def _binds(args):
    return [args[i + 2] for i, arg in enumerate(args) if arg == "--ro-bind"]


def test_the_system_and_the_runtime_prefix_are_bound_and_nothing_else(tmp_path):
    root = _fake_root(tmp_path)
    args = system_view("/opt/rla-desktop/bin/python", root=str(root))
    assert _binds(args) == ["/usr", "/etc", "/sys", "/var/lib/dbus", "/opt/rla-desktop"]
    assert ["--symlink", "usr/bin", "/bin"] == args[:3] and ["--symlink", "usr/lib", "/lib"] == args[3:6]
    assert args[-2:] == ["--tmpfs", "/run"]
    for hidden in ("/", "/srv", "/root", "/work", "/opt", "/home", "/run"):
        assert hidden not in _binds(args)


def test_a_runtime_inside_usr_adds_no_bind(tmp_path):
    root = _fake_root(tmp_path)
    assert _binds(system_view("/usr/bin/python3", root=str(root))) == ["/usr", "/etc", "/sys", "/var/lib/dbus"]


def test_the_package_and_the_file_cache_are_covered_where_a_bound_folder_holds_them(tmp_path):
    # `pip install .` into the system python puts the package (and its tasks' gold files) under /usr
    root = _fake_root(tmp_path)
    (root / "usr/lib/python3/dist-packages/rla_envs").mkdir(parents=True)
    (root / "work/project/cache").mkdir(parents=True)
    args = system_view("/opt/rla-desktop/bin/python", root=str(root),
                       hide=["/usr/lib/python3/dist-packages/rla_envs", "/work/project/cache", "/srv/absent"])
    covered = [args[i + 1] for i, arg in enumerate(args) if arg == "--tmpfs"]
    assert covered == ["/usr/lib/python3/dist-packages/rla_envs", "/run"]  # the cache is not bound at all


def test_a_real_session_hides_this_package_and_the_cache():
    from rla_envs.desktop.session import host_private_dirs

    import rla_envs

    assert os.path.dirname(os.path.abspath(rla_envs.__file__)) in host_private_dirs()
