"""Copy-on-write flushes of the Flink state index's records (models/flink/write_files.py): the
write handle ``FlinkWriteHandleFactory`` picks from the bucket's tag, and the bucket's tag is its
first record's (models/flink/write_task.py ``with_bucket_tag``)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from models.flink.write_buffer import ROW_KIND_COLUMN
from models.flink.write_files import (
    LOCATION_FILE_ID,
    LOCATION_INSTANT,
    FileLayout,
    split_deletes,
    write_records,
)
from models.flink.write_task import with_bucket_tag
from models.format.properties import COPY_ON_WRITE
from models.format.records import SCHEMA
from models.ports import run
from models.view.reader import read_snapshot
from models.write.merge_handle import MissingBaseFileError
from tests.models.flink.test_write_task import make_writer

LAYOUT = FileLayout(0, "upsert", False, buckets_per_partition=1)


def located(keys: list[str], tag: str, ts: int = 0, file_id: str = "fg-1") -> pa.Table:
    rows = pa.Table.from_pylist(
        [
            {"key": k, "part": "p0", "ts": ts + i, "offset": i, "job": 0, "value": ts + i}
            for i, k in enumerate(keys)
        ],
        schema=SCHEMA,
    )
    n = rows.num_rows
    rows = rows.append_column(LOCATION_FILE_ID, pa.array([file_id] * n, pa.string()))
    return rows.append_column(LOCATION_INSTANT, pa.array([tag] * n, pa.string()))


def flush_and_commit(writer, clock, rows: pa.Table, handles: dict | None = None) -> None:
    instant = run(writer.start_commit(), clock)
    stats = write_records(
        writer, instant, rows, task_id=0, layout=LAYOUT, log_versions={}, handles=handles
    )
    run(writer.commit(instant, stats), clock)


def keys_of(writer) -> list[str]:
    return sorted(read_snapshot(writer.table).column("key").to_pylist())


def test_an_update_bucket_merges_into_the_committed_base_file():
    writer, clock = make_writer(COPY_ON_WRITE)
    flush_and_commit(writer, clock, located(["a", "b"], "I"))
    flush_and_commit(writer, clock, located(["b", "c"], "U", ts=10))
    assert keys_of(writer) == ["a", "b", "c"]


def test_an_update_bucket_without_a_committed_base_file_fails_the_flush():
    writer, clock = make_writer(COPY_ON_WRITE)
    instant = run(writer.start_commit(), clock)
    with pytest.raises(MissingBaseFileError, match="FileID fg-1 of partition path part=p0 does"):
        write_records(
            writer, instant, located(["a"], "U"), task_id=0, layout=LAYOUT, log_versions={}
        )


def test_an_insert_bucket_writes_a_new_base_file_that_hides_a_committed_one():
    """The create handle reads nothing: over a committed file group (apache/hudi#19763's
    pattern) the new base file holds only its own records."""
    writer, clock = make_writer(COPY_ON_WRITE)
    flush_and_commit(writer, clock, located(["a", "b"], "I"))
    flush_and_commit(writer, clock, located(["c"], "I", ts=10))
    assert keys_of(writer) == ["c"]


def test_a_second_flush_of_the_instant_replaces_the_tasks_file_whatever_its_tag():
    writer, clock = make_writer(COPY_ON_WRITE)
    instant = run(writer.start_commit(), clock)
    handles: dict[str, str] = {}
    first = write_records(
        writer,
        instant,
        located(["a"], "I"),
        task_id=0,
        layout=LAYOUT,
        log_versions={},
        handles=handles,
    )
    second = write_records(
        writer,
        instant,
        located(["b"], "U", ts=5),
        task_id=0,
        layout=LAYOUT,
        log_versions={},
        handles=handles,
    )
    run(writer.commit(instant, first + second), clock)
    assert keys_of(writer) == ["a", "b"]


def test_a_buckets_rows_all_take_its_first_rows_tag():
    rows = pa.concat_tables([located(["a"], "I"), located(["b", "c"], "U")])
    assert with_bucket_tag(rows).column(LOCATION_INSTANT).to_pylist() == ["I", "I", "I"]
    untagged = rows.drop_columns([LOCATION_INSTANT])
    assert with_bucket_tag(untagged) is untagged


def with_delete_flags(rows: pa.Table, flags: list[bool]) -> pa.Table:
    return rows.append_column(ROW_KIND_COLUMN, pa.array(flags))


def test_deletes_split_into_delete_keys_with_their_ordering_values():
    rows = with_delete_flags(located(["a", "b"], "U", ts=7), [True, False])
    records, deletes = split_deletes(rows.drop_columns([LOCATION_FILE_ID, LOCATION_INSTANT]))
    assert records.column("key").to_pylist() == ["b"]
    assert ROW_KIND_COLUMN not in records.column_names
    assert deletes.to_pylist() == [
        {"record_key": "a", "partition_path": "part=p0", "ordering_value": 7}
    ]
    unflagged = located(["a"], "U").drop_columns([LOCATION_FILE_ID, LOCATION_INSTANT])
    assert split_deletes(unflagged) == (unflagged, None)


def test_a_copy_on_write_merge_drops_a_deleted_key_and_counts_it():
    """The global index's delete reaches the old file group's merge handle: the next base file
    leaves the key out and its write stat counts it in ``numDeletes``."""
    writer, clock = make_writer(COPY_ON_WRITE)
    flush_and_commit(writer, clock, with_delete_flags(located(["a", "b"], "I"), [False, False]))
    instant = run(writer.start_commit(), clock)
    flush = with_delete_flags(located(["a"], "U", ts=10), [True])
    stats = write_records(writer, instant, flush, task_id=0, layout=LAYOUT, log_versions={})
    run(writer.commit(instant, stats), clock)
    assert keys_of(writer) == ["b"]
    assert [s.num_deletes for s in stats] == [1]
