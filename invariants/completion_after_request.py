"""``completion_after_request`` (docs/protocol.md sections 1 and 9): every completion time is
after its instant's requested time.

A completion time before its requested time makes an instant complete before it started. Checked
in the history (generated completion times, including ones the timeline refused, and
``commit`` / ``compaction`` events, :mod:`invariants.instant_times`) and on the final table's
timeline, active and archived.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from invariants.happens_before import HappensBefore
from invariants.instant_times import (
    COMPLETION,
    INSTANT_TIME,
    REQUESTED,
    GeneratedTime,
    at_time,
    causality,
    completed_files,
    gap_ms,
    generated_times,
    str_or_none,
    unrecorded,
)
from invariants.verdict import Verdict, Violation
from models.history import Event
from models.view.table import HudiTable

AFTER_REQUEST = "completion_after_request"


@dataclass(frozen=True)
class _Completion:
    instant: str
    completion: str
    action: str | None
    events: tuple[int, ...]
    source: str
    error: str | None = None


def _completions(events: Sequence[Event]) -> list[_Completion]:
    """Every (requested time, completion time) pair the history shows, in history order.

    A completion time whose completed file was refused carries no instant; it is attributed to the
    operation its process had open: the compactor's ``compaction`` (completing an instant another
    process requested) or a ``rollback`` (whose own requested time its process generated just
    before). Those are the completions that can come out before their requested time.
    """
    out: list[_Completion] = []
    open_op: dict[str, tuple[str, str | None]] = {}  # process -> (action, instant) it completes
    for event in events:
        value = event.value if isinstance(event.value, dict) else {}
        process = event.process
        if event.f == "compaction" and event.type == "invoke":
            open_op[process] = ("compaction", str_or_none(value.get("instant")))
        elif event.f == "rollback" and event.type == "invoke":
            open_op[process] = ("rollback", None)  # its instant is the next requested time
        elif event.f in ("compaction", "rollback", "error") and event.type in ("ok", "fail"):
            open_op.pop(process, None)
        elif event.f in ("failover", "start") and "/" not in process:
            for name in [p for p in open_op if p.split("/", 1)[0] == process]:
                del open_op[name]
        if event.f in ("commit", "compaction") and event.type == "ok":
            instant, completion = value.get("instant"), value.get("completion")
            if isinstance(instant, str) and isinstance(completion, str):
                action = "compaction" if event.f == "compaction" else None
                out.append(_Completion(instant, completion, action, (event.index,), event.f))
            continue
        if event.f != INSTANT_TIME or event.type != "info":
            continue
        time = value.get("time")
        if not isinstance(time, str):
            continue
        if value.get("use") == REQUESTED:
            if open_op.get(process) == ("rollback", None):
                open_op[process] = ("rollback", time)
            continue
        instant = str_or_none(value.get("instant"))
        action = str_or_none(value.get("action"))
        if instant is None and process in open_op:
            action, instant = open_op[process]
        if instant is not None:
            out.append(
                _Completion(
                    instant,
                    time,
                    action,
                    (event.index,),
                    INSTANT_TIME,
                    str_or_none(value.get("error")),
                )
            )
    return out


def _table_completions(table: HudiTable) -> list[tuple[str, str, str, str]]:
    """(requested, completion, action, where) of every completed instant on the table, active
    and archived (legacy entries without a completion time are skipped: nothing to compare)."""
    out = [(r, c, a, "active") for r, c, a in completed_files(table)]
    for row in table.archived_timeline().records():
        if row.completion_time is not None:
            out.append((row.instant_time, row.completion_time, row.action, "archived"))
    return out


def check_completion_after_request(
    events: Sequence[Event], table: HudiTable | None = None
) -> Verdict:
    """Every completion time is after its instant's requested time: in the history (generated
    completion times, including ones the timeline refused, and commit/compaction events) and on
    the final table's timeline, active and archived."""
    times = generated_times(events)
    missing = unrecorded(AFTER_REQUEST, events, times)
    if missing is not None:
        return missing
    requested_by = {}
    for generated in times:
        if generated.use == REQUESTED:
            requested_by.setdefault(generated.time, generated)
    completed_by: dict[tuple[str, str], GeneratedTime] = {}
    for generated in times:
        if generated.use == COMPLETION and generated.instant is not None:
            completed_by.setdefault((generated.instant, generated.time), generated)
    hb = HappensBefore(events)
    violations = []
    seen: set[tuple[str, str]] = set()
    for done in _completions(events):
        key = (done.instant, done.completion)
        if done.completion > done.instant or key in seen:
            continue
        seen.add(key)
        violations.append(_after_request_violation(done, requested_by, events, hb))
    if table is not None:
        for instant, completion, action, where in _table_completions(table):
            key = (instant, completion)
            if completion > instant or key in seen:
                continue
            seen.add(key)
            refs = [
                g.index for g in (requested_by.get(instant), completed_by.get(key)) if g is not None
            ]
            violations.append(
                Violation(
                    f"the table's {where} timeline has {action} {instant} completed at "
                    f"{completion}, which is not after its requested time",
                    tuple(refs),
                )
            )
    return Verdict(AFTER_REQUEST, tuple(violations))


def _after_request_violation(
    done: _Completion,
    requested_by: dict[str, GeneratedTime],
    events: Sequence[Event],
    hb: HappensBefore,
) -> Violation:
    position = done.events[0]
    completion_event = events[position] if position < len(events) else None
    if completion_event is not None and completion_event.index != position:
        completion_event = None  # not a whole history: do not guess
    by = (
        f" (generated by {completion_event.process} at {at_time(completion_event.time)})"
        if completion_event is not None and done.source == INSTANT_TIME
        else f" (event {done.events[0]}, {done.source})"
    )
    gap = gap_ms(done.completion, done.instant)
    how = (
        "equals it"
        if done.completion == done.instant
        else f"is {gap} ms before it"
        if gap is not None
        else "is before it"
    )
    what = done.action or "instant"
    sentence = (
        f"completion time {done.completion} of {what} {done.instant}{by} is not after its "
        f"requested time: it {how}"
    )
    refs = list(done.events)
    requested = requested_by.get(done.instant)
    if requested is not None:
        sentence += f" (requested by {requested.where()})"
        if requested.index < done.events[0]:
            sentence += causality(hb, requested.index, done.events[0])
        refs.insert(0, requested.index)
    if done.error is not None:
        sentence += f"; the timeline refused the completed file ({done.error})"
    return Violation(sentence, tuple(sorted(set(refs))))


__all__ = ["AFTER_REQUEST", "check_completion_after_request"]
