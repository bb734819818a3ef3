"""``python -m controller``: boot the desktop session and serve the controller API until killed.

    RLA_DESKTOP_TOKEN=... python -m controller --host 127.0.0.1 --port 0 --ready-file /run/ready --screen 1920x1080
    RLA_DESKTOP_TOKEN=... python -m controller --unix-socket /run/controller.sock --ready-file /run/ready

``--port 0`` lets the kernel choose a free port; ``--unix-socket`` serves on a Unix socket instead (the
local session, whose network namespace the host cannot reach). The address is printed (``controller
listening on ADDRESS``) and, with ``--ready-file``, written there (atomically) once the session is ready to
serve: ``PORT`` for TCP, the socket's path for a Unix socket.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import tempfile
from pathlib import Path


def _screen(text: str) -> tuple[int, int]:
    try:
        width, height = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT such as 1920x1080; got {text!r}") from None
    if not (64 <= width <= 8192 and 64 <= height <= 8192):
        raise argparse.ArgumentTypeError(f"screen size {text} is out of range (64..8192 a side)")
    return width, height


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m controller", description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1 locally)")
    parser.add_argument("--port", type=int, default=5000, help="TCP port; 0 lets the kernel choose a free one")
    parser.add_argument("--unix-socket", type=Path, help="serve on this Unix socket instead of TCP (made 0600)")
    parser.add_argument("--ready-file", type=Path, help="write the bound port (or socket path) here once ready")
    parser.add_argument("--screen", type=_screen, default=(1920, 1080), help="screen size, WIDTHxHEIGHT")
    parser.add_argument("--home-template", type=Path,
                        help="the home template: used as is when it holds files, else made from the seeded home "
                             "(default: the seeded home, snapshot into the controller's memory, where the agent's code cannot "
                             "change it)")
    return parser.parse_args(argv)


PR_SET_DUMPABLE = 4


def _not_dumpable() -> None:
    """Make this process non-dumpable: the agent's code, which runs as the same user, can then neither read its
    ``/proc/<pid>/environ`` (the token) or memory nor ptrace it to change what it replies to the evaluator.
    The apps it starts are dumpable again (``execve`` resets the flag)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        print(f"controller: cannot make itself non-dumpable (errno {ctypes.get_errno()})", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    token = os.environ.get("RLA_DESKTOP_TOKEN", "")
    if len(token) < 16:
        print("controller: set RLA_DESKTOP_TOKEN to the session token (16+ characters); it is never taken "
              "from the command line", file=sys.stderr)
        return 2
    _not_dumpable()
    # Bind first: a busy port fails before anything starts.
    try:
        sock = _listening_socket(args)
    except OSError as exc:
        where = args.unix_socket or f"{args.host}:{args.port}"
        print(f"controller: cannot listen on {where}: {exc}", file=sys.stderr)
        return 1

    import uvicorn

    from controller.action_runner import ActionRunner
    from controller.app import MAX_TIMEOUT_S, State, create_app
    from controller.boot import boot_desktop, stop_desktop
    from controller.home import HomeTemplate
    from controller.processes import ProcessTracker
    from controller.ipc import SysvIpc
    from controller.scratch import SCRATCH_DIRS, ScratchDirs
    from controller.screen import Screen
    from controller.xserver import XServerState

    width, height = args.screen
    home = Path(os.environ.get("HOME") or Path.home())
    # The home first: nothing of the session runs yet, so nothing writes there while it is snapshotted.
    runtime_dir = Path(os.environ.get("XDG_RUNTIME_DIR") or f"/tmp/runtime-{os.getuid()}")
    runtime_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    template = HomeTemplate(home, args.home_template)  # None: the boot snapshot is kept in memory
    template.prepare()
    os.environ["XDG_RUNTIME_DIR"] = str(runtime_dir)
    desktop = boot_desktop(width, height)
    tracker = ProcessTracker(desktop.env, str(home))
    _warm_up_accessibility()
    tracker.mark_core()  # before the first action worker: the agent's code never runs in a core process
    actions = ActionRunner(desktop.env, str(home), adopt=tracker.adopt)
    actions.start()
    # What the booted desktop made outside the home: what every reset brings back (nothing else stays)
    scratch = ScratchDirs((*SCRATCH_DIRS, str(runtime_dir)))
    scratch.snapshot()
    ipc = SysvIpc()
    ipc.snapshot()
    from controller.wallpaper import Wallpaper

    wallpaper = Wallpaper(desktop.display)  # kept open for the session's life: its pixmap is the root's background
    wallpaper.paint()
    xserver = XServerState(desktop.display, background_pixmap=wallpaper.pixmap_id)
    xserver.snapshot()
    state = State(env=desktop.env, home=home, tracker=tracker, template=template, screen=Screen(), token=token,
                  actions=actions, scratch=scratch, ipc=ipc, xserver=xserver)
    app = create_app(state)

    import pyautogui  # needs $DISPLAY, set by boot_desktop

    pyautogui.PAUSE = 0          # each action is one request; no pause after every call
    pyautogui.FAILSAFE = False   # a click in the top-left corner is a legal action here

    sock.listen(128)
    if args.unix_socket is not None:
        address, ready = str(args.unix_socket), str(args.unix_socket)
    else:
        host, port = sock.getsockname()[:2]
        address, ready = f"{host}:{port}", str(port)
    print(f"controller listening on {address} (display {desktop.display})", flush=True)
    if args.ready_file is not None:
        with tempfile.NamedTemporaryFile("w", dir=args.ready_file.parent, delete=False) as handle:
            handle.write(f"{ready}\n")
        os.replace(handle.name, args.ready_file)
    # Keep-alive longer than any route may take: Debian's uvicorn (0.17) can arm the idle timer of a
    # keep-alive connection after the next request on it has arrived, and then closes that connection in the
    # middle of a request that runs longer than the timer (a slow app opening, a long action).
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False,
                                           timeout_keep_alive=int(MAX_TIMEOUT_S) + 60))
    try:
        server.run(sockets=[sock])  # until SIGTERM or SIGINT
    finally:
        actions.close()
        tracker.kill_apps(include_core=True)  # the apps, then Xvfb, the buses (and their children), openbox
        stop_desktop(desktop)
    return 0


def _listening_socket(args: argparse.Namespace) -> socket.socket:
    """The bound (not yet listening) socket: the Unix socket ``--unix-socket`` (mode 0600), else TCP."""
    if args.unix_socket is not None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        if args.unix_socket.exists():
            args.unix_socket.unlink()
        old_umask = os.umask(0o177)
        try:
            sock.bind(str(args.unix_socket))
        finally:
            os.umask(old_umask)
        return sock
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    # IPPROTO_TCP named explicitly: asyncio turns Nagle off only on sockets that say so, and with Nagle on
    # every small reply waits out the client's 40 ms delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((args.host, args.port))
    return sock


def _warm_up_accessibility() -> None:
    """Touch the AT-SPI registry once, so it (and its bus) start now and count as core processes."""
    try:
        import pyatspi

        _ = pyatspi.Registry.getDesktop(0).childCount  # reading it proves the accessibility bus answers
    except Exception as exc:  # the session still works without accessibility; say why it is missing
        print(f"controller: AT-SPI is not answering ({exc}); /accessibility will be empty", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
