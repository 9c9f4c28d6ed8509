"""``commit_order`` (docs/protocol.md section 9, invariants 2 and 3): per job, instants commit in
checkpoint order; no instant commits twice; completed files are created in completion-time order.

Read from the history's ``commit`` / ``compaction`` events and ``instant_time`` events
(:mod:`invariants.instant_times`: history order of the completion times is the order the
completed files appeared) and from the final table's active timeline folder.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from invariants.happens_before import HappensBefore
from invariants.instant_times import (
    COMPLETION,
    GeneratedTime,
    at_time,
    causality,
    completed_files,
    generated_times,
    unrecorded,
)
from invariants.verdict import Verdict, Violation
from models.history import Event
from models.view.table import HudiTable

COMMIT_ORDER = "commit_order"


def check_commit_order(events: Sequence[Event], table: HudiTable | None = None) -> Verdict:
    """(a) Per job, instants commit in checkpoint order; (b) no instant commits twice; (c) completed
    files are created in completion-time order (docs/protocol.md section 9, invariants 2 and 3)."""
    times = generated_times(events)
    missing = unrecorded(COMMIT_ORDER, events, times)
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
                f"{checkpoint} at {at_time(event.time)} after instant {before.value.get('instant')} "
                f"of checkpoint {before.value['checkpoint']} at {at_time(before.time)}: instants "
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
        for instant, completion, action in completed_files(table):
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
                f"{causality(hb, greatest.index, generated.index)}",
                (greatest.index, generated.index),
            )
        )
    return out


__all__ = ["COMMIT_ORDER", "check_commit_order"]
