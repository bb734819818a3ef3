"""The docker sandbox's wire format between the host and the agent in each container.

One JSON line per message over the container's attached stdin/stdout. Requests: ``{"op": "hello"}``,
``{"op": "start", "form", "program", "limits", "cpu_s"[, "stdin"]}``, ``{"op": "call", "function",
"args"}``, ``{"op": "end"}``. Replies: ``{"hello": capabilities}``, ``{"started": true}``, ``{"result":
record}``, ``{"ended": true}`` or ``{"error": why}``. Both sides build and read those messages here;
what the agent sends is only a claim, so :func:`result_from_reply` checks every field's exact type.
"""

from __future__ import annotations

import time

from rla_envs.code.sandbox.base import CallResult, Limits, decode_value, encode_value

__all__ = ["PROTOCOL", "WORK_DIR", "STATUSES", "limits_message", "result_record", "result_from_reply"]

PROTOCOL = "1"
"""Version of this protocol; the image carries it as label ``rla.sandbox.protocol``."""
WORK_DIR = "/work"
"""The container's tmpfs where programs run (mounted by the host, emptied by the agent after each session)."""
STATUSES = ("ok", "error", "timeout", "memory", "output_limit", "crashed", "no_result")
ERROR_CHARS = 2000  # longest error text taken from the agent


def limits_message(limits: Limits) -> dict:
    """``limits`` as the ``"limits"`` field of a start request (the agent rebuilds them with ``Limits(**...)``)."""
    return {"timeout_s": limits.timeout_s, "memory_mb": limits.memory_mb, "output_bytes": limits.output_bytes,
            "file_size_mb": limits.file_size_mb, "open_files": limits.open_files, "processes": limits.processes}


def result_record(result: CallResult, with_value: bool = False) -> dict:
    """The agent's ``"result"`` record of ``result`` (the value, encoded, only for a function call that returned)."""
    record = {"status": result.status, "stdout": result.stdout, "stderr": result.stderr, "error": result.error,
              "exit_code": result.exit_code, "seconds": result.seconds}
    if with_value and result.status == "ok":
        record["value"] = encode_value(result.value)
    return record


def result_from_reply(reply: dict, started: float) -> CallResult:
    """A CallResult from the agent's reply, checked field by field (``started``: ``time.monotonic()`` at the
    request); a reply the host made up for a lost container (``{"lost": [status, why]}``) gives that status."""
    seconds = time.monotonic() - started
    if "lost" in reply:
        return CallResult(reply["lost"][0], error=reply["lost"][1], seconds=seconds)
    record = reply.get("result")
    if type(record) is not dict:
        error = reply.get("error") if type(reply.get("error")) is str else "malformed reply from the sandbox agent"
        return CallResult("no_result", error=error[:ERROR_CHARS], seconds=seconds)
    status = record.get("status")
    if status not in STATUSES:
        return CallResult("no_result", error="malformed result record", seconds=seconds)
    result = CallResult(status, seconds=seconds)
    for name in ("stdout", "stderr", "error"):
        value = record.get(name, "")
        setattr(result, name, value if type(value) is str else "")
    code = record.get("exit_code")
    result.exit_code = code if type(code) is int else None
    if status == "ok" and "value" in record:
        try:
            result.value = decode_value(record["value"])
        except (ValueError, TypeError, RecursionError, MemoryError) as exc:
            return CallResult("no_result", error=f"unreadable result record: {type(exc).__name__}: {exc}"[:500],
                              stdout=result.stdout, stderr=result.stderr, exit_code=result.exit_code, seconds=seconds)
    return result
