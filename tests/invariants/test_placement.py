"""Tests for invariants/placement.py: records in the partition folder their partition fields name
and, under the bucket index, in the file group of their key's bucket (Hudi's hash).

Hand-built tables (:class:`tests.invariants.test_committed.SimTable`, whose setup event names two
buckets per partition): records written where Hudi puts them pass; records in another partition's
folder, or in another bucket's file group, are flagged with their count, examples and commits;
append-mode inserts carry no bucket. The hash is checked against Java's values and against the
writer's own (``models.format.records.bucket_ids``), which must agree with it.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import given
from hypothesis import strategies as st

from invariants.placement import check_placement, java_string_hash, key_bucket
from models.flink.write_files import bucket_file_id
from models.format.records import bucket_ids
from models.timeline.instant import Instant
from tests.invariants.test_committed import SimTable

BUCKETS = 2  # tests.invariants.test_ledger.setup_value


def test_java_hash_and_hudis_bucket():
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == 2**31
    assert key_bucket("k1", 4) == 3397 % 4  # List.of("k1").hashCode() = 31 + "k1".hashCode()
    assert key_bucket("polygenelubricants", 1000) == 31


@given(st.lists(st.text(max_size=10), min_size=1, max_size=30), st.integers(1, 64))
def test_the_writer_hashes_keys_as_the_checker_does(keys, buckets):
    assert bucket_ids(pa.array(keys), buckets).tolist() == [key_bucket(k, buckets) for k in keys]


def write_by_bucket(
    t: SimTable, rows: pa.Table, *, wrong_bucket: bool = False, folder: str | None = None
) -> Instant:
    """One instant writing each partition's rows into the file group of each key's bucket (the
    other bucket's if ``wrong_bucket``), in the partition's folder (or ``folder``)."""
    instant = t.start()
    stats = []
    keys = rows.column("key")
    buckets = np.array([key_bucket(k, BUCKETS) for k in keys.to_pylist()])
    if wrong_bucket:
        buckets = (buckets + 1) % BUCKETS
    parts = rows.column("part")
    for part in sorted(set(parts.to_pylist())):
        for bucket in range(BUCKETS):
            mask = pc.and_(pc.equal(parts, part), pa.array(buckets == bucket))
            chunk = rows.filter(mask)
            if chunk.num_rows:
                path = folder or f"part={part}"
                file_id = bucket_file_id(int(part[1:]), bucket)
                stats.append(t.writer.append_log_file(instant, path, file_id, chunk, task_id=0))
    return t.commit(instant, stats)


def test_records_where_hudi_puts_them_pass():
    t = SimTable()
    write_by_bucket(t, t.records(0, 60))
    write_by_bucket(t, t.records(60, 90))
    verdict = check_placement(t.events, t.table)
    assert verdict.name == "placement"
    assert verdict.ok, verdict.violations


def test_records_in_another_buckets_file_group_are_flagged():
    t = SimTable()
    write_by_bucket(t, t.records(0, 60))
    wrong = write_by_bucket(t, t.records(60, 90), wrong_bucket=True)
    (violation,) = check_placement(t.events, t.table).violations
    assert violation.why.startswith(
        "30 committed records do not lie in the file group of their key's bucket (e.g. k"
    )
    assert f"written by 1 instants ({wrong.requested_time})" in violation.why
    assert violation.events == (t.event_of(wrong),)


def test_records_in_another_partition_folder_are_flagged():
    t = SimTable()
    rows = t.records(0, 60)
    p0 = rows.filter(pc.equal(rows.column("part"), "p0"))
    wrong = write_by_bucket(t, p0, folder="part=p1")
    (violation,) = check_placement(t.events, t.table).violations
    assert violation.why.startswith(
        f"{p0.num_rows} committed records do not lie in the partition folder their partition "
        "fields name"
    )
    assert violation.events == (t.event_of(wrong),)


def test_append_mode_inserts_carry_no_bucket():
    t = SimTable(operation="insert")
    t.write(t.records(0, 60))  # a file group per partition, named after the instant
    assert check_placement(t.events, t.table).ok


def test_a_delete_blocks_entries_are_not_records_placed_by_their_fields():
    """A delete block's entry carries a partition path, not partition fields (the global index's
    delete of a moved key): the partition rule judges records only."""
    t = SimTable()
    rows = t.records(0, 60)
    write_by_bucket(t, rows)
    p1 = rows.filter(pc.equal(rows.column("part"), "p1"))
    key = p1.column("key")[0].as_py()
    deletes = pa.table(
        {
            "record_key": pa.array([key]),
            "partition_path": pa.array(["part=p1"]),
            "ordering_value": pa.array([10**12], pa.int64()),
        }
    )
    instant = t.start()
    file_id = bucket_file_id(1, key_bucket(key, BUCKETS))
    stat = t.writer.append_log_file(instant, "part=p1", file_id, delete_keys=deletes, task_id=0)
    t.commit(instant, [stat])
    verdict = check_placement(t.events, t.table)
    assert verdict.ok, verdict.violations
