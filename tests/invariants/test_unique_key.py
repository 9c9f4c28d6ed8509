"""Tests for invariants/unique_key.py: a key live in two file groups of a partition, read from
the raw files.

Hand-built tables (:class:`tests.invariants.test_committed.SimTable`) write chosen keys into
chosen file groups: a key written into a second file group by a completed commit is flagged at
the end and at the first bound that shows it, naming the key, both file groups and the commits
that first put it in each; the same key in one file group, a second file group whose instant never
completed, and an insert-only (append mode) table are not. Whole runs: see the catalog
(``duplicate_bucket_file_id``, ``occ_cow_low``) in tests/scenarios/test_catalog.py.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from invariants.unique_key import check_unique_key
from models.flink.write_files import bucket_file_id
from models.timeline.instant import Instant
from tests.invariants.test_committed import SimTable

OTHER = "00000000-aaaa-4000-8000-000000000001-0"


def write_into(t: SimTable, rows: pa.Table, file_id: str, *, commit: bool = True) -> Instant:
    """One instant writing ``rows`` (all of partition p1) as a log of ``file_id``."""
    assert set(rows.column("part").to_pylist()) <= {"p1"}
    instant = t.start()
    stats = [t.writer.append_log_file(instant, "part=p1", file_id, rows, task_id=0)]
    return t.commit(instant, stats) if commit else instant


def keys_of_p1(t: SimTable, start: int, stop: int) -> pa.Table:
    rows = t.records(start, stop)
    return rows.filter(pc.equal(rows.column("part"), "p1"))


def test_a_key_in_one_file_group_is_unique():
    t = SimTable()
    rows = keys_of_p1(t, 0, 40)
    write_into(t, rows, bucket_file_id(1, 0))
    write_into(t, rows, bucket_file_id(1, 0))
    t.compact()
    write_into(t, rows, bucket_file_id(1, 0))
    verdict = check_unique_key(t.events, t.table)
    assert verdict.name == "unique_key"
    assert verdict.ok, verdict.violations


def test_a_key_committed_into_a_second_file_group_is_flagged():
    t = SimTable()
    rows = keys_of_p1(t, 0, 40)
    first = write_into(t, rows, bucket_file_id(1, 0))
    second = write_into(t, rows.slice(0, 2), OTHER)
    verdict = check_unique_key(t.events, t.table)
    assert not verdict.ok
    end = verdict.violations[-1]
    key = rows.column("key")[0].as_py()
    assert end.why.startswith("at the end 2 keys are live in two file groups of a partition")
    assert (
        f"{key} of part=p1 in {bucket_file_id(1, 0)} (first by {first.requested_time})" in end.why
    )
    assert f"{OTHER} (first by {second.requested_time})" in end.why
    assert set(end.events) == {t.event_of(first), t.event_of(second)}
    # the bound of the second commit shows it first
    assert verdict.violations[0].why.startswith(f"as of {second.completion_time} 2 keys")


def test_a_second_file_group_never_committed_is_not_live():
    t = SimTable()
    rows = keys_of_p1(t, 0, 40)
    write_into(t, rows, bucket_file_id(1, 0))
    write_into(t, rows.slice(0, 2), OTHER, commit=False)
    assert check_unique_key(t.events, t.table).ok


def test_append_mode_inserts_are_not_judged():
    t = SimTable(operation="insert")
    rows = keys_of_p1(t, 0, 40)
    instant = t.start()
    stats = [
        t.writer.write_base_file(instant, "part=p1", file_id, rows, task_id=0)
        for file_id in (OTHER, bucket_file_id(1, 0))
    ]
    t.commit(instant, stats)
    assert check_unique_key(t.events, t.table).ok


def test_once_keys_move_a_key_in_two_partitions_is_flagged_across_the_table():
    """A job whose keys change partition (setup ``partition_period_ms``) runs the global index,
    which keeps one copy per key in the table: the same key committed in two partitions is a
    violation there, and only there."""
    for moving in (False, True):
        t = SimTable()
        if moving:
            t.events[0].value["jobs"][0]["source"]["partition_period_ms"] = 1000
        rows = keys_of_p1(t, 0, 20)
        t.write(rows)
        elsewhere = rows.set_column(
            rows.column_names.index("part"), "part", pa.array(["p0"] * rows.num_rows)
        )
        t.write(elsewhere)
        verdict = check_unique_key(t.events, t.table)
        assert verdict.ok is not moving
        if moving:
            assert "two file groups of the table" in verdict.violations[-1].why
            assert "part=p0/" in verdict.violations[-1].why
