"""Optimistic concurrency control between writers: the commit-time conflict check (docs/protocol.md section 7).

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
* **Bucket index** (``by_bucket``): the Flink sink with the bucket index resolves conflicts with
  ``BucketIndexConcurrentFileWritesConflictResolutionStrategy`` (``OptionsResolver#
  getConflictResolutionStrategy``), which compares (partition, bucket id) instead of (partition,
  file id): two writers that each minted a new file id for one bucket (a random UUID prefix
  outside NBCC) wrote the same bucket, and only one may commit.
* **Compactions** (``resolveConflict``): a compaction never aborts a write that started after the
  compaction was scheduled, and for table version 8+ a MERGE_ON_READ table leaves completed
  compactions out of the candidates altogether: completion-time slicing puts a log that completes
  after the compaction's requested time into the slice the compaction opens, so nothing is lost.
  For table version 6, a compaction scheduled *after* the writer started conflicts (its log would
  land in the compacted slice and be lost). ``compaction_rule="always"`` is the naive variant that
  treats any overlapping completed compaction as a conflict (safe, but aborts writes for nothing).
* **The writer's own earlier instants** (``predecessors``). Hudi's candidates are relative to the
  write's transaction baseline, taken when the instant starts (``BaseHoodieWriteClient.preTxn``):
  ``lastCompletedTxnOwnerInstant`` (the latest completed commit then; table version 8+ takes the
  completed commits requested after it, ``getCandidateInstantsV8AndAbove``) plus
  ``pendingInflightAndRequestedInstants`` (pending then, completed since:
  ``TransactionUtils.getCompletedInstantsDuringCurrentWriteOperation``). A writer that commits
  one instant before starting the next (Spark, Flink's blocking coordinator) always has its own
  previous instant as the baseline, never as a candidate. Hudi 1.1's async Flink coordinator
  starts instant ``k+1`` (``startInstant`` -> ``preTxn``) while its own ``k`` is still pending,
  so the code as written makes ``k`` (pending at the baseline, completed since) a candidate of
  ``k+1``. The same false conflict is reported for restarts as apache/hudi#19024 (open: a
  restarted job's ``recommitInstant`` fails with ``HoodieWriteConflictException`` against "the
  job's own prior completed commits"; expected: "conflict resolution should only flag genuinely
  concurrent commits from other writers"); its PR #19023 re-establishes the baseline on
  recommit, and the review notes that a second pending instant of the same job still shows up
  as a candidate. What makes the job's own instants safe
  is the coordinator, not the baseline: it commits its instants serially in checkpoint order,
  and a key always goes to the same bucket and write task, whose flushes are ordered, so
  appending ``k+1``'s log after ``k``'s loses nothing (completion-time slicing orders them). The
  rule here: an instant the same writer committed before this one is not a candidate for the
  file groups this instant only *appended* to (log files). Where this instant rewrote a base
  file (copy-on-write merge) an own predecessor that completed after it started is a real lost
  update (the merge read the slice without it) and still conflicts; Hudi 1.1 avoids that case
  by keeping copy-on-write upserts on the blocking coordinator.

A conflict aborts the commit: Hudi throws ``HoodieWriteConflictException`` ("Cannot resolve
conflicts for overlapping writes") and leaves the instant pending. The Spark writer can redo the
whole write under a new instant (``hoodie.write.num.retries.on.conflict.failures``, HUDI-4631); the
Flink sink has no such retry: the throw fails the job (``NonThrownExecutor`` hands it to
``context.failJob``), the restarted job recommits the *same* instant, and while the commit that
conflicted stands it conflicts again (apache/hudi#19046's restart loop; a livelock the
``liveness`` invariant reports). :mod:`models.flink.coordinator` raises accordingly.

The check is a pure function of a timeline and the table's instant files; run it inside the commit's
lock hold (e.g. as the writer's pre-commit hook) so no instant can complete in between.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from models.format.commit_metadata import WriteStat
from models.format.compaction_plan import read_compaction_plan
from models.format.records import bucket_id_str
from models.table_errors import HoodieException
from models.timeline.active import Timeline
from models.timeline.instant import Instant, State

if TYPE_CHECKING:
    from models.view.table import HudiTable

FileGroupId = tuple[str, str]
"""(partition path, file id): a file group."""

CANDIDATE_ACTIONS = ("commit", "deltacommit", "replacecommit")
"""Completed actions that may conflict (a completed compaction is a ``commit``)."""
COMPACTION_RULES = ("hudi", "always")


class ConcurrentWriteConflict(HoodieException, RuntimeError):
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


def appended_file_groups(stats: Iterable[WriteStat]) -> set[FileGroupId]:
    """The file groups a set of write stats only appended log files to (no base file)."""
    stats = tuple(stats)
    logs = touched_file_groups(s for s in stats if s.is_log_write)
    return logs - touched_file_groups(s for s in stats if not s.is_log_write)


def conflict_keys(groups: Iterable[FileGroupId], by_bucket: bool) -> set[tuple[str, str]]:
    """What two writes are compared on: (partition, file id), or (partition, bucket id string)
    with the bucket index (``BucketIndexConcurrentFileWritesConflictResolutionStrategy
    #extractPartitionBucketId``: the file id's first 8 characters, whatever wrote it)."""
    if not by_bucket:
        return set(groups)
    return {(p, bucket_id_str(f)) for p, f in groups}


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


@dataclass(frozen=True)
class _Own:
    """The writer's own earlier instants (``predecessors``) and the file groups this instant
    only appended to (``appended``), where those do not conflict."""

    predecessors: Collection[str]
    appended: Collection[FileGroupId]


def find_conflicts(
    timeline: Timeline,
    table: HudiTable,
    instant: Instant,
    touched: set[FileGroupId],
    *,
    compaction_rule: str = "hudi",
    predecessors: Collection[str] = (),
    appended: Collection[FileGroupId] = (),
    by_bucket: bool = False,
) -> list[Instant]:
    """Completed instants that conflict with ``instant`` writing ``touched``, by completion time.

    ``timeline`` is the timeline seen at commit time (load it under the lock). ``predecessors``:
    requested times of the instants the same writer committed before this one; they do not
    conflict in the file groups of ``appended`` (those ``instant`` only appended logs to; see the
    module docstring). ``by_bucket``: compare buckets, not file ids (:func:`conflict_keys`).
    """
    own = _Own(predecessors, appended)
    found = _conflicts(timeline, table, instant, touched, compaction_rule, own, by_bucket)
    return [other for other, _ in found]


def _conflicts(
    timeline: Timeline,
    table: HudiTable,
    instant: Instant,
    touched: set[FileGroupId],
    compaction_rule: str,
    own: _Own,
    by_bucket: bool,
) -> list[tuple[Instant, set[FileGroupId]]]:
    """(conflicting instant, the file groups of ``touched`` it conflicts in), by completion
    time."""
    if compaction_rule not in COMPACTION_RULES:
        raise ValueError(
            f"unknown compaction_rule {compaction_rule!r}; allowed: {', '.join(COMPACTION_RULES)}"
        )
    wanted = conflict_keys(touched, by_bucket)
    rewritten = wanted - conflict_keys(own.appended, by_bucket)  # where an own one matters
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
        mine = rewritten if other.requested_time in own.predecessors else wanted
        overlap = conflict_keys(groups, by_bucket) & mine
        if overlap:
            conflicts.append(
                (other, {g for g in touched if conflict_keys([g], by_bucket) & overlap})
            )
    return conflicts


def ensure_no_conflict(
    timeline: Timeline,
    table: HudiTable,
    instant: Instant,
    touched: set[FileGroupId],
    *,
    compaction_rule: str = "hudi",
    predecessors: Collection[str] = (),
    appended: Collection[FileGroupId] = (),
    by_bucket: bool = False,
) -> None:
    """Raise :class:`ConcurrentWriteConflict` for the first conflicting instant, if any."""
    own = _Own(predecessors, appended)
    found = _conflicts(timeline, table, instant, touched, compaction_rule, own, by_bucket)
    if found:
        other, overlap = found[0]
        raise ConcurrentWriteConflict(instant, other, overlap)


def precommit_check(
    table: HudiTable, own: set[str] | None = None, *, by_bucket: bool = False
) -> Callable[[Instant, tuple[WriteStat, ...]], None]:
    """One write client's OCC check, run under the commit lock right before an instant completes
    (``BaseHoodieWriteClient.preCommit`` -> ``resolveWriteConflict``): raises
    :class:`ConcurrentWriteConflict`, else adds the instant to ``own``, the client's instants
    that passed the check before (its predecessors, see the module docstring). ``by_bucket``:
    the bucket index's strategy (:func:`conflict_keys`)."""
    mine = own if own is not None else set()

    def check(instant: Instant, stats: tuple[WriteStat, ...]) -> None:
        ensure_no_conflict(
            table.timeline(),
            table,
            instant,
            touched_file_groups(stats),
            predecessors=mine,
            appended=appended_file_groups(stats),
            by_bucket=by_bucket,
        )
        mine.add(instant.requested_time)

    return check
