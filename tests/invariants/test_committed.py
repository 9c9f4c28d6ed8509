"""Tests for invariants/committed.py: the checkers' own reading of a table (instants, listed files,
rows) and its cache.

:class:`SimTable` builds small tables in the simulator's shape (records of
:class:`models.format.records.RecordSource`, one bucket per partition, parquet log blocks) through the
real writer, together with the history a run would record for them (setup, emits, completed
checkpoints, commit events); the checker tests of this package use it too.
"""

from __future__ import annotations

import dataclasses
import gc
import weakref
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from invariants.committed import load_committed
from invariants.committed_rows import DELETED, KEY, TIME
from invariants.ledger import build_ledger
from invariants.merging import CommitTimeMerge, merged_at
from invariants.time_travel import travel_points
from models.flink.write_files import bucket_file_id
from models.format.commit_metadata import WriteStat
from models.format.properties import COPY_ON_WRITE, MERGE_ON_READ
from models.format.records import SCHEMA, partition_path
from models.ports import FakeClock, FakeWorld, LocalLock, run
from models.storage import InMemoryStorage
from models.timeline.instant import Instant
from models.timeline.truetime import make_time_generator
from models.view.table import HudiTable
from models.write.table_init import create_table
from models.write.writer import TableWriter
from tests.invariants.test_ledger import History, source

START_MS = 1_767_225_600_000


class SimTable:
    """A table written like the simulator writes it, and the history of a run that wrote it.

    ``write`` flushes records of job 0 into one instant (a log per partition on MERGE_ON_READ, a
    base file per partition otherwise) and commits it unless told not to; each completed commit
    is recorded as the coordinator's ``commit`` event."""

    def __init__(
        self,
        *,
        table_type: str = MERGE_ON_READ,
        operation: str = "upsert",
        merge_mode: str | None = None,
        key_space: int = 30,
        protocol: dict[str, Any] | None = None,
    ) -> None:
        self.storage = InMemoryStorage()
        self.table = create_table(
            self.storage,
            name="t",
            table_type=table_type,
            record_key_field="key",
            ordering_field="ts",
            partition_fields=("part",),
            merge_mode=merge_mode,
        )
        self.clock = FakeClock(FakeWorld(START_MS))
        generator = make_time_generator("truetime", clock=self.clock, lock=LocalLock())
        self.writer = TableWriter(
            self.table, generator, data_schema=SCHEMA, log_block_format="parquet"
        )
        self.operation = operation
        self.history = History()
        self.history.setup(
            source(0, operation=operation, key_space=key_space),
            merge_mode=merge_mode or "EVENT_TIME_ORDERING",
        )
        if protocol:
            self.history.events[0].value["protocol"].update(protocol)
        self.source = build_ledger(self.history.events).jobs[0].source

    @property
    def events(self) -> list:
        return self.history.events

    def records(self, start: int, stop: int) -> pa.Table:
        return self.source.batch(start, stop)

    def checkpoint(self, offset: int, checkpoint: int = 1) -> None:
        """The source emitted ``[0, offset)`` and a completed checkpoint covered it."""
        self.history.emit("job0", 0, offset)
        self.history.checkpoint("job0", checkpoint, offset)

    def start(self) -> Instant:
        return run(self.writer.start_commit(), self.clock)

    def files(self, instant: Instant, rows: pa.Table, *, task: int = 0) -> list[WriteStat]:
        """Write ``rows`` into ``instant`` as the simulator's layout does."""
        stats = []
        parts = rows.column("part")
        for part in sorted(set(parts.to_pylist())):
            chunk = rows.filter(pc.equal(parts, part))
            file_id = bucket_file_id(int(part[1:]), 0)
            if self.operation == "insert":
                file_id = f"{instant.requested_time}-{task}-{part}"
            path = partition_path(part)
            if self.table.config.is_mor and self.operation == "upsert":
                stats.append(
                    self.writer.append_log_file(instant, path, file_id, chunk, task_id=task)
                )
            elif self.operation == "upsert":
                stats.append(
                    self.writer.upsert_base_file(instant, path, file_id, chunk, task_id=task)
                )
            else:
                stats.append(
                    self.writer.write_base_file(instant, path, file_id, chunk, task_id=task)
                )
        return stats

    def commit(self, instant: Instant, stats: list[WriteStat]) -> Instant:
        op = "INSERT" if self.operation == "insert" else "UPSERT"
        done = run(self.writer.commit(instant, stats, op), self.clock)
        self.history.add(
            "job0/coordinator",
            "ok",
            "commit",
            {"instant": done.requested_time, "completion": done.completion_time},
        )
        return done

    def write(self, rows: pa.Table, *, commit: bool = True) -> Instant:
        instant = self.start()
        stats = self.files(instant, rows)
        return self.commit(instant, stats) if commit else instant

    def compact(self) -> Instant:
        scheduled = run(self.writer.schedule_compaction(), self.clock)
        assert scheduled is not None, "nothing to compact"
        self.history.add(
            "job0/coordinator", "ok", "schedule_compaction", {"instant": scheduled.requested_time}
        )
        done = run(self.writer.run_compaction(scheduled), self.clock)
        self.history.add(
            "job0/compactor",
            "ok",
            "compaction",
            {"instant": done.requested_time, "completion": done.completion_time},
        )
        return done

    def event_of(self, instant: Instant, f: str = "commit") -> int:
        return next(
            e.index
            for e in self.events
            if e.f == f and e.type == "ok" and e.value.get("instant") == instant.requested_time
        )


# --- instants, files, rows -------------------------------------------------------------------


def test_completed_writes_list_their_files_and_own_rows():
    t = SimTable()
    first = t.write(t.records(0, 40))
    second = t.write(t.records(40, 80))
    pending = t.write(t.records(80, 90), commit=False)
    committed = load_committed(t.table)
    writes = committed.writes()
    assert [w.requested for w in writes] == [first.requested_time, second.requested_time]
    assert [w.completion for w in writes] == [first.completion_time, second.completion_time]
    assert committed.get(pending.requested_time).completion is None
    # the pending instant's logs exist but no completed instant lists them
    named = [p for p, f in committed.files.items() if f.instant == pending.requested_time]
    assert named and not any(p in committed.listed_by for p in named)
    rows = committed.rows
    assert rows.table.num_rows == 80
    assert sorted(rows.table.column("offset").to_pylist()) == list(range(80))
    assert set(rows.table.column(TIME).to_pylist()) == {
        first.requested_time,
        second.requested_time,
    }
    # merge order: the first commit's rows before the second's
    times = rows.completion
    assert (np.diff(times) >= 0).all()
    assert not committed.missing


def test_a_compaction_is_no_write_and_adds_no_rows():
    t = SimTable()
    t.write(t.records(0, 40))
    compaction = t.compact()
    t.write(t.records(40, 60))
    committed = load_committed(t.table)
    (c,) = committed.compactions()
    assert c.requested == compaction.requested_time and c.completed and not c.is_write
    assert c.plan is not None and len(c.plan.operations) == 2
    assert {f.is_log for f in c.files} == {False}
    assert committed.rows.table.num_rows == 60  # the compacted copies are not counted again
    assert [i.requested for i in committed.completed()][1] == compaction.requested_time


def test_a_listed_file_missing_from_storage_is_reported():
    t = SimTable()
    done = t.write(t.records(0, 20))
    committed = load_committed(t.table)
    path = committed.writes()[0].files[0].path
    t.storage.delete(path)
    again = load_committed(t.table)
    assert again is not committed  # the storage changed: read again
    assert again.missing == ((path, done.requested_time),)
    assert again.rows.table.num_rows < 20


def test_the_reading_is_cached_per_table_state():
    t = SimTable()
    t.write(t.records(0, 20))
    assert load_committed(t.table) is load_committed(t.table)
    before = load_committed(t.table)
    t.write(t.records(20, 30))
    assert load_committed(t.table) is not before
    assert load_committed(t.table).rows.table.num_rows == 30


def test_the_cache_keeps_neither_a_reading_nor_its_table_alive():
    """Regression: the cache was a WeakKeyDictionary whose values (the readings) held their
    table key strongly, so no table it had ever read was freed (``testbed explore`` grew by
    about 25 MB per checked run)."""
    t = SimTable()
    t.write(t.records(0, 20))
    table = HudiTable(t.storage)
    committed = load_committed(table)
    assert load_committed(table) is committed  # shared while someone holds it
    other = load_committed(HudiTable(t.storage))
    assert other is not committed and other.table is not table  # per table object
    reading, table_ref = weakref.ref(committed), weakref.ref(table)
    del committed, other, table
    gc.collect()
    assert reading() is None and table_ref() is None


@pytest.mark.parametrize("operation", ["upsert", "insert"])
def test_insert_only_is_read_from_the_commits(operation):
    t = SimTable(operation=operation, table_type=COPY_ON_WRITE)
    t.write(t.records(0, 10))
    assert load_committed(t.table).insert_only is (operation == "insert")


def test_a_table_without_commits_has_no_rows_and_no_points():
    t = SimTable()
    committed = load_committed(HudiTable(t.storage))
    assert committed.rows.table.num_rows == 0
    assert travel_points(committed) == []
    assert committed.latest_completion is None


NEW_BEFORE = "00000000-0000-4000-8000-000000000000-0"
NEW_AFTER = "ffffffff-0000-4000-8000-000000000000-0"
"""File ids of a new file group that sort before and after ``bucket_file_id(1, 0)``."""


def p1_rows(t: SimTable, start: int, stop: int) -> pa.Table:
    rows = t.records(start, stop)
    return rows.filter(pc.equal(rows.column("part"), "p1"))


def delete_keys(keys: list[str], ordering: int) -> pa.Table:
    return pa.table(
        {
            "record_key": pa.array(keys, pa.string()),
            "partition_path": pa.array(["part=p1"] * len(keys), pa.string()),
            "ordering_value": pa.array([ordering] * len(keys), pa.int64()),
        }
    )


def test_keys_a_copy_on_write_merge_deleted_are_read_as_tombstones_at_its_commit():
    """A base file written with ``numDeletes`` = n that lacks n keys of its file group's
    previous base file: those keys get a tombstone at its commit, ranked just above the removed
    version; a file lacking more keys than its count is left as it is (keys lost, not deleted)."""
    t = SimTable(table_type=COPY_ON_WRITE)
    rows = p1_rows(t, 0, 40)
    keys = sorted(set(rows.column("key").to_pylist()))
    t.write(rows)
    file_id, path = bucket_file_id(1, 0), partition_path("p1")
    instant = t.start()
    stat = t.writer.upsert_base_file(
        instant, path, file_id, rows.slice(0, 0), delete_keys=delete_keys(keys[:1], 10**12)
    )
    assert stat.num_deletes == 1
    deleted = t.commit(instant, [stat])
    table = load_committed(t.table).rows.table
    gone = table.filter(table.column(DELETED))
    assert gone.column(KEY).to_pylist() == keys[:1]
    assert gone.column(TIME).to_pylist() == [deleted.requested_time]
    instant = t.start()
    kept = rows.filter(pc.invert(pc.is_in(rows.column("key"), pa.array(keys[:3]))))
    lossy = t.writer.write_base_file(instant, path, file_id, kept)
    t.commit(instant, [dataclasses.replace(lossy, num_deletes=1)])
    table = load_committed(t.table).rows.table
    assert table.filter(table.column(DELETED)).column(KEY).to_pylist() == keys[:1]


@pytest.mark.parametrize("new_file_id", [NEW_BEFORE, NEW_AFTER])
def test_a_tombstone_never_beats_the_same_commits_version_in_another_file_group(new_file_id):
    """The global index moves a key within its partition's file groups in one commit: a
    copy-on-write merge leaves it out of one file group (a tombstone) and a write puts it into
    another. The tombstone removes the old file group's version only, so under
    COMMIT_TIME_ORDERING the same commit's new version stays live, whatever the files' order."""
    t = SimTable(table_type=COPY_ON_WRITE, merge_mode="COMMIT_TIME_ORDERING")
    rows = p1_rows(t, 0, 40)
    key = sorted(set(rows.column("key").to_pylist()))[0]
    t.write(rows)
    path = partition_path("p1")
    instant = t.start()
    removed = t.writer.upsert_base_file(
        instant, path, bucket_file_id(1, 0), rows.slice(0, 0), delete_keys=delete_keys([key], 0)
    )
    moved = rows.filter(pc.equal(rows.column("key"), key)).slice(0, 1)
    written = t.writer.write_base_file(instant, path, new_file_id, moved)
    t.commit(instant, [removed, written])
    rows_ = load_committed(t.table).rows
    live = merged_at(rows_, CommitTimeMerge(), None, by_file_group=False)
    assert live.filter(pc.equal(live.column(KEY), key)).num_rows == 1
