"""OCC conflict check at commit time: instants that completed after we started and touched the
same file groups conflict; disjoint ones and ones completed before we started do not."""

from __future__ import annotations

import pyarrow as pa
import pytest

from models.commit_metadata import CommitMetadata, write_commit_metadata
from models.concurrency import (
    ConcurrentWriteConflict,
    ensure_no_conflict,
    find_conflicts,
    mutated_file_groups,
    touched_file_groups,
)
from models.ports import FakeClock, FakeWorld, LocalLock, run
from models.properties import COPY_ON_WRITE, MERGE_ON_READ
from models.storage import InMemoryStorage
from models.truetime import make_time_generator
from models.writer import TableWriter, create_table

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
