"""Optimistic concurrency control between writers: the commit-time conflict check (PROTOCOL.md §7).

Writers do not lock while they write; at commit time, under the table lock, a writer checks whether
an instant that *completed after this writer started* touched any of the same file groups. If one
did, the writer aborts: two writers rewriting one file group from the same starting slice would
each drop the other's updates. What Hudi's source does
(``SimpleConcurrentFileWritesConflictResolutionStrategy``, ``TransactionUtils.resolveWriteConflict
IfAny``), and how this module models it:

* **Candidates.** Hudi (table version 8+) takes the completed commits/deltacommits/replacecommits
  requested after the last instant that was complete when the writer started, plus the instants
  that were pending then and completed since. With TrueTime's increasing times both sets are
  "completed after our requested time", which is the rule here: completion time > ``instant``'s
  requested time. Pending clustering/replace plans are also candidates in Hudi; the testbed has no
  clustering writer, so they are not modeled.
* **Touched file groups** of a candidate: the (partition, file id) of its write stats, plus for a
  replacecommit the file groups it replaced (``ConcurrentOperation.getMutatedPartitionAndFileIds``);
  a compaction's are read from its plan as well. Conflict = non-empty intersection (``hasConflict``).
* **Compactions** (``resolveConflict``): a compaction never aborts a write that started after the
  compaction was scheduled, and for table version 8+ a MERGE_ON_READ table leaves completed
  compactions out of the candidates altogether: completion-time slicing puts a log that completes
  after the compaction's requested time into the slice the compaction opens, so nothing is lost.
  For table version 6, a compaction scheduled *after* the writer started conflicts (its log would
  land in the compacted slice and be lost). ``compaction_rule="always"`` is the naive variant that
  treats any overlapping completed compaction as a conflict (safe, but aborts writes for nothing).

The check is a pure function of a timeline and the table's instant files; run it inside the commit's
lock hold (e.g. as the writer's pre-commit hook) so no instant can complete in between.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from models.commit_metadata import WriteStat, read_compaction_plan
from models.instant import Instant, State
from models.timeline import Timeline

if TYPE_CHECKING:
    from models.table import HudiTable

FileGroupId = tuple[str, str]
"""(partition path, file id): a file group."""

CANDIDATE_ACTIONS = ("commit", "deltacommit", "replacecommit")
"""Completed actions that may conflict (a completed compaction is a ``commit``)."""
COMPACTION_RULES = ("hudi", "always")


class ConcurrentWriteConflict(RuntimeError):
    """``instant`` cannot commit: ``other`` completed after it started and touched the same
    file groups (Hudi's ``HoodieWriteConflictException``)."""

    def __init__(
        self, instant: Instant, other: Instant, file_groups: Iterable[FileGroupId]
    ) -> None:
        self.instant = instant
        self.other = other
        self.file_groups = tuple(sorted(file_groups))
        shown = ", ".join(f"{p or '<root>'}/{f}" for p, f in self.file_groups[:5])
        more = f" and {len(self.file_groups) - 5} more" if len(self.file_groups) > 5 else ""
        super().__init__(
            f"write conflict: {instant} cannot commit, {other} completed after it started and "
            f"wrote the same file groups ({shown}{more})"
        )


def touched_file_groups(stats: Iterable[WriteStat]) -> set[FileGroupId]:
    """The file groups a set of write stats wrote to."""
    return {(s.partition_path, s.file_id) for s in stats if s.file_id}


def _compaction_plan_groups(table: HudiTable, instant: Instant) -> set[FileGroupId] | None:
    """File groups of ``instant``'s compaction plan; None if it was no compaction."""
    requested = Instant(instant.requested_time, State.REQUESTED, "compaction")
    try:
        data = table.active_timeline.read_content(requested)
    except FileNotFoundError:
        return None
    return set(read_compaction_plan(data).file_groups())


def mutated_file_groups(table: HudiTable, instant: Instant) -> tuple[set[FileGroupId], bool]:
    """(file groups ``instant`` wrote or replaced, whether it was a compaction)."""
    meta = table.commit_metadata(instant)
    groups = set(meta.file_groups()) | set(meta.replaced_file_groups())
    maybe = instant.action in ("commit", "compaction")
    plan = _compaction_plan_groups(table, instant) if maybe else None
    is_compaction = plan is not None or meta.operation_type == "COMPACT" or meta.compacted
    return groups | (plan or set()), is_compaction


def _compaction_is_harmless(table: HudiTable, compaction: Instant, start: str) -> bool:
    """Hudi's rule: v8+ completion-time slicing, or a compaction scheduled before we started."""
    return table.config.version >= 8 or compaction.requested_time < start


def find_conflicts(
    timeline: Timeline,
    table: HudiTable,
    instant: Instant,
    touched: set[FileGroupId],
    *,
    compaction_rule: str = "hudi",
) -> list[Instant]:
    """Completed instants that conflict with ``instant`` writing ``touched``, by completion time.

    ``timeline`` is the timeline seen at commit time (load it under the lock).
    """
    if compaction_rule not in COMPACTION_RULES:
        raise ValueError(
            f"unknown compaction_rule {compaction_rule!r}; allowed: {', '.join(COMPACTION_RULES)}"
        )
    wanted = set(touched)
    start = instant.requested_time
    conflicts = []
    for other in timeline.by_completion_time():
        if other.requested_time == start or other.action not in CANDIDATE_ACTIONS:
            continue
        if (other.completion_time or "") <= start:
            continue  # completed before we started: we read on top of it
        groups, is_compaction = mutated_file_groups(table, other)
        if (
            compaction_rule == "hudi"
            and is_compaction
            and _compaction_is_harmless(table, other, start)
        ):
            continue
        if groups & wanted:
            conflicts.append(other)
    return conflicts


def ensure_no_conflict(
    timeline: Timeline,
    table: HudiTable,
    instant: Instant,
    touched: set[FileGroupId],
    *,
    compaction_rule: str = "hudi",
) -> None:
    """Raise :class:`ConcurrentWriteConflict` for the first conflicting instant, if any."""
    for other in find_conflicts(timeline, table, instant, touched, compaction_rule=compaction_rule):
        overlap, _ = mutated_file_groups(table, other)
        raise ConcurrentWriteConflict(instant, other, overlap & set(touched))
