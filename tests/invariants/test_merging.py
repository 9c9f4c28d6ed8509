"""Tests for invariants/merging.py's commit-time merge: the last version wins, and within one
commit a delete removes only versions of its own file group (the global index deletes a moved key
from its old file group and writes it into another in the same commit)."""

from __future__ import annotations

import pyarrow.compute as pc
import pytest

from invariants.committed import load_committed
from invariants.committed_rows import KEY
from invariants.merging import CommitTimeMerge, merged_at
from models.flink.write_files import bucket_file_id
from models.format.records import partition_path
from tests.invariants.test_committed import NEW_AFTER, NEW_BEFORE, SimTable, delete_keys, p1_rows


def live_copies(t: SimTable, key: str) -> int:
    live = merged_at(load_committed(t.table).rows, CommitTimeMerge(), None, by_file_group=False)
    return live.filter(pc.equal(live.column(KEY), key)).num_rows


@pytest.mark.parametrize("new_file_id", [NEW_BEFORE, NEW_AFTER])
def test_a_delete_block_never_beats_the_same_commits_version_in_another_file_group(new_file_id):
    t = SimTable(merge_mode="COMMIT_TIME_ORDERING")
    rows = p1_rows(t, 0, 40)
    key = sorted(set(rows.column("key").to_pylist()))[0]
    t.write(rows)
    path = partition_path("p1")
    instant = t.start()
    moved = rows.filter(pc.equal(rows.column("key"), key)).slice(0, 1)
    removed = t.writer.append_log_file(
        instant, path, bucket_file_id(1, 0), delete_keys=delete_keys([key], 0)
    )
    written = t.writer.append_log_file(instant, path, new_file_id, moved)
    t.commit(instant, [removed, written])
    assert live_copies(t, key) == 1


def test_a_delete_after_a_version_of_its_own_file_group_in_one_commit_wins():
    t = SimTable(merge_mode="COMMIT_TIME_ORDERING")
    rows = p1_rows(t, 0, 40)
    key = sorted(set(rows.column("key").to_pylist()))[0]
    t.write(rows)
    path, file_id = partition_path("p1"), bucket_file_id(1, 0)
    instant = t.start()
    again = rows.filter(pc.equal(rows.column("key"), key)).slice(0, 1)
    first = t.writer.append_log_file(instant, path, file_id, again)
    then = t.writer.append_log_file(instant, path, file_id, delete_keys=delete_keys([key], 0))
    t.commit(instant, [first, then])
    assert live_copies(t, key) == 0
