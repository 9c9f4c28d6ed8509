"""Invariant ``slicing`` (docs/protocol.md section 9, invariant 5; the rule of section 4): every
committed log file is in exactly one file slice, the one the rule names, and every compaction plan
holds exactly the logs the rule puts in the slice it compacts.

The expected slicing is computed here, independently of ``models/view/fsview.py``, from the raw table
(:mod:`invariants.raw_files`: own parse of file names, completion times from the completed instant
files' names):

* a log is *committed* when a completed deltacommit lists it in its write stats; its completion
  time is that deltacommit's;
* the barriers of a file group are the instants of its committed base files and the requested
  times of the pending compactions whose plan names the group; a file group whose earliest
  committed logs complete before any barrier is anchored on the earliest of them (by requested
  time): the fix of apache/hudi#19774, never on an uncommitted log;
* a committed log belongs to the slice of the greatest barrier ``<=`` its completion time (equal
  times cannot happen with unique instant times, and are reported if they do);
* a compaction requested at ``r`` must plan, for each file group it names, the latest slice as of
  ``r``: that slice's base instant and base file, and exactly its logs (all completed before
  ``r``).

The slices compared against are those of the system under test: ``models.view.table.HudiTable`` with
the run's own variant (``[protocol] file_slicing``, ``slice_anchor``, and
``archived_completion_lookup = false`` as a table without the archive fallback), at the end and as
of the time-travel bounds of :func:`invariants.time_travel.travel_points` (a log of a deltacommit
still pending at a bound is uncommitted there: that is where an anchor on an uncommitted log
shows). As of a bound, a compaction that completed after it does not open a slice: time travel
sees only its completed ``commit`` (``models.timeline.active.Timeline.as_of``), and a reader merges a
pending compaction's slice into the previous one anyway, so what is read is the same; only a
compaction that never completed is pending there.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field

from invariants.committed import CommittedTable, load_committed
from invariants.instant_events import events_of, instant_events
from invariants.raw_files import DataFile, RawInstant
from invariants.sut_view import SystemView, system_view
from invariants.time_travel import travel_points
from invariants.verdict import Verdict, Violation
from models.history import Event
from models.table_errors import CorruptTableError
from models.view.table import HudiTable

NAME = "slicing"
EXAMPLES = 3
MAX_POINT_VIOLATIONS = 6


@dataclass
class GroupSlicing:
    """The rule's slicing of one file group: sorted barriers and the slice of each log."""

    partition: str
    file_id: str
    barriers: list[str] = field(default_factory=list)
    bases: dict[str, DataFile] = field(default_factory=dict)  # barrier -> committed base file
    logs: dict[str, str] = field(default_factory=dict)  # log path -> slice
    deltacommits: dict[str, RawInstant] = field(default_factory=dict)  # log path -> its commit
    ties: list[str] = field(default_factory=list)  # logs completing at a barrier's time

    @property
    def latest(self) -> str | None:
        return self.barriers[-1] if self.barriers else None


def expected_slicing(
    committed: CommittedTable, bound: str | None, *, time_travel: bool = False
) -> dict[tuple[str, str], GroupSlicing]:
    """The rule's slicing of every file group as of ``bound`` (None: now).

    Instants count when completed by ``bound``; pending compactions are those requested before
    ``bound`` and not completed by it (``time_travel``: only those that never completed, see the
    module docstring)."""

    def done(instant: RawInstant) -> bool:
        return instant.completed if bound is None else instant.completed_by(bound)

    groups: dict[tuple[str, str], GroupSlicing] = {}

    def group(f: DataFile) -> GroupSlicing:
        key = (f.partition, f.file_id)
        if key not in groups:
            groups[key] = GroupSlicing(f.partition, f.file_id)
        return groups[key]

    logs: list[tuple[DataFile, RawInstant]] = []
    barriers: dict[tuple[str, str], set[str]] = {}
    for instant in committed.instants:
        if done(instant):
            for f in instant.files:
                if f.path not in committed.files:
                    continue
                if f.is_log:
                    if instant.is_write:
                        logs.append((f, instant))
                else:
                    group(f).bases[f.instant] = f
                    barriers.setdefault((f.partition, f.file_id), set()).add(f.instant)
        elif instant.is_compaction and instant.plan is not None:
            if bound is not None and instant.requested >= bound:
                continue
            if time_travel and instant.completed:
                continue
            for op in instant.plan.operations:
                key = (op.partition_path, op.file_id)
                barriers.setdefault(key, set()).add(instant.requested)
                groups.setdefault(key, GroupSlicing(*key))
    by_group: dict[tuple[str, str], list[tuple[DataFile, RawInstant]]] = {}
    for f, instant in logs:
        group(f)
        by_group.setdefault((f.partition, f.file_id), []).append((f, instant))
    for key, g in groups.items():
        found = barriers.get(key, set())
        group_logs = by_group.get(key, [])
        first = min(found) if found else None
        early = [
            (instant.requested, f.version, f.token, f.name)
            for f, instant in group_logs
            if first is None or (instant.completion or "") < first
        ]
        if early:
            found = found | {min(early)[0]}
        g.barriers = sorted(found)
        for f, instant in group_logs:
            completion = instant.completion or ""
            i = bisect_right(g.barriers, completion)
            if i and g.barriers[i - 1] == completion:
                g.ties.append(f.path)
            g.logs[f.path] = g.barriers[i - 1] if i else instant.requested
            g.deltacommits[f.path] = instant
    return groups


def check_slicing(events: Sequence[Event], table: HudiTable) -> Verdict:
    committed = load_committed(table)
    view = system_view(events, table)
    by_instant = instant_events(events)
    scheduled = _scheduled_events(events)
    violations: list[Violation] = []
    point_violations: list[Violation] = []
    points: list[tuple[str | None, RawInstant | None, str]] = [
        (p.bound, p.instant, p.why)
        for p in travel_points(committed)
        if p.bound != committed.latest_completion  # the same view as the end, below
    ]
    points.append((None, None, "the end"))
    for bound, instant, why in points:
        found = _compare(committed, view, bound, instant, why, by_instant)
        if found is not None:
            (violations if bound is None else point_violations).append(found)
    violations += _capped(
        point_violations, "time-travel bounds where the slicing differs from the rule"
    )
    plans = [_check_plan(committed, c, by_instant, scheduled) for c in committed.compactions()]
    violations += _capped(
        [v for v in plans if v is not None], "compactions planned against the rule"
    )
    return Verdict(NAME, tuple(violations))


def _scheduled_events(events: Sequence[Event]) -> dict[str, tuple[int, ...]]:
    out: dict[str, list[int]] = {}
    for e in events:
        if e.type == "ok" and e.f == "schedule_compaction" and isinstance(e.value, dict):
            out.setdefault(str(e.value.get("instant")), []).append(e.index)
    return {k: tuple(v) for k, v in out.items()}


def _compare(
    committed: CommittedTable,
    view: SystemView,
    bound: str | None,
    instant: RawInstant | None,
    why: str,
    by_instant: dict[str, tuple[int, ...]],
) -> Violation | None:
    at = "at the end" if bound is None else f"as of {bound} ({why})"
    anchor = () if instant is None else events_of(by_instant, instant.requested)
    try:
        _, groups = committed.sut_file_groups(view, bound)
    except CorruptTableError as err:
        return Violation(f"{at} the file-system view refuses the table: {err}", anchor)
    actual: dict[str, list[tuple[str, bool]]] = {}
    for g in groups:
        for s in g.slices:
            visible = g.is_committed(s) or s.base_instant in g.pending_compactions
            for lf in s.log_files:
                path = f"{g.partition}/{lf.name}" if g.partition else lf.name
                actual.setdefault(path, []).append((s.base_instant, visible))
    expected = expected_slicing(committed, bound, time_travel=bound is not None)
    problems: dict[str, list[str]] = {}
    involved: set[str] = set()
    for g in expected.values():
        for path, slice_ in sorted(g.logs.items()):
            deltacommit = g.deltacommits[path]
            name = path.rsplit("/", 1)[-1]
            placed = actual.get(path, [])
            if path in g.ties:
                kind, detail = "tie", f"{name} completed at {deltacommit.completion}"
            elif not placed:
                kind, detail = "none", f"{name} (rule: slice {slice_})"
            elif len(placed) > 1:
                kind, detail = "several", f"{name} in slices {sorted(s for s, _ in placed)}"
            elif placed[0][0] != slice_:
                kind = "wrong"
                detail = (
                    f"{name} of {deltacommit.describe()} is in slice {placed[0][0]}, "
                    f"the rule names {slice_}"
                )
            elif not placed[0][1]:
                kind, detail = "hidden", f"{name} in uncommitted slice {slice_}"
            else:
                continue
            problems.setdefault(kind, []).append(detail)
            involved.add(deltacommit.requested)
    if not problems:
        return None
    labels = {
        "wrong": "in another slice than the rule names",
        "none": "in no slice",
        "several": "in several slices",
        "hidden": "hidden in a slice no reader sees",
        "tie": "completed at the same time as a slice's barrier (instant times must be unique)",
    }
    clauses = [
        f"{len(details)} committed logs {labels[kind]} (e.g. {'; '.join(details[:EXAMPLES])})"
        for kind, details in sorted(problems.items())
    ]
    events = set(anchor) | set(events_of(by_instant, *sorted(involved)[:EXAMPLES]))
    return Violation(
        f"{at} the file slicing breaks the completion-time rule: {'; '.join(clauses)}",
        tuple(sorted(events)),
    )


def _check_plan(
    committed: CommittedTable,
    compaction: RawInstant,
    by_instant: dict[str, tuple[int, ...]],
    scheduled: dict[str, tuple[int, ...]],
) -> Violation | None:
    """One violation for a compaction whose plan breaks the rule for any of its file groups."""
    plan = compaction.plan
    if plan is None:
        return None
    expected = expected_slicing(committed, compaction.requested)
    events = set(scheduled.get(compaction.requested, ())) | set(
        events_of(by_instant, compaction.requested)
    )
    wrong: list[str] = []
    for op in plan.operations:
        g = expected.get((op.partition_path, op.file_id))
        latest = g.latest if g is not None else None
        logs = sorted(
            path.rsplit("/", 1)[-1]
            for path, slice_ in (g.logs.items() if g is not None else ())
            if slice_ == latest
        )
        base = g.bases.get(latest) if g is not None and latest is not None else None
        planned = sorted(op.delta_file_paths)
        missing = sorted(set(logs) - set(planned))
        extra = sorted(set(planned) - set(logs))
        wrong_base = (op.base_instant_time or None) != latest or (op.data_file_path or None) != (
            base.name if base is not None else None
        )
        if not (missing or extra or wrong_base):
            continue
        clauses = []
        if wrong_base:
            clauses.append(
                f"it planned slice {op.base_instant_time} with base {op.data_file_path}, the rule's "
                f"latest slice is {latest} with base {base.name if base is not None else None}"
            )
        if missing:
            clauses.append(
                f"it leaves out {len(missing)} committed logs ({', '.join(missing[:EXAMPLES])})"
            )
        if extra:
            clauses.append(
                f"it includes {len(extra)} logs not committed in that slice before it was "
                f"requested ({', '.join(extra[:EXAMPLES])})"
            )
        if len(wrong) < EXAMPLES:
            for name in [*missing, *extra][:EXAMPLES]:
                path = f"{op.partition_path}/{name}" if op.partition_path else name
                for instant in committed.listed_by.get(path, ()):
                    events.update(events_of(by_instant, instant.requested))
        wrong.append(f"{op.partition_path}/{op.file_id}: {'; '.join(clauses)}")
    if not wrong:
        return None
    if len(wrong) == 1:
        group, _, clauses = wrong[0].partition(": ")
        why = f"planned file group {group} against the completion-time rule: {clauses}"
    else:
        shown = " | ".join(wrong[:EXAMPLES]) + (" | ..." if len(wrong) > EXAMPLES else "")
        why = f"planned {len(wrong)} file groups against the completion-time rule: {shown}"
    return Violation(f"compaction {compaction.requested} {why}", tuple(sorted(events)))


def _capped(violations: list[Violation], what: str) -> list[Violation]:
    """At most :data:`MAX_POINT_VIOLATIONS` violations, then one that counts the rest."""
    if len(violations) <= MAX_POINT_VIOLATIONS:
        return violations
    rest = violations[MAX_POINT_VIOLATIONS:]
    return [
        *violations[:MAX_POINT_VIOLATIONS],
        Violation(
            f"{len(rest)} more {what}",
            tuple(sorted({i for v in rest for i in v.events})),
        ),
    ]
