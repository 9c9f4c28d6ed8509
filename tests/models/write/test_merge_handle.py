"""Tests for models/write/merge_handle.py: Hudi's merge handle writes each old record once (as
its merge when the incoming records hold its key), keeps duplicates of the old file, drops a
deleted key, appends new keys, and the incoming map keeps a key's last record."""

from __future__ import annotations

import pyarrow as pa

from models.format.properties import COPY_ON_WRITE
from models.write.merge_handle import merge_handle_rows, removed_keys
from tests.table_harness import TableHarness, rows


def with_meta(h: TableHarness, table: pa.Table) -> pa.Table:
    instant = h.start()
    return h.writer.with_meta(instant, "p=1", "f", table, 0)


def pairs(table: pa.Table) -> list[tuple[str, int]]:
    return sorted(
        zip(table.column("id").to_pylist(), table.column("value").to_pylist(), strict=True)
    )


def test_old_duplicates_stay_and_each_takes_the_merge(tmp_path):
    h = TableHarness(tmp_path / "t", COPY_ON_WRITE)
    old = with_meta(h, rows(["a", "a", "a", "b"], 1, 1))
    new = with_meta(h, rows(["a", "c"], 2, 2))
    merged = merge_handle_rows(old, new, h.table.config)
    assert pairs(merged) == [("a", 2), ("a", 2), ("a", 2), ("b", 1), ("c", 2)]


def test_an_older_incoming_record_loses_to_the_old_one_under_event_time_ordering(tmp_path):
    h = TableHarness(tmp_path / "t", COPY_ON_WRITE)
    old = with_meta(h, rows(["a"], 5, 1))
    new = with_meta(h, rows(["a"], 2, 2))
    assert pairs(merge_handle_rows(old, new, h.table.config)) == [("a", 1)]


def test_the_incoming_map_keeps_the_last_record_of_a_key(tmp_path):
    h = TableHarness(tmp_path / "t", COPY_ON_WRITE)
    new = with_meta(h, pa.concat_tables([rows(["a"], 5, 1), rows(["a"], 3, 2)]))
    empty = new.slice(0, 0)
    assert pairs(merge_handle_rows(empty, new, h.table.config)) == [("a", 2)]


def test_a_deleted_key_is_dropped_with_all_its_old_copies(tmp_path):
    h = TableHarness(tmp_path / "t", COPY_ON_WRITE)
    old = with_meta(h, rows(["a", "a", "b"], 1, 1))
    delete = rows(["a"], 2, 0).append_column("_hoodie_is_deleted", pa.array([True]))
    merged = merge_handle_rows(old, with_meta(h, delete), h.table.config)
    assert pairs(merged) == [("b", 1)]


def deletes(keys: list[str], ordering: int) -> pa.Table:
    """Delete records as the Flink write path hands them over (``split_deletes``)."""
    return pa.table(
        {
            "record_key": pa.array(keys, pa.string()),
            "partition_path": pa.array(["p=1"] * len(keys), pa.string()),
            "ordering_value": pa.array([ordering] * len(keys), pa.int64()),
        }
    )


def test_delete_records_drop_older_keys_and_lose_to_newer_ones(tmp_path):
    """The global index's deletes meet the old records in the merge: a delete with a greater
    ordering value drops the key, an older one keeps it (event-time ordering); the handle counts
    the keys it left out (``numDeletes``)."""
    h = TableHarness(tmp_path / "t", COPY_ON_WRITE)
    old = with_meta(h, pa.concat_tables([rows(["a"], 1, 1), rows(["b"], 9, 1), rows(["c"], 1, 1)]))
    new = with_meta(h, rows(["c"], 2, 2))
    merged = merge_handle_rows(old, new, h.table.config, deletes(["a", "b"], 5))
    assert pairs(merged) == [("b", 1), ("c", 2)]
    assert removed_keys(old, merged) == 1
