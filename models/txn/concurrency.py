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

A conflict aborts the commit: Hudi throws ``HoodieWriteConflictException`` and leaves the instant
pending for the failed-writes cleaner (``rollbackFailedWrites``: ``EAGER`` at the next start,
``LAZY`` once its heartbeat expired); the Spark writer can then redo the whole write under a new
instant (``hoodie.write.num.retries.on.conflict.failures``, HUDI-4631). A Flink job cannot redo
it from its source: a conflict is found at commit time, after the checkpoint that covers the data
completed, so the source will not replay it. :func:`retry_write` is that retry for a
checkpointed write: it re-writes what the aborted instant wrote under a new instant, whose
requested time is after the conflicting commit (so that commit no longer conflicts), commits it
and rolls the aborted instant back; :func:`superseded_by` lets a restarted writer find such a
retry instead of committing the aborted instant again.

The check is a pure function of a timeline and the table's instant files; run it inside the commit's
lock hold (e.g. as the writer's pre-commit hook) so no instant can complete in between.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Collection, Iterable
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from models.format.commit_metadata import WriteStat
from models.format.compaction_plan import read_compaction_plan
from models.format.log_blocks import DataBlock, DeleteBlock
from models.format.log_reader import read_log_blocks
from models.ports import Steps
from models.timeline.active import Timeline
from models.timeline.instant import Instant, State
from models.view.filenames import parse_base_file_name, parse_log_file_name
from models.view.reader import COMMIT_TIME
from models.write.rollback import rollback
from models.write.write_handles import META_COLUMNS
from models.write.writer import TableWriter

if TYPE_CHECKING:
    from models.view.table import HudiTable

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


def appended_file_groups(stats: Iterable[WriteStat]) -> set[FileGroupId]:
    """The file groups a set of write stats only appended log files to (no base file)."""
    stats = tuple(stats)
    logs = touched_file_groups(s for s in stats if s.is_log_write)
    return logs - touched_file_groups(s for s in stats if not s.is_log_write)


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
    predecessors: Collection[str] = (),
    appended: Collection[FileGroupId] = (),
) -> list[Instant]:
    """Completed instants that conflict with ``instant`` writing ``touched``, by completion time.

    ``timeline`` is the timeline seen at commit time (load it under the lock). ``predecessors``:
    requested times of the instants the same writer committed before this one; they do not
    conflict in the file groups of ``appended`` (those ``instant`` only appended logs to; see the
    module docstring).
    """
    return [
        other
        for other, _ in _conflicts(
            timeline, table, instant, touched, compaction_rule, predecessors, appended
        )
    ]


def _conflicts(
    timeline: Timeline,
    table: HudiTable,
    instant: Instant,
    touched: set[FileGroupId],
    compaction_rule: str,
    predecessors: Collection[str],
    appended: Collection[FileGroupId],
) -> list[tuple[Instant, set[FileGroupId]]]:
    """(conflicting instant, the file groups it conflicts in), by completion time."""
    if compaction_rule not in COMPACTION_RULES:
        raise ValueError(
            f"unknown compaction_rule {compaction_rule!r}; allowed: {', '.join(COMPACTION_RULES)}"
        )
    wanted = set(touched)
    own = set(predecessors)
    rewritten = wanted - set(appended)  # where an own predecessor still matters
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
        overlap = groups & (rewritten if other.requested_time in own else wanted)
        if overlap:
            conflicts.append((other, overlap))
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
) -> None:
    """Raise :class:`ConcurrentWriteConflict` for the first conflicting instant, if any."""
    found = _conflicts(timeline, table, instant, touched, compaction_rule, predecessors, appended)
    if found:
        other, overlap = found[0]
        raise ConcurrentWriteConflict(instant, other, overlap)


# --- retrying an aborted write under a new instant ---------------------------------------------

RETRY_OF = "testbed.occ.retryOf"
"""``extraMetadata`` key of a commit that re-wrote an instant aborted by a conflict: the aborted
instant's requested time (a testbed key; Hudi's Spark retry starts over from its input instead)."""


def retry_write(
    writer: TableWriter,
    aborted: Instant,
    stats: Iterable[WriteStat],
    *,
    precommit: Callable[[Instant, tuple[WriteStat, ...]], None] | None = None,
    operation_type: str = "UPSERT",
    on_start: Callable[[Instant], None] | None = None,
) -> Steps[tuple[Instant, tuple[WriteStat, ...]]]:
    """Redo the write of ``aborted`` (its ``stats``) under a new instant, commit it, then roll
    ``aborted`` back; returns the completed instant and its write stats.

    The order is what keeps a crash at any step harmless: until the new commit completes,
    ``aborted`` and its files are untouched (a retry after a restart starts over; the half-written
    new instant is a failed write that cleaning rolls back); the new commit names ``aborted``
    under :data:`RETRY_OF`, so once it completed :func:`superseded_by` tells a restarted writer
    not to commit ``aborted`` again, only to roll it back. ``precommit(instant, stats)`` is the
    conflict check of the new commit (the instant that conflicted completed before the new one
    started, so only a newer commit can conflict again). ``on_start(instant)`` runs as soon as
    the new instant exists (start its heartbeat, as Hudi's ``startCommit`` does for ``LAZY``
    cleaning: an instant without one looks failed)."""
    new, new_stats = yield from rewrite_write(writer, aborted, stats, on_start=on_start)
    hook = None
    if precommit is not None:
        check = precommit

        def hook() -> None:
            check(new, new_stats)

    done = yield from writer.commit(
        new,
        new_stats,
        operation_type,
        precommit=hook,
        extra_metadata={RETRY_OF: aborted.requested_time},
    )
    yield from rollback(writer.table, writer, aborted, writer.time_generator)
    return done, new_stats


def rewrite_write(
    writer: TableWriter,
    aborted: Instant,
    stats: Iterable[WriteStat],
    *,
    on_start: Callable[[Instant], None] | None = None,
) -> Steps[tuple[Instant, tuple[WriteStat, ...]]]:
    """Start a new instant and write into it what ``aborted`` wrote: its own rows only.

    A log file of ``aborted`` holds only its blocks: they are appended again (data and deletes)
    as a log file named with the new instant. A base file may also carry rows a copy-on-write
    merge kept from older commits (their ``_hoodie_commit_time`` is older): only the rows of
    ``aborted`` are taken and merged again onto the file group's latest committed slice as it is
    *now*, with the commit that conflicted in it (even where ``aborted`` found no slice and
    created the file group: the conflicting commit may have created it meanwhile); with no slice
    at all they form a new base file under the same file id. Returns the new inflight instant and
    the stats of its files. Column-wise throughout: one read per file."""
    new = yield from writer.start_commit(aborted.action)
    if on_start is not None:
        on_start(new)
    time = aborted.requested_time
    out: list[WriteStat] = []
    for stat in sorted(stats, key=_file_order):
        data = writer.storage.read(stat.path)
        if stat.is_log_write:
            token = parse_log_file_name(stat.file_name).write_token
            records, deletes = _own_log_rows(data, time)
            if records is None and deletes is None:
                continue
            out.append(
                writer.append_log_file(
                    new,
                    stat.partition_path,
                    stat.file_id,
                    records,
                    delete_keys=deletes,
                    task_id=token.task_partition_id if token else 0,
                )
            )
            continue
        task = parse_base_file_name(stat.file_name).write_token.task_partition_id
        rows = pq.read_table(io.BytesIO(data))
        rows = rows.filter(pc.equal(rows.column(COMMIT_TIME), time))
        rows = rows.drop_columns([c for c in META_COLUMNS if c in rows.column_names])
        out.append(
            writer.upsert_base_file(new, stat.partition_path, stat.file_id, rows, task_id=task)
        )
    return new, tuple(out)


def superseded_by(table: HudiTable, instant_time: str) -> Instant | None:
    """The completed commit that re-wrote the aborted ``instant_time`` (:func:`retry_write`),
    None if there is none. Only commits completed after ``instant_time`` was requested can be."""
    for other in table.timeline().by_completion_time():
        if other.action not in CANDIDATE_ACTIONS or (other.completion_time or "") <= instant_time:
            continue
        if table.commit_metadata(other).extra_metadata.get(RETRY_OF) == instant_time:
            return other
    return None


def _file_order(stat: WriteStat) -> tuple[str, str, int, str]:
    """Write stats in the order their files were written: log versions ascending."""
    version = parse_log_file_name(stat.file_name).version if stat.is_log_write else 0
    return (stat.partition_path, stat.file_id, version, stat.path)


def _own_log_rows(data: bytes, instant_time: str) -> tuple[pa.Table | None, pa.Table | None]:
    """The data rows and delete keys that ``instant_time`` wrote into one log file."""
    records, deletes = [], []
    for block in read_log_blocks(data):
        if block.instant_time != instant_time:
            continue
        if isinstance(block, DataBlock) and block.records.num_rows:
            records.append(block.records)
        elif isinstance(block, DeleteBlock) and block.keys.num_rows:
            deletes.append(block.keys)
    return (
        pa.concat_tables(records) if records else None,
        pa.concat_tables(deletes) if deletes else None,
    )
