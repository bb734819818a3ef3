"""The code that runs inside the sandbox, after confinement, and loads the untrusted program.

File descriptors (set up by the fork server): 0 stdin, 1 stdout, 2 stderr, 3 requests from the host
(JSON lines: first ``{"program", "form", "limits"}``, then ``{"function": ..., "args": tagged}``), 4
records to the host (JSON lines). Records never go through stdout, so nothing the program prints can pose as one.

Whatever this process reports is only a claim: the host decodes the values strictly and grades them
against expected outputs that never enter the sandbox.
"""

from __future__ import annotations

import builtins
import io
import json
import os
import sys
import types

from rla_envs.code.sandbox.base import UnsupportedValue, decode_value, encode_value

__all__ = ["serve"]

# Bound now, before the program can monkeypatch the modules they come from.
_dumps, _loads, _write, _exit, _close = json.dumps, json.loads, os.write, os._exit, os.close


def _send(out_fd: int, record: dict) -> None:
    data = _dumps(record, separators=(",", ":")).encode() + b"\n"
    while data:
        data = data[_write(out_fd, data):]


def _describe(exc: BaseException) -> str:
    try:
        return f"{type(exc).__name__}: {exc}"[:2000]
    except BaseException:  # a hostile __str__
        return type(exc).__name__


def _status_of(exc: BaseException) -> str:
    return "memory" if isinstance(exc, MemoryError) else "error"


def _fresh_stdio() -> None:
    sys.stdin = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)), encoding="utf-8",
                                 errors="replace")
    sys.stdout = io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, "w", closefd=False)), encoding="utf-8",
                                  errors="backslashreplace")
    sys.stderr = io.TextIOWrapper(io.BufferedWriter(io.FileIO(2, "w", closefd=False)), encoding="utf-8",
                                  errors="backslashreplace", line_buffering=True)
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            stream.flush()
        except BaseException:  # the program may have swapped in a stream that raises anything: flushing is best effort
            pass


def _print_traceback(exc: BaseException) -> None:
    try:
        import traceback

        traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.__stderr__)
    except BaseException:  # a hostile exception (a __str__ that raises) or a closed stderr: the record says why anyway
        pass


def _load(program: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__file__ = os.path.join(os.getcwd(), "solution.py")
    module.__builtins__ = builtins
    sys.modules[name] = module
    code = compile(program, "solution.py", "exec")
    exec(code, module.__dict__)
    return module


def _read_line(reader) -> dict | None:
    line = reader.readline()
    if not line:
        return None
    return _loads(line)


def serve(confine) -> None:
    """Wait for ``{"program", "form", "limits"}`` on fd 3, call ``confine(limits)`` (which drops every
    privilege), then run the program; never returns."""
    reader = io.open(3, "rb", closefd=False)
    _fresh_stdio()  # while the spare waits: off the path between the program's arrival and its run
    request = _read_line(reader)
    if not request:
        _exit(0)  # a spare that was never used
    program, form, limits = request["program"], request["form"], request["limits"]
    confine(limits)
    sys.argv = ["solution.py"]
    if form == "stdio":
        _serve_stdio(program)
    _serve_function(program, reader)


def _serve_stdio(program: str) -> None:
    status, error, code = "ok", "", 0
    try:
        _load(program, "__main__")
    except SystemExit as exc:
        code = exc.code if type(exc.code) is int else (0 if exc.code is None else 1)
        if exc.code is not None and type(exc.code) is not int:
            try:
                print(exc.code, file=sys.__stderr__)
            except BaseException:  # an exit message whose __str__ raises, or a closed stderr: the exit code stands
                pass
    except BaseException as exc:
        status, error, code = _status_of(exc), _describe(exc), 1
        _print_traceback(exc)
    _flush()
    try:
        _send(4, {"status": status, "error": error, "exit": code & 0xFF})
    except BaseException:  # the record pipe is gone or full: the host reports no_result from the exit alone
        pass
    for fd in (1, 2, 4):  # the host sees the end now, while the kernel tears the interpreter down
        try:
            _close(fd)
        except OSError:
            pass
    _exit(code & 0xFF)


def _serve_function(program: str, reader) -> None:
    try:
        module = _load(program, "solution")
    except SystemExit as exc:
        _flush()
        _send(4, {"status": "no_result", "error": f"the program exited while loading (SystemExit: {exc.code!r})"[:500]})
        _exit(0)
    except BaseException as exc:
        _print_traceback(exc)
        _flush()
        _send(4, {"status": _status_of(exc), "error": "while loading: " + _describe(exc)})
        _exit(1)
    _flush()
    _send(4, {"status": "loaded"})
    while True:
        request = _read_line(reader)
        if request is None:
            _flush()
            _exit(0)
        _send(4, _one_call(module, request))


def _one_call(module: types.ModuleType, request: dict) -> dict:
    name = request["function"]
    record: dict
    try:
        function = module.__dict__.get(name)
        if not callable(function):
            raise NameError(f"the program defines no function {name!r}")
        args = decode_value(request["args"])
        value = function(*args)
        try:
            record = {"status": "ok", "value": encode_value(value)}
        except UnsupportedValue as exc:
            record = {"status": "error", "error": f"unsupported return value: {exc}"}
    except SystemExit as exc:
        record = {"status": "no_result", "error": f"the program exited during the call (SystemExit: {exc.code!r})"[:500]}
        _flush()
        _send(4, record)
        _exit(0)
    except BaseException as exc:
        record = {"status": _status_of(exc), "error": _describe(exc)}
        _print_traceback(exc)
    _flush()
    return record
