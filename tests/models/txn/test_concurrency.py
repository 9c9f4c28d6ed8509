"""OCC conflict check at commit time: instants that completed after we started and touched the
same file groups conflict; disjoint ones and ones completed before we started do not."""

from __future__ import annotations

import pyarrow as pa
import pytest

from models.format.commit_metadata import CommitMetadata, write_commit_metadata
from models.format.properties import COPY_ON_WRITE, MERGE_ON_READ
from models.ports import FakeClock, FakeWorld, LocalLock, run
from models.storage import InMemoryStorage
from models.timeline.truetime import make_time_generator
from models.txn.concurrency import (
    ConcurrentWriteConflict,
    appended_file_groups,
    conflict_keys,
    ensure_no_conflict,
    find_conflicts,
    mutated_file_groups,
    touched_file_groups,
)
from models.write.table_init import create_table
from models.write.writer import TableWriter

START_MS = 1_767_225_600_000
FG_A = "aaaaaaaa-0000-4000-8000-000000000001-0"
FG_B = "bbbbbbbb-0000-4000-8000-000000000002-0"


def rows(ids, v):
    n = len(ids)
    return pa.table(
        {
            "id": pa.array(ids, pa.string()),
            "ts": pa.array([v] * n, pa.int64()),
            "part": pa.array(["1"] * n, pa.string()),
        }
    )


class Writers:
    """Several writers of one in-memory table, interleaved by hand."""

    def __init__(self, table_type=COPY_ON_WRITE):
        self.clock = FakeClock(FakeWorld(START_MS))
        generator = make_time_generator("truetime", clock=self.clock, lock=LocalLock())
        self.table = create_table(
            InMemoryStorage(),
            name="t",
            table_type=table_type,
            record_key_field="id",
            ordering_field="ts",
            partition_fields=("part",),
        )
        self.writer = TableWriter(self.table, generator)

    def start(self):
        return run(self.writer.start_commit(), self.clock)

    def write(self, instant, fg, ids=("a",)):
        if self.table.config.is_mor and instant.action == "deltacommit":
            return self.writer.append_log_file(instant, "p=1", fg, rows(list(ids), 1))
        return self.writer.write_base_file(instant, "p=1", fg, rows(list(ids), 1))

    def commit(self, instant, stats):
        return run(self.writer.commit(instant, stats), self.clock)

    def write_and_commit(self, fg):
        instant = self.start()
        return self.commit(instant, [self.write(instant, fg)])

    def conflicts(self, instant, stats, **kwargs):
        return find_conflicts(
            self.table.timeline(), self.table, instant, touched_file_groups(stats), **kwargs
        )

    def check(self, instant, stats):
        """The OCC check as a coordinator's pre-commit hook runs it."""
        ensure_no_conflict(self.table.timeline(), self.table, instant, touched_file_groups(stats))

    def commit_checked(self, instant, stats):
        return run(
            self.writer.commit(instant, stats, precommit=lambda: self.check(instant, stats)),
            self.clock,
        )


def test_overlapping_file_groups_conflict():
    w = Writers()
    ours = w.start()
    stats = [w.write(ours, FG_A)]
    theirs = w.write_and_commit(FG_A)  # started after us, completed before our commit
    assert w.conflicts(ours, stats) == [theirs]
    with pytest.raises(ConcurrentWriteConflict) as caught:
        ensure_no_conflict(w.table.timeline(), w.table, ours, touched_file_groups(stats))
    error = caught.value
    assert (error.instant, error.other, error.file_groups) == (ours, theirs, (("p=1", FG_A),))
    assert ours.requested_time in str(error) and theirs.requested_time in str(error)


def test_disjoint_file_groups_do_not_conflict():
    w = Writers()
    ours = w.start()
    stats = [w.write(ours, FG_A)]
    w.write_and_commit(FG_B)
    assert w.conflicts(ours, stats) == []
    ensure_no_conflict(w.table.timeline(), w.table, ours, touched_file_groups(stats))


def test_an_instant_completed_before_we_started_does_not_conflict():
    w = Writers()
    w.write_and_commit(FG_A)
    ours = w.start()
    assert w.conflicts(ours, [w.write(ours, FG_A)]) == []


def test_one_started_before_us_but_completed_after_does():
    """The rule is completion time, not requested time: an older writer that finishes while we
    write still invalidates what we read."""
    w = Writers()
    theirs = w.start()
    their_stats = [w.write(theirs, FG_A)]
    ours = w.start()
    stats = [w.write(ours, FG_A)]
    done = w.commit(theirs, their_stats)
    assert w.conflicts(ours, stats) == [done]


def test_all_conflicts_are_listed_in_completion_order_and_pending_ones_ignored():
    w = Writers()
    ours = w.start()
    stats = [w.write(ours, FG_A), w.write(ours, FG_B)]
    first = w.write_and_commit(FG_B)
    second = w.write_and_commit(FG_A)
    pending = w.start()
    w.write(pending, FG_A)  # not completed: no conflict yet
    assert w.conflicts(ours, stats) == [first, second]


def test_a_replacecommit_conflicts_through_the_file_groups_it_replaced():
    w = Writers()
    ours = w.start()
    stats = [w.write(ours, FG_A)]
    timeline = w.table.active_timeline
    replace = timeline.transition_to_inflight(
        timeline.create_requested(
            run(w.writer.time_generator.generate_time(), w.clock), "replacecommit"
        )
    )
    meta = CommitMetadata(
        partition_to_replace_file_ids={"p=1": (FG_A,)}, operation_type="INSERT_OVERWRITE"
    )
    done = run(
        timeline.complete(replace, write_commit_metadata(meta), w.writer.time_generator), w.clock
    )
    assert mutated_file_groups(w.table, done) == ({("p=1", FG_A)}, False)
    assert w.conflicts(ours, stats) == [done]


def test_compaction_rules():
    """Table version 8+: a compaction never aborts a write (the write's log lands in the slice the
    compaction opened); the naive ``always`` variant aborts it."""
    w = Writers(MERGE_ON_READ)
    c1 = w.start()
    w.commit(c1, [w.writer.write_base_file(c1, "p=1", FG_A, rows(["a"], 1))])
    ours = w.start()
    stats = [w.write(ours, FG_A)]
    compaction = run(w.writer.schedule_compaction(), w.clock)
    assert compaction is None  # nothing to compact yet: write a log first
    d1 = w.write_and_commit(FG_A)
    compaction = run(w.writer.schedule_compaction(), w.clock)
    done = run(w.writer.run_compaction(compaction), w.clock)
    groups, is_compaction = mutated_file_groups(w.table, done)
    assert is_compaction and groups == {("p=1", FG_A)}
    assert w.conflicts(ours, stats) == [d1]
    always = w.conflicts(ours, stats, compaction_rule="always")
    assert [i.requested_time for i in always] == [d1.requested_time, done.requested_time]
    with pytest.raises(ValueError, match="hudi, always"):
        w.conflicts(ours, stats, compaction_rule="never")


def test_touched_file_groups_skips_placeholder_stats():
    w = Writers()
    ours = w.start()
    stat = w.write(ours, FG_A)
    assert touched_file_groups([stat]) == {("p=1", FG_A)}
    assert touched_file_groups([]) == set()


# --- the writer's own instants (apache/hudi#19024) -------------------------------------------


def test_an_own_predecessor_that_appended_logs_is_not_a_concurrent_writer():
    """Async Flink: instant k+1 starts while the job's own k is pending; k commits first (the
    coordinator commits in checkpoint order), after k+1 started. Both appended logs to FG_A:
    for k+1 that is its predecessor, not a concurrent writer; for anyone else it conflicts."""
    w = Writers(MERGE_ON_READ)
    k = w.start()
    k_stats = [w.write(k, FG_A)]
    ours = w.start()
    stats = [w.write(ours, FG_A, ids=("b",))]
    done = w.commit(k, k_stats)
    assert appended_file_groups(stats) == {("p=1", FG_A)}
    own = {"predecessors": {k.requested_time}, "appended": appended_file_groups(stats)}
    assert w.conflicts(ours, stats, **own) == []
    ensure_no_conflict(w.table.timeline(), w.table, ours, touched_file_groups(stats), **own)
    assert w.conflicts(ours, stats) == [done]  # the same commit by another writer


def test_an_own_predecessor_still_conflicts_where_we_rewrote_a_base_file():
    """Copy-on-write: k+1 merged FG_A's committed slice while k was pending, so k's updates are
    not in k+1's base file: a real lost update, whoever wrote k."""
    w = Writers(COPY_ON_WRITE)
    w.write_and_commit(FG_A)
    k = w.start()
    k_stats = [w.writer.upsert_base_file(k, "p=1", FG_A, rows(["a"], 2))]
    ours = w.start()
    stats = [w.writer.upsert_base_file(ours, "p=1", FG_A, rows(["b"], 3))]
    done = w.commit(k, k_stats)
    assert appended_file_groups(stats) == set()
    own = {"predecessors": {k.requested_time}, "appended": appended_file_groups(stats)}
    assert w.conflicts(ours, stats, **own) == [done]


def test_a_foreign_commit_between_own_instants_still_conflicts():
    """Two jobs on one file group: the other job's commit aborts ours, our own earlier instant
    does not; the error names only the file groups of the real conflict."""
    w = Writers(MERGE_ON_READ)
    k = w.start()
    k_stats = [w.write(k, FG_A), w.write(k, FG_B)]
    ours = w.start()
    stats = [w.write(ours, FG_A), w.write(ours, FG_B)]
    w.commit(k, k_stats)
    theirs = w.start()
    their_done = w.commit(theirs, [w.write(theirs, FG_B)])
    own = {"predecessors": {k.requested_time}, "appended": appended_file_groups(stats)}
    assert w.conflicts(ours, stats, **own) == [their_done]
    with pytest.raises(ConcurrentWriteConflict) as caught:
        ensure_no_conflict(w.table.timeline(), w.table, ours, touched_file_groups(stats), **own)
    assert caught.value.other == their_done
    assert caught.value.file_groups == (("p=1", FG_B),)


BUCKET_3_OURS = "00000003-1111-4000-8000-000000000001-0"
BUCKET_3_THEIRS = "00000003-2222-4000-8000-000000000002-0"
BUCKET_4 = "00000004-2222-4000-8000-000000000003-0"


def test_with_the_bucket_index_two_file_ids_of_one_bucket_conflict():
    """HUDI-5682 (BucketIndexConcurrentFileWritesConflictResolutionStrategy): two writers each
    minted a file id for bucket 3; by file id they are disjoint, by bucket they conflict."""
    w = Writers()
    ours = w.start()
    stats = [w.write(ours, BUCKET_3_OURS)]
    theirs = w.write_and_commit(BUCKET_3_THEIRS)
    assert w.conflicts(ours, stats) == []
    assert w.conflicts(ours, stats, by_bucket=True) == [theirs]
    with pytest.raises(ConcurrentWriteConflict) as caught:
        ensure_no_conflict(
            w.table.timeline(), w.table, ours, touched_file_groups(stats), by_bucket=True
        )
    assert caught.value.file_groups == (("p=1", BUCKET_3_OURS),)  # ours, named in the error


def test_with_the_bucket_index_other_buckets_do_not_conflict():
    w = Writers()
    ours = w.start()
    stats = [w.write(ours, BUCKET_3_OURS)]
    w.write_and_commit(BUCKET_4)
    assert w.conflicts(ours, stats, by_bucket=True) == []


def test_conflict_keys_are_partition_and_bucket_with_the_bucket_index():
    groups = {("p=1", BUCKET_3_OURS), ("p=1", BUCKET_3_THEIRS), ("p=2", BUCKET_3_OURS)}
    assert conflict_keys(groups, by_bucket=False) == groups
    assert conflict_keys(groups, by_bucket=True) == {("p=1", "00000003"), ("p=2", "00000003")}


def test_conflict_keys_take_any_file_ids_first_8_characters():
    """An append-mode file group (a UUID prefix) is compared on its prefix, never parsed."""
    groups = {("p=1", "3fa2c9e1-0000-4000-8000-000000000000-0")}
    assert conflict_keys(groups, by_bucket=True) == {("p=1", "3fa2c9e1")}
