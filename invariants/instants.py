"""The instant-ordering invariants (docs/protocol.md sections 1 and 9, invariants 1-3):
``instant_unique``, ``instant_monotonic``, ``completion_after_request`` and ``commit_order``.

Completion-time file slicing is only as good as the instant times under it: two equal times make
the slice of a log ambiguous, a time that goes backwards puts a log into a slice a compaction has
already planned, and a completion time before its requested time makes an instant complete before
it started. TrueTime promises none of that happens while the real clock skew stays below its bound;
these checkers verify the promise from the history alone.

Their main source is the ``instant_time`` events the simulator records each time a generator hands
out a time (``sim/time_recording.py``): one per requested and per completion time, in the order
the times were taken (completion times at the moment the completed file was created, so history
order is also file-creation order). ``commit`` / ``compaction`` events and the table's timeline
(active and archived) are cross-checked where they carry the same facts. A history that created
instants but has no ``instant_time`` event at all predates time recording and is reported as
uncheckable rather than passed.

Explanations say, through the happens-before graph (:mod:`invariants.happens_before`), whether
the two offending events were causally ordered (the protocol promised an order and broke it) or
concurrent (nothing but the clocks ordered them). The graph is built only when there is something
to explain. Everything else is one pass over the history.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from invariants.happens_before import HappensBefore, describe_chain
from invariants.verdict import Verdict, Violation
from models.history import Event
from models.timeline.instant import InstantFileNameError, State, parse_instant_file_name
from models.timeline.instant_time import parse_epoch_ms
from models.view.table import HudiTable

INSTANT_TIME = "instant_time"
"""The history ``f`` of a generated time (see ``sim/time_recording.py``)."""

REQUESTED = "requested"
COMPLETION = "completion"

_CREATES_INSTANTS = (
    ("start_instant", "ok"),
    ("commit", "ok"),
    ("schedule_compaction", "ok"),
    ("compaction", "ok"),
    ("rollback", "ok"),
)


@dataclass(frozen=True)
class GeneratedTime:
    """One ``instant_time`` event: a time a process's generator handed out."""

    index: int
    at_ms: int
    process: str
    time: str
    use: str
    locked: bool = False
    instant: str | None = None
    """For a completion: the requested time of the instant it completed (None if the completed
    file could not be created, see ``error``)."""
    action: str | None = None
    error: str | None = None

    def where(self) -> str:
        """``"ingest/coordinator at t=12.400s"``."""
        return f"{self.process} at {_at(self.at_ms)}"

    def what(self) -> str:
        if self.use == REQUESTED:
            return "a requested time"
        if self.instant is not None:
            return f"the completion time of {self.action or 'instant'} {self.instant}"
        return "a completion time"


def generated_times(events: Iterable[Event]) -> list[GeneratedTime]:
    """Every ``instant_time`` event of the history, in history order."""
    out = []
    for event in events:
        if event.f != INSTANT_TIME or event.type != "info" or not isinstance(event.value, dict):
            continue
        value = event.value
        time = value.get("time")
        if not isinstance(time, str):
            continue
        out.append(
            GeneratedTime(
                index=event.index,
                at_ms=event.time,
                process=event.process,
                time=time,
                use=str(value.get("use", REQUESTED)),
                locked=value.get("locked") is True,
                instant=_str_or_none(value.get("instant")),
                action=_str_or_none(value.get("action")),
                error=_str_or_none(value.get("error")),
            )
        )
    return out


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _at(ms: int) -> str:
    return f"t={ms / 1000:.3f}s"


def _gap_ms(later: str, earlier: str) -> int | None:
    """``earlier - later`` in ms (how far back a time went), None if either is no valid time."""
    try:
        return parse_epoch_ms(earlier) - parse_epoch_ms(later)
    except (TypeError, ValueError):
        return None


def _unrecorded(name: str, events: Sequence[Event], times: list[GeneratedTime]) -> Verdict | None:
    """A violation if instants were created but no time was recorded: nothing can be checked."""
    if times:
        return None
    creating = next((e for e in events if (e.f, e.type) in _CREATES_INSTANTS), None)
    if creating is None:
        return None
    return Verdict(
        name,
        (
            Violation(
                f"the history creates instants (event {creating.index}, {creating.f}) but records "
                f"no {INSTANT_TIME} event, so the times cannot be checked (a history recorded "
                "before time recording, or a simulator that does not wrap its time generators)",
                (creating.index,),
            ),
        ),
    )


def _causality(hb: HappensBefore, earlier: int, later: int) -> str:
    """How the two events relate causally, as the end of a violation sentence."""
    chain = hb.chain(earlier, later)
    if chain is None:
        return (
            f"; events {earlier} and {later} are concurrent (no happens-before chain orders "
            "them), so only the clocks ordered them"
        )
    return (
        f", although event {earlier} happens-before event {later} via "
        f"{describe_chain(hb.graph, chain)}"
    )


# --- instant_unique -----------------------------------------------------------------------------

UNIQUE = "instant_unique"


def check_instant_unique(events: Sequence[Event], table: HudiTable | None = None) -> Verdict:
    """Every generated time (requested or completion, any process, any job) is generated once."""
    times = generated_times(events)
    missing = _unrecorded(UNIQUE, events, times)
    if missing is not None:
        return missing
    by_time: dict[str, list[GeneratedTime]] = defaultdict(list)
    for generated in times:
        by_time[generated.time].append(generated)
    hb = HappensBefore(events)
    violations = []
    for same in sorted(
        (group for group in by_time.values() if len(group) > 1), key=lambda g: g[0].index
    ):
        first, second = same[0], same[1]
        again = ", ".join(f"{g.where()} ({g.what()})" for g in same[1:])
        violations.append(
            Violation(
                f"instant {first.time} was generated by {first.where()} ({first.what()}) and "
                f"again by {again}{_causality(hb, first.index, second.index)}",
                tuple(g.index for g in same),
            )
        )
    return Verdict(UNIQUE, tuple(violations))


# --- instant_monotonic --------------------------------------------------------------------------

MONOTONIC = "instant_monotonic"


def check_instant_monotonic(events: Sequence[Event], table: HudiTable | None = None) -> Verdict:
    """Generated times strictly increase in the (real-time) order they were generated.

    Each time not after the greatest one generated before it is one backwards step, reported with
    the event that generated that greatest time.
    """
    times = generated_times(events)
    missing = _unrecorded(MONOTONIC, events, times)
    if missing is not None:
        return missing
    hb = HappensBefore(events)
    violations = []
    greatest: GeneratedTime | None = None
    for generated in times:
        if greatest is None or generated.time > greatest.time:
            greatest = generated
            continue
        gap = _gap_ms(generated.time, greatest.time)
        how = (
            "repeats it"
            if generated.time == greatest.time
            else f"goes back {gap} ms"
            if gap is not None
            else "goes back"
        )
        violations.append(
            Violation(
                f"instant time {generated.time} ({generated.what()}) was generated by "
                f"{generated.where()} after {greatest.time} ({greatest.what()}) had been "
                f"generated by {greatest.where()}: it {how}"
                f"{_causality(hb, greatest.index, generated.index)}",
                (greatest.index, generated.index),
            )
        )
    return Verdict(MONOTONIC, tuple(violations))


# --- completion_after_request ---------------------------------------------------------------------

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
            open_op[process] = ("compaction", _str_or_none(value.get("instant")))
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
        instant = _str_or_none(value.get("instant"))
        action = _str_or_none(value.get("action"))
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
                    _str_or_none(value.get("error")),
                )
            )
    return out


def _completed_files(table: HudiTable) -> list[tuple[str, str, str]]:
    """(requested, completion, action) of every completed file in the active timeline folder.

    Read from the listing itself rather than from a loaded timeline, which keeps one state per
    instant and action and would hide a second completed file of the same instant.
    """
    out = []
    for status in table.storage.list_dir(table.active_timeline.folder):
        try:
            parsed = parse_instant_file_name(status.name)
        except InstantFileNameError:
            continue
        if parsed.state is State.COMPLETED and parsed.completion_time is not None:
            out.append((parsed.requested_time, parsed.completion_time, parsed.action))
    return sorted(out)


def _table_completions(table: HudiTable) -> list[tuple[str, str, str, str]]:
    """(requested, completion, action, where) of every completed instant on the table, active
    and archived (legacy entries without a completion time are skipped: nothing to compare)."""
    out = [(r, c, a, "active") for r, c, a in _completed_files(table)]
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
    missing = _unrecorded(AFTER_REQUEST, events, times)
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
        f" (generated by {completion_event.process} at {_at(completion_event.time)})"
        if completion_event is not None and done.source == INSTANT_TIME
        else f" (event {done.events[0]}, {done.source})"
    )
    gap = _gap_ms(done.completion, done.instant)
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
            sentence += _causality(hb, requested.index, done.events[0])
        refs.insert(0, requested.index)
    if done.error is not None:
        sentence += f"; the timeline refused the completed file ({done.error})"
    return Violation(sentence, tuple(sorted(set(refs))))


# --- commit_order -------------------------------------------------------------------------------

COMMIT_ORDER = "commit_order"


def check_commit_order(events: Sequence[Event], table: HudiTable | None = None) -> Verdict:
    """(a) Per job, instants commit in checkpoint order; (b) no instant commits twice; (c) completed
    files are created in completion-time order (docs/protocol.md section 9, invariants 2 and 3)."""
    times = generated_times(events)
    missing = _unrecorded(COMMIT_ORDER, events, times)
    if missing is not None:
        return missing
    hb = HappensBefore(events)
    violations = [
        *_checkpoint_order(events),
        *_committed_twice(events, times, table),
        *_file_creation_order(times, hb),
    ]
    return Verdict(COMMIT_ORDER, tuple(sorted(violations, key=lambda v: v.events)))


def _checkpoint_order(events: Sequence[Event]) -> list[Violation]:
    """A commit whose checkpoint id is below one its job already committed."""
    out = []
    latest: dict[str, Event] = {}
    for event in events:
        if event.f != "commit" or event.type != "ok" or not isinstance(event.value, dict):
            continue
        checkpoint = event.value.get("checkpoint")
        if not isinstance(checkpoint, int):
            continue
        job = event.process.split("/", 1)[0]
        before = latest.get(job)
        if before is None or checkpoint >= before.value["checkpoint"]:
            latest[job] = event
            continue
        out.append(
            Violation(
                f"job {job} committed instant {event.value.get('instant')} of checkpoint "
                f"{checkpoint} at {_at(event.time)} after instant {before.value.get('instant')} "
                f"of checkpoint {before.value['checkpoint']} at {_at(before.time)}: instants "
                "must commit in checkpoint order",
                (before.index, event.index),
            )
        )
    return out


def _committed_twice(
    events: Sequence[Event], times: list[GeneratedTime], table: HudiTable | None
) -> list[Violation]:
    """An instant completed more than once: two completed files (history or table), or two
    ``commit`` / ``compaction`` events for it."""
    groups: dict[tuple[str, str], list[tuple[int, str]]] = defaultdict(list)
    for generated in times:
        if generated.use == COMPLETION and generated.instant is not None:
            groups[generated.instant, "file"].append((generated.index, generated.time))
    for event in events:
        if event.f in ("commit", "compaction") and event.type == "ok":
            value = event.value if isinstance(event.value, dict) else {}
            instant, completion = value.get("instant"), value.get("completion")
            if isinstance(instant, str):
                groups[instant, event.f].append((event.index, str(completion)))
    out = []
    reported: set[str] = set()
    for (instant, source), found in sorted(groups.items(), key=lambda item: item[1][0][0]):
        if len(found) < 2 or instant in reported:
            continue
        reported.add(instant)
        what = {
            "file": "completed files were created",
            "commit": "commit events were recorded",
            "compaction": "compaction events were recorded",
        }[source]
        listed = ", ".join(f"{completion} (event {index})" for index, completion in found)
        out.append(
            Violation(
                f"instant {instant} committed {len(found)} times: {what} with completion times "
                f"{listed}; an instant must commit exactly once",
                tuple(index for index, _ in found),
            )
        )
    if table is not None:
        files: dict[tuple[str, str], list[str]] = defaultdict(list)
        for instant, completion, action in _completed_files(table):
            files[instant, action].append(completion)
        for (instant, action), found in sorted(files.items()):
            if len(found) < 2 or instant in reported:
                continue
            reported.add(instant)
            out.append(
                Violation(
                    f"the table's timeline holds {len(found)} completed files of {action} "
                    f"{instant} (completion times {', '.join(found)}); an instant must commit "
                    "exactly once",
                    (),
                )
            )
    return out


def _file_creation_order(times: list[GeneratedTime], hb: HappensBefore) -> list[Violation]:
    """A completed file created after one with a greater completion time (history order of the
    completion events is the order the files appeared)."""
    out = []
    greatest: GeneratedTime | None = None
    for generated in times:
        if generated.use != COMPLETION or generated.instant is None:
            continue  # no completed file was created
        if greatest is None or generated.time > greatest.time:
            greatest = generated
            continue
        out.append(
            Violation(
                f"the completed file of {generated.action or 'instant'} {generated.instant} "
                f"(completion {generated.time}) was created by {generated.where()} after that of "
                f"{greatest.action or 'instant'} {greatest.instant} (completion {greatest.time}) "
                f"by {greatest.where()}: completed files must appear in completion-time order"
                f"{_causality(hb, greatest.index, generated.index)}",
                (greatest.index, generated.index),
            )
        )
    return out


__all__ = [
    "AFTER_REQUEST",
    "COMMIT_ORDER",
    "INSTANT_TIME",
    "MONOTONIC",
    "UNIQUE",
    "GeneratedTime",
    "check_commit_order",
    "check_completion_after_request",
    "check_instant_monotonic",
    "check_instant_unique",
    "generated_times",
]
