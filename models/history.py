"""The history contract: what the simulator writes and what the invariant checkers read.

A run is judged only by its history, so the history has to be something a checker can trust from
anywhere: a sweep on Spark, a file from last week, a hand-written regression. That is why it lives
in ``models/`` (no simulator imports) and why its encoding is pinned down to the byte:

- Events are Jepsen-style operations ``{index, time, process, type, f, value}``: ``type`` is one of
  :data:`EVENT_TYPES` (``info`` means the outcome is unknown, e.g. a lost ACK), ``process`` names
  the writer/coordinator/... that performed ``f``, and faults are ``info`` events of the process
  ``"nemesis"``. ``index`` is the event's position in the history (0, 1, 2, ...); ``time`` is the
  simulation's *true* time in milliseconds (never a process's skewed clock, which is data the
  event may carry in ``value``).
- ``value`` is plain JSON only (:func:`check_value`). Sets, arbitrary objects and NaN are refused
  at recording time because their encoding or order is not reproducible, and a history that is not
  byte-identical for one seed cannot be digested, diffed or replayed.
- One event is one canonical JSON line (:func:`event_to_json`: sorted keys, no spaces, ASCII
  only); a history is those lines, each ``"\\n"``-terminated (JSON Lines), and its identity is the
  sha256 of exactly those bytes (:func:`history_digest`).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

EVENT_TYPES = ("invoke", "ok", "fail", "info")
"""Jepsen's operation types: ``info`` = the outcome is unknown (it may or may not have happened)."""

NEMESIS = "nemesis"
"""The ``process`` of fault events (always of type ``info``)."""

EVENT_KEYS = ("f", "index", "process", "time", "type", "value")
"""The keys of one event's JSON object, sorted (the canonical order)."""

MAX_VALUE_DEPTH = 100
"""How deeply values may nest; deeper is almost surely a cycle (a list containing itself)."""

_SCALAR_TYPES = (str, int, bool, type(None))


def check_value(value: Any, where: str = "value") -> None:
    """Raise TypeError unless ``value`` is plain JSON whose encoding is reproducible.

    Allowed: dicts with ``str`` keys, lists and tuples (encoded as lists), ``str``, ``int``,
    ``bool``, ``None`` and finite floats. Types are checked exactly, not by ``isinstance``: an
    ``IntEnum`` or a ``str`` subclass would be written as a plain number or string and read back as
    a different type, so a round trip would not give the recorded event back. Sets, frozensets and
    other objects are refused because their iteration order is not deterministic (or not defined).
    ``where`` names the offending part in the message (``value['files'][2]``).
    """
    _check(value, where, 0)


def _check(value: Any, where: str, depth: int) -> None:
    if depth > MAX_VALUE_DEPTH:
        raise TypeError(f"{where}: nested more than {MAX_VALUE_DEPTH} levels deep (a cycle?)")
    kind = type(value)
    if kind in _SCALAR_TYPES:
        return
    if kind is float:
        if not math.isfinite(value):
            raise TypeError(f"{where}: {value!r} is not valid JSON (only finite floats are)")
        return
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str:
                raise TypeError(
                    f"{where}: dict key {key!r} is a {type(key).__name__}; JSON keys must be str"
                )
            _check(item, f"{where}[{key!r}]", depth + 1)
        return
    if kind is list or kind is tuple:
        for position, item in enumerate(value):
            _check(item, f"{where}[{position}]", depth + 1)
        return
    hint = " (sort it into a list)" if isinstance(value, set | frozenset) else ""
    raise TypeError(
        f"{where}: a {kind.__name__} is not plain JSON{hint}; allowed are dict with str keys, "
        "list, tuple, str, int, bool, None and finite float"
    )


def normalize_value(value: Any) -> Any:
    """A checked deep copy of ``value`` with tuples turned into lists (what a JSON round trip gives).

    Recorders store this copy so that a caller mutating its dict afterwards cannot rewrite history,
    and so that an event equals the event read back from its own JSON line.
    """
    check_value(value)
    return _copy(value)


def _copy(value: Any) -> Any:
    if type(value) is dict:
        return {key: _copy(item) for key, item in value.items()}
    if type(value) is list or type(value) is tuple:
        return [_copy(item) for item in value]
    return value


def _checked_copy(value: Any, where: str, depth: int) -> Any:
    """:func:`normalize_value` in one walk: checks exactly what :func:`_check` checks, in the same
    order and with the same messages, while copying (the simulator records ~20 events per
    simulated second, so walking every value twice showed in profiles)."""
    kind = type(value)
    if kind in _SCALAR_TYPES:
        return value
    if depth >= MAX_VALUE_DEPTH and (kind is dict or kind is list or kind is tuple) and value:
        _check(value, where, depth)  # its items are too deep: the same error as check_value's
    if kind is dict:
        out = {}
        for key, item in value.items():
            if type(key) is not str:
                raise TypeError(
                    f"{where}: dict key {key!r} is a {type(key).__name__}; JSON keys must be str"
                )
            kind_of_item = type(item)
            out[key] = (
                item
                if kind_of_item in _SCALAR_TYPES
                else _checked_copy(item, f"{where}[{key!r}]", depth + 1)
            )
        return out
    if kind is list or kind is tuple:
        return [
            item
            if type(item) in _SCALAR_TYPES
            else _checked_copy(item, f"{where}[{position}]", depth + 1)
            for position, item in enumerate(value)
        ]
    _check(value, where, depth)  # a float, or the error for what is not plain JSON
    return value


def recorded_event(index: int, time: int, process: str, type: str, f: str, value: Any) -> Event:
    """``Event(index, time, process, type, f, normalize_value(value))`` with the value walked once:
    checked and copied together instead of checked, copied and checked again by the event. Same
    errors, same event."""
    copied = _checked_copy(value, "value", 0)
    event = object.__new__(Event)
    for name, field in (
        ("index", index),
        ("time", time),
        ("process", process),
        ("type", type),
        ("f", f),
        ("value", copied),
    ):
        object.__setattr__(event, name, field)
    event._check_fields()
    return event


@dataclass(frozen=True)
class Event:
    """One operation (or fault) in a history; see the module docstring for the meaning of fields.

    Fields are validated on construction so that a malformed event fails where it is made, not in a
    checker hours later.
    """

    index: int
    time: int
    process: str
    type: str
    f: str
    value: Any = None

    def __post_init__(self) -> None:
        self._check_fields()
        check_value(self.value)

    def _check_fields(self) -> None:
        """Everything but the value (:func:`recorded_event` checks that while copying it)."""
        for name in ("index", "time"):
            field = getattr(self, name)
            if type(field) is not int:
                raise TypeError(f"event {name} must be an int, got {field!r}")
        if self.index < 0:
            raise ValueError(f"event index must be >= 0, got {self.index}")
        for name in ("process", "f"):
            field = getattr(self, name)
            if type(field) is not str or not field:
                raise TypeError(f"event {name} must be a non-empty str, got {field!r}")
        if self.type not in EVENT_TYPES:
            allowed = ", ".join(repr(t) for t in EVENT_TYPES)
            raise ValueError(f"event type must be one of {allowed}, got {self.type!r}")


def event_to_dict(event: Event) -> dict[str, Any]:
    """The event as a plain dict (the JSON object of its line)."""
    return {
        "index": event.index,
        "time": event.time,
        "process": event.process,
        "type": event.type,
        "f": event.f,
        "value": event.value,
    }


_CANONICAL = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
)
"""One encoder for every line (``json.dumps`` with options builds a new one per call)."""


def event_to_json(event: Event) -> str:
    """The event's canonical JSON line (without the newline): equal events give equal bytes."""
    return _CANONICAL.encode(event_to_dict(event))


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, item in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = item
    return out


def event_from_json(line: str) -> Event:
    """Parse one JSON line into an :class:`Event`; ValueError/TypeError say what is wrong.

    Strict on purpose: duplicate keys, NaN/Infinity, missing or unknown keys are errors rather than
    something silently dropped, since a checker's verdict is only as good as what it read.
    """
    try:
        obj = json.loads(line, object_pairs_hook=_unique_keys, parse_constant=_refuse_constant)
    except json.JSONDecodeError as error:
        raise ValueError(f"not valid JSON: {error}") from None
    if type(obj) is not dict:
        raise ValueError(f"an event must be a JSON object, got {type(obj).__name__}")
    keys = sorted(obj)
    if keys != list(EVENT_KEYS):
        missing = sorted(set(EVENT_KEYS) - set(keys))
        unknown = sorted(set(keys) - set(EVENT_KEYS))
        raise ValueError(
            f"an event has exactly the keys {', '.join(EVENT_KEYS)}; "
            f"missing: {missing or 'none'}, unknown: {unknown or 'none'}"
        )
    return Event(
        index=obj["index"],
        time=obj["time"],
        process=obj["process"],
        type=obj["type"],
        f=obj["f"],
        value=obj["value"],
    )


def history_jsonl(events: Iterable[Event]) -> bytes:
    """The history as JSON Lines bytes: one canonical line per event, each ending in ``\\n``."""
    return "".join(event_to_json(event) + "\n" for event in events).encode("ascii")


def history_digest(events: Iterable[Event]) -> str:
    """``"sha256:<hex>"`` of :func:`history_jsonl`: one seed, one code version, one digest."""
    return "sha256:" + hashlib.sha256(history_jsonl(events)).hexdigest()


def parse_history(
    lines: Iterable[str], source: str = "<history>", *, check_index: bool = True
) -> list[Event]:
    """Parse JSON Lines into events; errors name ``source`` and the 1-based line number.

    Blank lines are skipped (hand-written regressions end with one). With ``check_index`` the
    events must be numbered 0, 1, 2, ... in order, which is what ``index`` means; checkers rely on
    it to refer to events.
    """
    events: list[Event] = []
    for number, raw in enumerate(lines, start=1):
        line = raw.rstrip("\r\n")
        if not line.strip():
            continue
        try:
            event = event_from_json(line)
        except (TypeError, ValueError) as error:
            raise ValueError(f"{source}, line {number}: {error}") from None
        if check_index and event.index != len(events):
            raise ValueError(
                f"{source}, line {number}: event index {event.index}, expected {len(events)} "
                "(indexes are positions in the history: 0, 1, 2, ...)"
            )
        events.append(event)
    return events


def read_history(path: str | os.PathLike[str], *, check_index: bool = True) -> list[Event]:
    """Read a JSON Lines history file (see :func:`parse_history` for what is checked)."""
    with open(path, encoding="utf-8", newline="") as lines:
        return parse_history(lines, os.fspath(path), check_index=check_index)


def write_history(path: str | os.PathLike[str], events: Iterable[Event]) -> None:
    """Write ``events`` as JSON Lines, atomically: a temporary file renamed over ``path``.

    A crash mid-write must not leave a truncated history that a checker would then judge.
    """
    target = Path(path)
    data = history_jsonl(events)
    tmp = target.with_name(target.name + ".tmp-write")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
