"""The Task: one playable level of any env family, as plain, frozen, JSON-serialisable data."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rla_envs.core.errors import InvalidTask

__all__ = ["Task", "ORIGINS", "freeze", "thaw", "content_id"]

ORIGINS = ("dataset", "generated", "mutated", "rewritten")


class FrozenDict(Mapping):
    """A read-only, hashable dict used for the nested parts of a Task."""

    __slots__ = ("_data", "_hash")

    def __init__(self, data: Mapping[str, Any]):
        self._data = dict(data)
        self._hash = None

    def __getitem__(self, key):
        return self._data[key]

    def __iter__(self):
        return iter(self._data)

    def __len__(self):
        return len(self._data)

    def __hash__(self):
        if self._hash is None:
            self._hash = hash(_canonical_json(thaw(self)))
        return self._hash

    def __repr__(self):
        return f"FrozenDict({self._data!r})"

    def __reduce__(self):
        return (FrozenDict, (self._data,))


def freeze(value: Any) -> Any:
    """Return ``value`` with every dict made a FrozenDict and every list a tuple."""
    if isinstance(value, Mapping):
        return FrozenDict({str(k): freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """Inverse of :func:`freeze`: plain dicts and lists, ready for ``json.dumps``."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [thaw(v) for v in value]
    return value


def _canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _check_text(value: str, where: str) -> None:
    """Raise ``InvalidTask`` naming ``where`` if ``value`` cannot be written as UTF-8 (a lone surrogate)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidTask(f"{where} holds {value[exc.start:exc.end]!r} at character {exc.start}, a lone surrogate "
                          "that is not valid Unicode; fix the text (it was probably decoded from broken bytes)") from None


def _check_texts(value: Any, where: str) -> None:
    """:func:`_check_text` on every string (keys too) inside a JSON-like value, naming its path (``spec.a[0]``)."""
    pending = [(value, where)]
    while pending:
        item, path = pending.pop()
        if isinstance(item, str):
            _check_text(item, path)
        elif isinstance(item, Mapping):
            for key, child in item.items():
                _check_text(str(key), f"a key of {path}")
                pending.append((child, f"{path}.{key}"))
        elif isinstance(item, (list, tuple)):
            pending.extend((child, f"{path}[{index}]") for index, child in enumerate(item))


def content_id(family: str, instruction: str, spec: Mapping[str, Any]) -> str:
    """The content hash that identifies a task: ``"<family>:<16 hex digits>"``."""
    payload = _canonical_json({"family": family, "instruction": instruction, "spec": thaw(spec)})
    return f"{family}:{hashlib.sha256(payload.encode('utf-8')).hexdigest()[:16]}"


@dataclass(frozen=True)
class Task:
    """One playable task (a level): everything needed to rebuild an episode, and where it came from.

    Attributes:
        family: the env family that plays it (``"alfworld"``, ``"textworld"``, ``"code"``, ``"desktop"``).
        instruction: the goal as the agent reads it.
        spec: family-specific data that rebuilds the episode (a PDDL problem, game options, tests, ...).
        parent: id of the task this one was derived from, or None for an original.
        origin: one of ``dataset``, ``generated``, ``mutated``, ``rewritten``.
        meta: free-form facts that do not change the episode (task type, difficulty, split, source path).
        id: the content hash of (family, instruction, spec) unless given; the same content has the same id.
    """

    family: str
    instruction: str
    spec: Mapping[str, Any]
    parent: str | None = None
    origin: str = "generated"
    meta: Mapping[str, Any] = field(default_factory=dict)
    id: str = ""

    def __post_init__(self):
        if not isinstance(self.family, str) or not self.family:
            raise InvalidTask(f"Task.family must be a non-empty string, got {self.family!r}")
        if not isinstance(self.instruction, str):
            raise InvalidTask(f"Task.instruction must be a string, got {type(self.instruction).__name__}")
        if not isinstance(self.spec, Mapping):
            raise InvalidTask(f"Task.spec must be a mapping, got {type(self.spec).__name__}")
        if self.origin not in ORIGINS:
            raise InvalidTask(f"Task.origin must be one of {ORIGINS}, got {self.origin!r}")
        if self.parent is not None and not isinstance(self.parent, str):
            raise InvalidTask(f"Task.parent must be a task id (str) or None, got {self.parent!r:.80}")
        if not isinstance(self.meta, Mapping):
            raise InvalidTask(f"Task.meta must be a mapping, got {type(self.meta).__name__}")
        if not isinstance(self.id, str):
            raise InvalidTask(f"Task.id must be a string (empty: the content hash), got {type(self.id).__name__}")
        for name in ("family", "instruction", "parent", "id"):
            if getattr(self, name) is not None:
                _check_text(getattr(self, name), f"Task.{name}")
        try:
            _canonical_json({"spec": thaw(self.spec), "meta": thaw(self.meta)})
        except RecursionError:
            raise InvalidTask("Task.spec or Task.meta is nested too deeply to be JSON (thousands of levels)") from None
        except (TypeError, ValueError) as exc:
            raise InvalidTask(f"Task.spec and Task.meta must be JSON-serialisable: {exc}") from None
        _check_texts(self.spec, "Task.spec")
        _check_texts(self.meta, "Task.meta")
        object.__setattr__(self, "spec", freeze(self.spec))
        object.__setattr__(self, "meta", freeze(self.meta))
        if not self.id:
            object.__setattr__(self, "id", content_id(self.family, self.instruction, self.spec))

    def __hash__(self) -> int:
        return hash(self.id)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Task):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    def to_dict(self) -> dict[str, Any]:
        """A plain, JSON-ready dict; :meth:`from_dict` rebuilds the same task."""
        return {
            "id": self.id,
            "family": self.family,
            "instruction": self.instruction,
            "spec": thaw(self.spec),
            "parent": self.parent,
            "origin": self.origin,
            "meta": thaw(self.meta),
        }

    def to_json(self) -> str:
        """The task as one line of JSON."""
        return _canonical_json(self.to_dict())

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Task":
        """Rebuild a task from :meth:`to_dict` output (or any dict with the same keys)."""
        if not isinstance(data, Mapping):
            raise InvalidTask(f"expected a dict describing a Task, got {type(data).__name__}")
        missing = [k for k in ("family", "instruction", "spec") if k not in data]
        if missing:
            raise InvalidTask(f"task dict is missing {missing}; it has {sorted(data)}")
        unknown = set(data) - {"id", "family", "instruction", "spec", "parent", "origin", "meta"}
        if unknown:
            raise InvalidTask(f"task dict has unknown keys {sorted(unknown)}")
        return cls(
            family=data["family"],
            instruction=data["instruction"],
            spec=data["spec"],
            parent=data.get("parent"),
            origin=data.get("origin", "generated"),
            meta=data.get("meta") or {},
            id=data.get("id") or "",
        )

    @classmethod
    def from_json(cls, text: str) -> "Task":
        """Rebuild a task from :meth:`to_json` output."""
        return cls.from_dict(json.loads(text))

    def derive(self, *, instruction: str, spec: Mapping[str, Any], origin: str, meta: Mapping[str, Any] | None = None) -> "Task":
        """A new task made from this one (a mutation or rewrite): parent is this task's id."""
        merged_meta = dict(thaw(self.meta))
        merged_meta.update(meta or {})
        return Task(family=self.family, instruction=instruction, spec=spec, parent=self.id, origin=origin, meta=merged_meta)
