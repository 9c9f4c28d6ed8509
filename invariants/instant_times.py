"""The instant times a history records, read once for the four instant-ordering checkers
(docs/protocol.md sections 1 and 9, invariants 1-3).

Completion-time file slicing is only as good as the instant times under it: two equal times make
the slice of a log ambiguous, a time that goes backwards puts a log into a slice a compaction has
already planned, and a completion time before its requested time makes an instant complete before
it started. TrueTime promises none of that happens while the real clock skew stays below its bound;
the checkers (:mod:`invariants.instant_unique`, :mod:`invariants.instant_monotonic`,
:mod:`invariants.completion_after_request`, :mod:`invariants.commit_order`) verify the promise
from the history alone.

Their main source is the ``instant_time`` events the simulator records each time a generator hands
out a time (``sim/time_recording.py``): one per requested and per completion time, in the order
the times were taken (completion times at the moment the completed file was created, so history
order is also file-creation order). ``commit`` / ``compaction`` events and the table's timeline
(active and archived) are cross-checked where they carry the same facts. A history that created
instants but has no ``instant_time`` event at all predates time recording and is reported as
uncheckable rather than passed (:func:`unrecorded`).

Explanations say, through the happens-before graph (:mod:`invariants.happens_before`), whether
the two offending events were causally ordered (the protocol promised an order and broke it) or
concurrent (nothing but the clocks ordered them) (:func:`causality`). The graph is built only when
there is something to explain. Everything else is one pass over the history.
"""

from __future__ import annotations

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

CREATES_INSTANTS = (
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
        return f"{self.process} at {at_time(self.at_ms)}"

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
                instant=str_or_none(value.get("instant")),
                action=str_or_none(value.get("action")),
                error=str_or_none(value.get("error")),
            )
        )
    return out


def str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def at_time(ms: int) -> str:
    return f"t={ms / 1000:.3f}s"


def gap_ms(later: str, earlier: str) -> int | None:
    """``earlier - later`` in ms (how far back a time went), None if either is no valid time."""
    try:
        return parse_epoch_ms(earlier) - parse_epoch_ms(later)
    except (TypeError, ValueError):
        return None


def unrecorded(name: str, events: Sequence[Event], times: list[GeneratedTime]) -> Verdict | None:
    """A violation if instants were created but no time was recorded: nothing can be checked."""
    if times:
        return None
    creating = next((e for e in events if (e.f, e.type) in CREATES_INSTANTS), None)
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


def causality(hb: HappensBefore, earlier: int, later: int) -> str:
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


def completed_files(table: HudiTable) -> list[tuple[str, str, str]]:
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


__all__ = [
    "COMPLETION",
    "CREATES_INSTANTS",
    "INSTANT_TIME",
    "REQUESTED",
    "GeneratedTime",
    "at_time",
    "causality",
    "completed_files",
    "gap_ms",
    "generated_times",
    "str_or_none",
    "unrecorded",
]
