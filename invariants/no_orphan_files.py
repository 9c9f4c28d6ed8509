"""Invariant ``no_orphan_files`` (docs/protocol.md section 9): every data file the table holds at
the end of the run is either listed by a completed instant's commit metadata or was written by an
instant still pending on the timeline. A file of an instant that was rolled back, or of a
completed instant that does not list it, is an orphan: the rollback
(``MarkerBasedRollbackStrategy``) and the commit's finalize (``HoodieTable#reconcileAgainstMarkers``)
find the files an instant wrote through its markers, so an orphan means a marker went missing, or a file was written after
its instant was rolled back. An orphan is never cleaned; a reader that lists the partition shows
it once its instant counts as completed or archived, and a file of a completed instant at once.

From the raw files (:mod:`invariants.committed`: the data files under the table's folders, the
files each completed instant lists, the instants still pending) and the history: which instant
wrote each file (the write tasks' ``flush`` events name their files; otherwise the time in the
file's name) and what became of it (its ``rollback`` events).
"""

from __future__ import annotations

from collections.abc import Sequence

from invariants.committed import load_committed
from invariants.verdict import Verdict, Violation
from models.history import Event
from models.view.table import HudiTable

NAME = "no_orphan_files"
MAX_VIOLATIONS = 6


def check_no_orphan_files(events: Sequence[Event], table: HudiTable) -> Verdict:
    committed = load_committed(table)
    pending = {i.requested for i in committed.instants if not i.completed}
    completed = {i.requested for i in committed.instants if i.completed}
    writers = _writers(events)
    orphans: dict[str, list[str]] = {}
    for path, data_file in sorted(committed.files.items()):
        if path in committed.listed_by:
            continue
        instant = writers.get(path, (data_file.instant, -1))[0]
        if instant not in pending:
            orphans.setdefault(instant, []).append(path)
    violations = [
        _violation(instant, paths, instant in completed, writers, events)
        for instant, paths in sorted(orphans.items())
    ]
    return Verdict(NAME, tuple(violations[:MAX_VIOLATIONS]))


def _writers(events: Sequence[Event]) -> dict[str, tuple[str, int]]:
    """Data file path -> (the instant whose flush wrote it, that event's index)."""
    out: dict[str, tuple[str, int]] = {}
    for event in events:
        if event.f != "flush" or event.type != "ok" or not isinstance(event.value, dict):
            continue
        instant = event.value.get("instant")
        for path in event.value.get("files") or []:
            if instant:
                out[str(path)] = (str(instant), event.index)
    return out


def _violation(
    instant: str,
    paths: list[str],
    completed: bool,
    writers: dict[str, tuple[str, int]],
    events: Sequence[Event],
) -> Violation:
    rollbacks = [
        e.index
        for e in events
        if e.f == "rollback" and isinstance(e.value, dict) and e.value.get("instant") == instant
    ]
    state = (
        "completed without listing them"
        if completed
        else "rolled back"
        if rollbacks
        else "gone from the timeline"
    )
    shown = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
    flushes = sorted({writers[p][1] for p in paths if p in writers})
    return Violation(
        f"{len(paths)} data file(s) of instant {instant} ({state}) remain on storage, listed by "
        f"no completed commit: {shown}",
        tuple(flushes + rollbacks),
    )


__all__ = ["check_no_orphan_files"]
