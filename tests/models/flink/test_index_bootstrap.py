"""The Flink state index's bootstrap (models/flink/index_bootstrap.py): which instant it loads up
to, and every key of the latest committed slices with its file group, deletes included, pending
and rolled-back writes left out."""

from __future__ import annotations

import pyarrow as pa

from models.flink.index_bootstrap import bootstrap_index, latest_commit_after
from models.format.properties import COPY_ON_WRITE
from models.view.fsview import latest_file_slices
from models.view.table import HudiTable
from tests.table_harness import TableHarness, rows

FG_A = "aaaaaaaa-0000-4000-8000-000000000001-0"
FG_B = "bbbbbbbb-0000-4000-8000-000000000002-0"


def loaded(h: TableHarness, last_instant_time: str | None = None):
    table = HudiTable(h.storage)
    timeline, groups = table.file_groups()
    return bootstrap_index(table, timeline, latest_file_slices(groups), last_instant_time)


def test_an_empty_table_loads_nothing(tmp_path):
    assert loaded(TableHarness(tmp_path)).loaded_instant is None


def test_keys_of_base_files_and_committed_logs_are_loaded_with_their_file_group(tmp_path):
    h = TableHarness(tmp_path)
    w = h.writer
    d1 = h.start()
    h.commit(d1, [w.append_log_file(d1, "p=1", FG_A, rows(["a", "b"], 1, 1))])
    compaction = h.schedule()
    assert compaction is not None
    h.compact(compaction)
    d2 = h.start()
    deletes = pa.table(
        {
            "record_key": pa.array(["z"], pa.string()),
            "partition_path": pa.array(["p=2"], pa.string()),
            "ordering_value": pa.array([None], pa.int64()),
        }
    )
    h.commit(
        d2,
        [
            w.append_log_file(d2, "p=1", FG_A, rows(["c"], 2, 2)),
            w.append_log_file(d2, "p=2", FG_B, rows(["y"], 2, 2, part="p=2"), delete_keys=deletes),
        ],
    )
    d3 = h.start()  # pending: its keys are not loaded
    w.append_log_file(d3, "p=1", FG_A, rows(["pending"], 3, 3))
    result = loaded(h)
    assert result.loaded_instant == d2.requested_time
    assert result.locations == {
        "a": ("p=1", FG_A),
        "b": ("p=1", FG_A),
        "c": ("p=1", FG_A),
        "y": ("p=2", FG_B),
        "z": ("p=2", FG_B),  # the log scanner's records include deletes
    }


def test_after_a_restore_only_a_newer_completed_instant_triggers_a_load(tmp_path):
    h = TableHarness(tmp_path, COPY_ON_WRITE)
    first = h.start()
    h.commit(first, [h.writer.write_base_file(first, "p=1", FG_A, rows(["a"], 1, 1))])
    assert loaded(h, first.requested_time).loaded_instant is None
    assert loaded(h, first.requested_time).locations == {}
    second = h.start()
    h.commit(second, [h.writer.write_base_file(second, "p=1", FG_B, rows(["b"], 1, 1))])
    result = loaded(h, first.requested_time)
    assert result.loaded_instant == second.requested_time
    assert result.locations == {"a": ("p=1", FG_A), "b": ("p=1", FG_B)}  # every slice, not the new


def test_latest_commit_after_ignores_pending_and_non_commit_actions(tmp_path):
    h = TableHarness(tmp_path)
    d1 = h.start()
    h.commit(d1, [h.writer.append_log_file(d1, "p=1", FG_A, rows(["a"], 1, 1))])
    h.start()  # pending
    timeline = HudiTable(h.storage).file_groups()[0]
    assert latest_commit_after(timeline, None) == d1.requested_time
    assert latest_commit_after(timeline, d1.requested_time) is None


def test_a_key_deleted_in_one_slice_and_live_in_another_keeps_the_last_slice_read(tmp_path):
    """Every release sends a deleted key like any (``loaded``): the slice read last wins, even
    when the key lives elsewhere; ``skipped`` sends live keys only, so the live copy's slice
    wins whatever the order."""
    h = TableHarness(tmp_path)
    w = h.writer
    first = h.start()
    h.commit(first, [w.append_log_file(first, "p=2", FG_B, rows(["k"], 1, 1, part="p=2"))])
    moved = h.start()
    deletes = pa.table(
        {
            "record_key": pa.array(["k"], pa.string()),
            "partition_path": pa.array(["p=2"], pa.string()),
            "ordering_value": pa.array([2], pa.int64()),
        }
    )
    h.commit(
        moved,
        [
            w.append_log_file(moved, "p=1", FG_A, rows(["k"], 2, 2)),
            w.append_log_file(moved, "p=2", FG_B, delete_keys=deletes),
        ],
    )
    table = HudiTable(h.storage)
    timeline, groups = table.file_groups()
    slices = latest_file_slices(groups)
    assert bootstrap_index(table, timeline, slices, None).locations == {"k": ("p=2", FG_B)}
    live = bootstrap_index(table, timeline, slices, None, "skipped")
    assert live.locations == {"k": ("p=1", FG_A)}
