"""The write task (models/flink/write_task.py): buffering, precombine against a brute-force reference,
routing, the state it snapshots and restores, and the files one flush writes."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.flink.precombine import precombine
from models.flink.write_buffer import BufferOptions, binary_row_sizes_bytes
from models.flink.write_events import BootstrapEvent, WriteMetadataEvent
from models.flink.write_files import (
    FileLayout,
    bucket_file_id,
    insert_file_id,
    route,
    write_records,
)
from models.flink.write_task import TaskState, WriteTask, redistribute
from models.format.commit_metadata import WriteStat
from models.format.properties import (
    COPY_ON_WRITE,
    EVENT_TIME_ORDERING,
    MERGE_ON_READ,
)
from models.format.records import SCHEMA, RecordSource, bucket_ids
from models.ports import FakeClock, FakeWorld, LocalLock, run
from models.storage import InMemoryStorage
from models.timeline.truetime import make_time_generator
from models.view.reader import read_snapshot
from models.write.table_init import create_table
from models.write.writer import TableWriter

I1, I2 = "20260101000000100", "20260101000000200"


def upserts(start: int = 0, n: int = 100, **kw) -> pa.Table:
    args = dict(seed=5, job_index=0, key_space=30, partitions=3, records_per_s=1000.0)
    args.update(kw)
    return RecordSource(**args).batch(start, start + n)


def stat(name: str) -> WriteStat:
    return WriteStat(file_id=f"fg-{name}", path=f"part=p0/{name}", partition_path="part=p0")


# --- buffer --------------------------------------------------------------------------------------


def test_a_full_bucket_is_flushed_alone_pre_combined():
    """Buckets are file groups; the cap of older scenarios flushes the largest one, and what
    leaves is pre-combined; the barrier takes the rest."""
    task = WriteTask(0, buffer_records=10, buckets_per_partition=2)
    assert task.add(upserts(0, 4)) == []
    assert task.add(upserts(4, 0)) == []  # an empty batch changes nothing
    assert task.buffered_rows == 4
    flushed = task.add(upserts(4, 9))
    assert len(flushed) >= 1 and all(t.schema == SCHEMA for t in flushed)
    for rows in flushed:
        groups = {
            (p, b)
            for p, b in zip(
                rows.column("part").to_pylist(),
                bucket_ids(rows.column("key"), 2).tolist(),
                strict=True,
            )
        }
        assert len(groups) == 1  # one file group per eager flush
        assert rows.equals(precombine(rows, EVENT_TIME_ORDERING))
    assert task.buffered_rows + sum(t.num_rows for t in flushed) >= 13 - 9  # precombined
    assert sum(task.bucket_records().values()) == task.buffered_rows <= 10
    out = task.take_buffer()
    assert task.buffered_rows == 0 and task.take_buffer() is None
    assert out is not None and out.schema == SCHEMA


def test_write_batch_size_flushes_a_bucket_by_bytes():
    rows = upserts(0, 100, partitions=1)
    row_bytes = set(binary_row_sizes_bytes(rows).tolist())
    assert len(row_bytes) == 1  # equal keys' lengths: one size
    options = BufferOptions(write_batch_size_mb=20 * row_bytes.pop() / (1024 * 1024))
    task = WriteTask(0, buffer_options=options, buckets_per_partition=1, pre_combine=False)
    flushed = task.add(rows)
    assert [t.num_rows for t in flushed] == [21] * 4  # each flush past 20 rows' bytes
    assert task.buffered_rows == 16


def test_take_buffer_precombines_upserts_only():
    rows = upserts(0, 200, key_space=10)
    up = WriteTask(0, buffer_records=1000)
    up.add(rows.slice(0, 120))
    up.add(rows.slice(120))
    out = up.take_buffer()
    assert out is not None
    assert sorted(out.column("key").to_pylist()) == sorted(set(rows.column("key").to_pylist()))
    by_key = [("key", "ascending")]
    assert out.sort_by(by_key).equals(precombine(rows, EVENT_TIME_ORDERING).sort_by(by_key))

    ins = WriteTask(0, buffer_records=1000, operation="insert")
    dup = pa.concat_tables([rows, rows])  # inserts are never deduplicated
    ins.add(dup)
    by_offset = [("offset", "ascending")]
    assert ins.take_buffer().sort_by(by_offset).equals(dup.sort_by(by_offset))


# --- route ---------------------------------------------------------------------------------------


@settings(max_examples=30)
@given(st.integers(1, 6), st.integers(1, 5), st.integers(0, 1000), st.integers(0, 300))
def test_route_upsert_partitions_rows_by_file_group(parallelism, buckets, start, n):
    rows = upserts(start, n, partitions=4)
    out = route(rows, buckets, parallelism)
    assert len(out) == parallelism
    assert sum(t.num_rows for t in out) == rows.num_rows
    offsets = sorted(o for t in out for o in t.column("offset").to_pylist())
    assert offsets == rows.column("offset").to_pylist()  # every row exactly once
    owner: dict[tuple[str, int], int] = {}
    for task, t in enumerate(out):
        assert t.schema == SCHEMA
        if t.num_rows == 0:
            continue
        groups = zip(
            t.column("part").to_pylist(), bucket_ids(t.column("key"), buckets).tolist(), strict=True
        )
        for group in groups:
            assert owner.setdefault(group, task) == task  # one task owns each (partition, bucket)


def test_route_is_stable_across_batches():
    a = route(upserts(0, 300), 2, 3)
    b = route(upserts(300, 300), 2, 3)
    keys_a = [set(t.column("key").to_pylist()) for t in a]
    keys_b = [set(t.column("key").to_pylist()) for t in b]
    for i in range(3):
        for j in range(3):
            if i != j:
                assert not (keys_a[i] & keys_b[j])


def test_route_insert_spreads_by_offset():
    rows = RecordSource(1, 0, 10, 2, 1000.0, operation="insert").batch(10, 110)
    out = route(rows, 4, 3)
    assert sum(t.num_rows for t in out) == 100
    for task, t in enumerate(out):
        assert all(o % 3 == task for o in t.column("offset").to_pylist())


def test_route_empty_and_leading_empty_chunk():
    out = route(upserts(0, 0), 2, 3)
    assert [t.num_rows for t in out] == [0, 0, 0]
    rows = pa.concat_tables([upserts(0, 0), upserts(0, 50)])  # first chunk empty
    out = route(rows, 2, 3)
    assert sum(t.num_rows for t in out) == 50


# --- state ---------------------------------------------------------------------------------------


def test_snapshot_state_merges_per_instant():
    task = WriteTask(2, buffer_records=10)
    e1 = WriteMetadataEvent(2, I1, -1, [stat("a")], False, 3)
    e2 = WriteMetadataEvent(2, I1, -1, [stat("b")], True, 4)
    e3 = WriteMetadataEvent(2, I2, -1, [stat("c")], True, 1)
    empty = WriteMetadataEvent(2, None, -1, (), True)
    for e in (e1, empty, e2, e3):
        task.event_sent(e)
    state = task.snapshot_state(4)
    assert state == TaskState(2, 4, (e1.merge(e2), e3))
    assert state.events[0].write_stats == (stat("a"), stat("b"))
    assert state.events[0].records == 7 and state.events[0].last_batch
    assert task.last_checkpoint_id == 4
    # the next checkpoint's state holds only what was sent since
    assert task.snapshot_state(5) == TaskState(2, 5, ())
    assert task.last_checkpoint_id == 5


def never_completed(instant: str) -> bool:
    return True


def test_restore_at_attempt_0_resends_the_pending_restored_events():
    """``sendBootstrapEvent`` at attempt 0 (Hudi 1.1): the restored events whose instants are
    pending, flagged bootstrap, not last batches; the restored id becomes the task's."""
    task = WriteTask(1, buffer_records=10)
    e = WriteMetadataEvent(1, I1, 6, [stat("a")], True, 3)
    task.event_sent(e)
    state = task.snapshot_state(7)

    fresh = WriteTask(1, buffer_records=10)
    fresh.add(upserts(0, 5))
    fresh.event_sent(WriteMetadataEvent(1, I2, 8, [stat("z")]))
    boot = fresh.restore(state, attempt=0, pending=never_completed)
    resent = WriteMetadataEvent(1, I1, 6, (stat("a"),), False, 3, bootstrap=True)
    assert boot == BootstrapEvent(1, 7, (resent,))
    assert fresh.last_checkpoint_id == 7
    assert fresh.buffered_rows == 0 and fresh.take_buffer() is None
    # the pre-failure interval's events are gone: the next snapshot does not resend them
    assert fresh.snapshot_state(8).events == ()
    # a completed instant is not re-sent; a fresh start sends nothing
    assert fresh.restore(state, attempt=0, pending=lambda i: False) is None
    assert fresh.restore(None, attempt=0, pending=never_completed) is None
    assert fresh.last_checkpoint_id == -1


def test_restore_at_attempt_1_sends_an_empty_bootstrap_that_clears():
    task = WriteTask(1, buffer_records=10)
    task.event_sent(WriteMetadataEvent(1, I1, 6, [stat("a")], True, 3))
    state = task.snapshot_state(7)
    assert WriteTask(1, 10).restore(state, attempt=1, pending=never_completed) == BootstrapEvent(
        1, 7, (), clears=True
    )
    assert WriteTask(1, 10).restore(None, attempt=2, pending=never_completed) == BootstrapEvent(
        1, -1, (), clears=True
    )
    every = WriteTask(1, 10, restored_events_resend="every_attempt")
    boot = every.restore(state, attempt=1, pending=never_completed)
    assert boot is not None and boot.clears and [e.instant for e in boot.events] == [I1]


@pytest.mark.parametrize(
    ("rule", "attempt", "adopted"),
    [("always", 0, 7), ("always", 1, 7), ("attempt_gt_0", 0, -1), ("attempt_gt_0", 1, 7)],
)
def test_the_restored_checkpoint_id_rule(rule: str, attempt: int, adopted: int):
    """apache/hudi#19922 / #19952: 1.1 adopts the restored id only at attempt > 0."""
    state = TaskState(0, 7, ())
    task = WriteTask(0, 10, restored_checkpoint_id=rule)
    task.restore(state, attempt=attempt, pending=never_completed)
    assert task.last_checkpoint_id == adopted


def test_an_empty_last_batch_is_kept_in_the_state_when_nothing_else_was_sent():
    task = WriteTask(0, buffer_records=10)
    task.event_sent(WriteMetadataEvent(0, None, 2, (), True, 0))
    assert task.snapshot_state(3).events == (WriteMetadataEvent(0, None, 2, (), True, 0),)
    task.event_sent(WriteMetadataEvent(0, I1, 3, [stat("a")], False, 1))
    task.event_sent(WriteMetadataEvent(0, None, 3, (), True, 0))
    (merged,) = task.snapshot_state(4).events
    assert merged.instant == I1 and merged.last_batch


def test_without_persisted_write_meta_the_state_is_empty():
    task = WriteTask(0, buffer_records=10, persist_write_meta=False)
    task.event_sent(WriteMetadataEvent(0, I1, 2, [stat("a")], True, 3))
    state = task.snapshot_state(3)
    assert state == TaskState(0, 3, ())
    assert task.last_checkpoint_id == 3
    assert WriteTask(0, 10).restore(state, attempt=0, pending=never_completed) is None


def test_redistribute_splits_the_list_state_over_the_new_parallelism():
    e0 = WriteMetadataEvent(0, I1, 6, [stat("a")], True, 3)
    e1 = WriteMetadataEvent(1, I1, 6, [stat("b")], True, 3)
    states = (TaskState(0, 7, (e0,)), TaskState(1, 7, (e1,)))
    up = redistribute(states, 4)
    assert [s.events for s in up] == [(e0,), (e1,), (), ()]
    assert [s.task_id for s in up] == [0, 1, 2, 3] and {s.checkpoint_id for s in up} == {7}
    (down,) = redistribute(states, 1)
    assert down.events == (e0, e1)


# --- write_records -------------------------------------------------------------------------------


def make_writer(table_type: str):
    clock = FakeClock(FakeWorld(1_767_225_600_000))
    generator = make_time_generator(
        "truetime", clock=clock, lock=LocalLock(), max_expected_clock_skew_ms=1
    )
    table = create_table(
        InMemoryStorage(),
        name="t",
        table_type=table_type,
        record_key_field="key",
        ordering_field="ts",
        partition_fields=("part",),
    )
    return TableWriter(table, generator, data_schema=SCHEMA), clock


@pytest.mark.parametrize("table_type", [MERGE_ON_READ, COPY_ON_WRITE])
def test_write_records_upsert_one_file_group_per_bucket(table_type):
    writer, clock = make_writer(table_type)
    layout = FileLayout(0, "upsert", table_type == MERGE_ON_READ, buckets_per_partition=2)
    rows = precombine(upserts(0, 120), EVENT_TIME_ORDERING)
    versions: dict = {}
    instant = run(writer.start_commit(), clock)
    stats = write_records(writer, instant, rows, task_id=0, layout=layout, log_versions=versions)
    expected_groups = {
        (f"part={p}", bucket_file_id(int(p[1:]), b))
        for p, b in zip(
            rows.column("part").to_pylist(), bucket_ids(rows.column("key"), 2).tolist(), strict=True
        )
    }
    assert {(s.partition_path, s.file_id) for s in stats} == expected_groups
    assert sum(s.num_writes for s in stats) == rows.num_rows
    for s in stats:
        assert writer.storage.exists(s.path)
        assert instant.requested_time in s.path
    if table_type == MERGE_ON_READ:
        assert all(s.log_version == 1 for s in stats)
        # a second flush into the same instant writes the next log version of each group
        more = precombine(upserts(120, 60), EVENT_TIME_ORDERING)
        again = write_records(
            writer, instant, more, task_id=0, layout=layout, log_versions=versions
        )
        assert {s.log_version for s in again} == {2}
        stats += again
        rows = precombine(pa.concat_tables([rows, more]), EVENT_TIME_ORDERING)
    run(writer.commit(instant, stats), clock)
    snap = read_snapshot(writer.table).sort_by("key")
    assert snap.select(SCHEMA.names).to_pylist() == rows.sort_by("key").to_pylist()


def test_write_records_insert_new_base_file_per_partition():
    writer, clock = make_writer(MERGE_ON_READ)
    layout = FileLayout(3, "insert", True, buckets_per_partition=2)
    rows = RecordSource(1, 3, 10, 2, 1000.0, operation="insert").batch(0, 40)
    instant = run(writer.start_commit(), clock)
    stats = write_records(writer, instant, rows, task_id=1, layout=layout, log_versions={})
    partitions = sorted({f"part={p}" for p in rows.column("part").to_pylist()})
    assert sorted(s.partition_path for s in stats) == partitions
    for s in stats:
        p = int(s.partition_path.split("=p")[1])
        assert s.file_id == insert_file_id(3, 1, instant.requested_time, p)
        assert s.log_files == () and s.path.endswith(".parquet")
    assert sum(s.num_writes for s in stats) == 40
    run(writer.commit(instant, stats, "INSERT"), clock)
    assert read_snapshot(writer.table).num_rows == 40


def test_write_records_insert_eager_flushes_into_one_instant():
    """Append mode: a second flush of the same task into the same instant and partition writes a
    new file group instead of colliding with the first one's file."""
    writer, clock = make_writer(MERGE_ON_READ)
    layout = FileLayout(3, "insert", True, buckets_per_partition=2)
    src = RecordSource(1, 3, 10, 2, 1000.0, operation="insert")
    instant = run(writer.start_commit(), clock)
    memory: dict = {}
    first = write_records(
        writer, instant, src.batch(0, 30), task_id=1, layout=layout, log_versions=memory
    )
    second = write_records(
        writer, instant, src.batch(30, 60), task_id=1, layout=layout, log_versions=memory
    )
    ids = [s.file_id for s in first + second]
    assert len(set(ids)) == len(ids) == 4
    assert {s.file_id for s in first} == {
        insert_file_id(3, 1, instant.requested_time, p) for p in (0, 1)
    }
    run(writer.commit(instant, first + second, "INSERT"), clock)
    snap = read_snapshot(writer.table)
    assert sorted(snap.column("offset").to_pylist()) == list(range(60))


def test_file_ids_are_valid_and_distinct():
    from models.view.filenames import check_file_id

    ids = {bucket_file_id(p, b) for p in range(3) for b in range(4)}
    assert len(ids) == 12
    for f in ids:
        check_file_id(f)
    check_file_id(insert_file_id(1, 2, I1, 0))
    check_file_id(insert_file_id(1, 2, I1, 0, flush=3))
    assert insert_file_id(1, 2, I1, 0) != insert_file_id(1, 2, I1, 0, flush=1)
    assert insert_file_id(1, 2, I1, 0) != insert_file_id(1, 2, I2, 0)
    assert insert_file_id(1, 2, I1, 0) != insert_file_id(1, 3, I1, 0)


def test_append_mode_file_ids_of_two_instants_name_different_buckets():
    """Hudi's append writer starts each instant's file ids with a new UUID: the 8 characters the
    bucket index's conflict check reads as a bucket differ between a task's instants."""
    from models.format.records import bucket_id_str

    first, second = insert_file_id(1, 2, I1, 0), insert_file_id(1, 2, I2, 0)
    assert bucket_id_str(first) != bucket_id_str(second)
    assert bucket_id_str(first) == bucket_id_str(insert_file_id(1, 2, I1, 1, flush=2))
