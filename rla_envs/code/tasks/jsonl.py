"""Stdio code problems from JSONL files users bring: LiveCodeBench and CodeContests layouts.

One problem per line; the layout is recognised per line:

* **LiveCodeBench** (``question_content``): ``public_test_cases`` / ``private_test_cases`` are lists, or
  JSON strings of lists, of ``{"input", "output", "testtype"}``. LCB's releases compress the private
  cases (base64 of zlib of a pickled JSON string); those are decoded with an unpickler that refuses every
  global, so only plain strings, lists and dicts can come out. Only ``testtype == "stdin"`` tests are
  supported; a problem with ``functional`` tests is skipped (or refused with ``skip_unsupported=False``).
  Ids: ``lcb:<question_id>``.
* **CodeContests** (``description``): ``public_tests``, ``private_tests``, ``generated_tests`` as
  ``{"input": [...], "output": [...]}``; ``solutions`` ``{"language": [...], "solution": [...]}`` gives the
  reference (the first Python 3 one, language 3); ``time_limit`` ``{"seconds", "nanos"}`` and
  ``memory_limit_bytes`` give the limits. Ids: ``codecontests:<name>``.
* A line holding a :class:`Task` dict (``family`` key) is read as that task.

Hidden tests are the private (and generated) tests; a problem with none is graded on its public tests.
"""

from __future__ import annotations

import base64
import io
import json
import pickle
import warnings
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rla_envs.code.tasks.formats import validate_code_task
from rla_envs.core.errors import DataNotFound, InvalidTask
from rla_envs.core.task import Task

__all__ = ["load_jsonl", "task_from_record", "PYTHON3"]

PYTHON3 = 3
"""CodeContests' language code of Python 3 solutions."""


def load_jsonl(path: str | Path, *, max_hidden_tests: int | None = None, skip_unsupported: bool = True,
               timeout_s: float | None = None) -> list[Task]:
    """The code tasks of a JSONL file in the LiveCodeBench or CodeContests layout (mixed is fine).

    ``max_hidden_tests`` keeps the first that many hidden tests per problem (CodeContests can have
    hundreds of generated ones); ``timeout_s`` overrides each problem's time limit; problems this loader
    cannot grade (LCB ``functional`` tests) are skipped with one warning unless ``skip_unsupported`` is False.
    """
    path = Path(path)
    if not path.is_file():
        raise DataNotFound(f"no JSONL file at {path}")
    with path.open("rb") as handle:
        if handle.read(2) == _GZIP_MAGIC:
            raise InvalidTask(f"{path} is gzip-compressed; decompress it first (gunzip -k {path.name})")
    tasks, skipped = [], []
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, 1):
            if not raw.strip():
                continue
            try:
                record = json.loads(_utf8(raw))
                tasks.append(task_from_record(record, max_hidden_tests=max_hidden_tests, timeout_s=timeout_s,
                                              source=f"{path.name}:{number}"))
            except json.JSONDecodeError as exc:
                raise InvalidTask(f"{path}:{number} is not JSON: {exc}") from None
            except RecursionError:
                raise InvalidTask(f"{path}:{number}: the record is nested too deeply (thousands of levels)") from None
            except _Unsupported as exc:
                if not skip_unsupported:
                    raise InvalidTask(f"{path}:{number}: {exc}") from None
                skipped.append(f"{number} ({exc})")
            except InvalidTask as exc:
                raise InvalidTask(f"{path}:{number}: {exc}") from None
    if skipped:
        warnings.warn(f"{path}: skipped {len(skipped)} problem(s) this loader cannot grade: "
                      f"{'; '.join(skipped[:5])}", stacklevel=2)
    if not tasks:
        raise DataNotFound(f"{path} holds no code problem this loader can read")
    return tasks


class _Unsupported(InvalidTask):
    """A well-formed problem of a kind this loader does not grade."""


_GZIP_MAGIC = b"\x1f\x8b"
MAX_DECOMPRESSED_BYTES = 64 << 20
"""The most a compressed test-case field may inflate to (LCB's largest real one is a few MB): bombs stop here."""
MAX_TIME_LIMIT_S = 3600.0
"""The longest per-test time limit a record may ask for."""


def _utf8(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidTask(f"byte {exc.start} is not UTF-8 ({raw[exc.start:exc.start + 4]!r}); "
                          "save the file as UTF-8") from None


def task_from_record(record: Mapping[str, Any], *, max_hidden_tests: int | None = None,
                     timeout_s: float | None = None, source: str = "") -> Task:
    """One code task from one JSON record in any supported layout."""
    if not isinstance(record, Mapping):
        raise InvalidTask(f"expected a JSON object per line, got {type(record).__name__}")
    for key in ("question_content", "description"):
        if key in record and "family" not in record and not isinstance(record[key], str):
            raise InvalidTask(f"'{key}' must be the problem statement (a string), got {type(record[key]).__name__}")
    if "family" in record:
        task = Task.from_dict(record)
    elif "question_content" in record:
        task = _livecodebench(record, max_hidden_tests, timeout_s, source)
    elif "description" in record:
        task = _codecontests(record, max_hidden_tests, timeout_s, source)
    else:
        raise InvalidTask("unknown layout: expected LiveCodeBench ('question_content'), CodeContests "
                          f"('description') or a Task dict ('family'); the record has {sorted(record)[:12]}")
    validate_code_task(task)
    return task


def _stdio_spec(public, hidden, reference, limits, max_hidden_tests) -> dict[str, Any]:
    if max_hidden_tests is not None:
        hidden = hidden[:max_hidden_tests]
    if not hidden:
        hidden = public
    if not hidden:
        raise InvalidTask("the problem has no tests")
    return {"form": "stdio", "public_tests": public, "hidden_tests": hidden,
            "reference_solution": reference, "limits": limits}


def _livecodebench(record, max_hidden_tests, timeout_s, source) -> Task:
    public = _lcb_cases(record.get("public_test_cases"), "public_test_cases")
    hidden = _lcb_cases(record.get("private_test_cases"), "private_test_cases")
    if any(not isinstance(case.get("testtype", "stdin"), str) for case in public + hidden):
        raise InvalidTask("a test case's 'testtype' must be a string such as \"stdin\"")
    kinds = {case.get("testtype", "stdin") for case in public + hidden}
    if kinds - {"stdin"}:
        raise _Unsupported(f"test types {sorted(kinds - {'stdin'})} (only stdin problems are graded)")
    def to_test(case):
        return {"stdin": _text(case, "input"), "stdout": _text(case, "output")}

    spec = _stdio_spec([to_test(c) for c in public], [to_test(c) for c in hidden], None,
                       {"timeout_s": float(timeout_s or 6.0)}, max_hidden_tests)
    qid = record.get("question_id") or record.get("question_title")
    if not qid:
        raise InvalidTask("a LiveCodeBench record needs 'question_id' or 'question_title'")
    meta = {"source": "livecodebench", "origin_ref": source}
    for key in ("question_title", "platform", "contest_id", "contest_date", "difficulty"):
        if record.get(key) is not None:
            meta[key] = record[key]
    return Task(id=f"lcb:{qid}", family="code", instruction=record["question_content"], spec=spec,
                origin="dataset", meta=meta)


def _lcb_cases(value: Any, field: str) -> list[dict]:
    if value is None or value == "":
        return []
    if isinstance(value, str):
        value = _decode_lcb_string(value, field)
    if not isinstance(value, list) or not all(isinstance(case, Mapping) for case in value):
        raise InvalidTask(f"'{field}' must be a list of {{input, output, testtype}} objects")
    return [dict(case) for case in value]


def _decode_lcb_string(text: str, field: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:  # not plain JSON: LCB's compressed form is tried next
        pass
    try:  # LCB's compressed form: base64(zlib(pickle(json string)))
        inner = _SafeUnpickler(io.BytesIO(_inflate(base64.b64decode(text), field))).load()
        return json.loads(inner) if isinstance(inner, str) else inner
    except InvalidTask:
        raise
    except Exception as exc:
        raise InvalidTask(f"'{field}' is neither JSON nor LCB's compressed form ({type(exc).__name__}: {exc})") from None


def _inflate(data: bytes, field: str) -> bytes:
    """zlib-decompress ``data``, refusing (before inflating it) anything past :data:`MAX_DECOMPRESSED_BYTES`."""
    inflater = zlib.decompressobj()
    out = inflater.decompress(data, MAX_DECOMPRESSED_BYTES)
    if inflater.unconsumed_tail:
        raise InvalidTask(f"'{field}' inflates to more than {MAX_DECOMPRESSED_BYTES >> 20} MB; "
                          "refusing it (a compression bomb, or tests too large to grade)")
    return out + inflater.flush()


class _SafeUnpickler(pickle.Unpickler):
    """Unpickles plain data only: any global (class, function) is refused, so nothing can run."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"refusing global {module}.{name} in test data")


def _text(case: Mapping, key: str) -> str:
    value = case.get(key)
    if not isinstance(value, str):
        raise InvalidTask(f"test case {key!r} must be a string, got {type(value).__name__}")
    return value


def _codecontests(record, max_hidden_tests, timeout_s, source) -> Task:
    public = _cc_tests(record.get("public_tests"), "public_tests")
    hidden = (_cc_tests(record.get("private_tests"), "private_tests")
              + _cc_tests(record.get("generated_tests"), "generated_tests"))
    limits: dict[str, float] = {"timeout_s": float(timeout_s or _cc_seconds(record.get("time_limit")) or 6.0)}
    memory = record.get("memory_limit_bytes")
    if memory is not None and (isinstance(memory, bool) or not isinstance(memory, int) or memory < 0):
        raise InvalidTask(f"'memory_limit_bytes' must be a whole number of bytes >= 0, got {memory!r:.60}")
    if memory:
        limits["memory_mb"] = max(64, memory // (1 << 20))
    spec = _stdio_spec(public, hidden, _cc_reference(record.get("solutions")), limits, max_hidden_tests)
    name = record.get("name")
    if not name or not isinstance(name, (str, int)) or isinstance(name, bool):
        raise InvalidTask(f"a CodeContests record needs 'name' (a string), got {name!r:.60}")
    meta = {"source": "codecontests", "origin_ref": source}
    for key in ("difficulty", "cf_rating", "cf_contest_id", "cf_index", "source"):
        if record.get(key) is not None:
            meta["dataset_source" if key == "source" else key] = record[key]
    return Task(id=f"codecontests:{name}", family="code", instruction=record["description"], spec=spec,
                origin="dataset", meta=meta)


def _cc_tests(value: Any, field: str) -> list[dict[str, str]]:
    if not value:
        return []
    if not isinstance(value, Mapping):
        raise InvalidTask(f"'{field}' must be {{\"input\": [...], \"output\": [...]}}, got {type(value).__name__}")
    inputs, outputs = value.get("input"), value.get("output")
    if not isinstance(inputs, list) or not isinstance(outputs, list) or len(inputs) != len(outputs):
        raise InvalidTask(f"'{field}' must be {{\"input\": [...], \"output\": [...]}} of equal length")
    if not all(isinstance(x, str) for x in inputs + outputs):
        raise InvalidTask(f"'{field}' inputs and outputs must be strings")
    return [{"stdin": i, "stdout": o} for i, o in zip(inputs, outputs)]


def _cc_reference(solutions: Any) -> str | None:
    if solutions is None:
        return None
    if not isinstance(solutions, Mapping) or not all(
            isinstance(solutions.get(key) or [], list) for key in ("language", "solution")):
        raise InvalidTask("'solutions' must be {\"language\": [...], \"solution\": [...]}, "
                          f"got {solutions!r:.60}")
    languages, codes = solutions.get("language"), solutions.get("solution")
    for language, code in zip(languages or [], codes or []):
        if language == PYTHON3 and isinstance(code, str):
            return code
    return None


def _cc_seconds(limit: Any) -> float | None:
    """CodeContests' ``time_limit`` ``{"seconds", "nanos"}`` in seconds (None: not given)."""
    if limit is None:
        return None
    if not isinstance(limit, Mapping):
        raise InvalidTask(f"'time_limit' must be {{\"seconds\": s, \"nanos\": n}}, got {type(limit).__name__} "
                          f"{limit!r:.40}")
    for key in ("seconds", "nanos"):
        value = limit.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or not 0 <= value <= 1e18):  # NaN fails this too
            raise InvalidTask(f"'time_limit.{key}' must be a number >= 0, got {value!r:.40}")
    seconds = (limit.get("seconds") or 0) + (limit.get("nanos") or 0) / 1e9
    if seconds > MAX_TIME_LIMIT_S:
        raise InvalidTask(f"'time_limit' of {seconds:g} s is more than {MAX_TIME_LIMIT_S:g} s; "
                          "fix the record or pass timeout_s")
    return seconds or None
