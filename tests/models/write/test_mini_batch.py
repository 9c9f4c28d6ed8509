"""Tests for models/write/mini_batch.py: a second COPY_ON_WRITE write of one file group by one
task in one instant replaces the first file under its name (Hudi's FlinkMergeAndReplaceHandle),
hudi-rs reads the result; in a later instant it is a plain merge into a new file."""

from __future__ import annotations

import pyarrow as pa
import pytest

from models.format.parquet_files import read_parquet
from models.format.properties import COPY_ON_WRITE
from models.view.reader import read_snapshot
from models.write.markers import list_markers
from models.write.mini_batch import roll_file_name
from tests.hudi_oracle import oracle_read
from tests.table_harness import TableHarness, rows
from tests.testbed.test_cli import same_rows

pytest.importorskip("hudi")

FG = "aaaaaaaa-0000-4000-8000-000000000001-0"


def values(table) -> dict[str, int]:
    return dict(zip(table.column("id").to_pylist(), table.column("value").to_pylist(), strict=True))


def base_files(h: TableHarness) -> list[str]:
    return sorted(f.name for f in h.storage.list_dir("p=1") if f.name.endswith(".parquet"))


def test_a_second_mini_batch_replaces_the_first_file_under_its_name(tmp_path):
    h = TableHarness(tmp_path / "t", COPY_ON_WRITE)
    w = h.writer
    c1 = h.start()
    first = w.upsert_base_file(c1, "p=1", FG, rows(["a", "b"], 1, 1))
    second = w.upsert_base_file(c1, "p=1", FG, rows(["b", "c"], 2, 2), previous_path=first.path)
    assert second.path == first.path
    assert base_files(h) == [first.path.rsplit("/", 1)[1]]
    written = read_parquet(h.storage.read(first.path))
    roll = roll_file_name(FG, "0-1-0", 0, c1.requested_time)
    assert set(written.column("_hoodie_file_name").to_pylist()) == {roll}  # as Hudi writes it
    markers = {m.data_path for m in list_markers(h.storage, c1.requested_time)}
    assert f"p=1/{roll}" in markers  # the roll file's MERGE marker
    h.commit(c1, [second])
    ours = read_snapshot(h.table)
    assert values(ours) == {"a": 1, "b": 2, "c": 2}
    assert same_rows(ours, oracle_read(h.path))


def test_a_mini_batch_into_a_later_instant_merges_into_a_new_file(tmp_path):
    """``shouldReplace = false``: the instant moved on between two flushes of one interval."""
    h = TableHarness(tmp_path / "t", COPY_ON_WRITE)
    w = h.writer
    c1 = h.start()
    first = w.upsert_base_file(c1, "p=1", FG, rows(["a"], 1, 1))
    h.commit(c1, [first])
    c2 = h.start()
    second = w.upsert_base_file(c2, "p=1", FG, rows(["b"], 2, 2), previous_path=first.path)
    assert second.path != first.path and second.prev_commit == c1.requested_time
    assert len(base_files(h)) == 2
    h.commit(c2, [second])
    assert values(read_snapshot(h.table)) == {"a": 1, "b": 2}


def deletes(ids, ts, part="p=1") -> pa.Table:
    """Delete records as ``upsert_base_file`` takes them."""
    return pa.table(
        {
            "record_key": pa.array(ids, pa.string()),
            "partition_path": pa.array([part] * len(ids), pa.string()),
            "ordering_value": pa.array([ts] * len(ids), pa.int64()),
        }
    )


@pytest.mark.parametrize("later_instant", [False, True])
def test_a_mini_batch_counts_the_keys_its_deletes_leave_out(tmp_path, later_instant):
    """The replace handle is a merge handle: its write status counts ``recordsDeleted``, which
    the statuses of one file sum into the commit's ``numDeletes``."""
    h = TableHarness(tmp_path / "t", COPY_ON_WRITE)
    w = h.writer
    c1 = h.start()
    h.commit(c1, [w.upsert_base_file(c1, "p=1", FG, rows(["a", "b", "c", "d"], 1, 1))])
    c2 = h.start()
    first = w.upsert_base_file(c2, "p=1", FG, rows(["e"], 2, 2), delete_keys=deletes(["a"], 2))
    at = h.start() if later_instant else c2
    second = w.upsert_base_file(
        at,
        "p=1",
        FG,
        rows(["f"], 3, 3),
        previous_path=first.path,
        delete_keys=deletes(["b", "c"], 3),
    )
    assert (first.num_deletes, second.num_deletes) == (1, 2)
    no_delete = w.upsert_base_file(at, "p=1", FG, rows(["g"], 4, 4), previous_path=second.path)
    assert no_delete.num_deletes == 0
