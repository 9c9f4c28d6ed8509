"""Tests for invariants/raw_files.py: data file names parsed with the checkers' own patterns,
and archived instants read from the LSM timeline with their files and completion times.
"""

from __future__ import annotations

from invariants.committed import load_committed
from invariants.raw_files import parse_data_file
from models.timeline.archiver import archive_instants
from tests.invariants.test_committed import SimTable


def test_data_file_names_are_parsed_independently():
    base = parse_data_file("part=p0/abc-0_1-2-3_20260101000000123.parquet")
    assert base is not None and not base.is_log
    assert (base.partition, base.file_id, base.instant, base.token) == (
        "part=p0",
        "abc-0",
        "20260101000000123",
        "1-2-3",
    )
    log = parse_data_file("part=p0/.abc-0_20260101000000123.log.2_0-1-0")
    assert log is not None and log.is_log
    assert (log.file_id, log.instant, log.version, log.token) == (
        "abc-0",
        "20260101000000123",
        2,
        "0-1-0",
    )
    legacy = parse_data_file("abc-0_1-2-3_20260101000000.parquet")
    assert legacy is not None and legacy.instant == "20260101000000999"  # padded like Hudi
    for other in (
        "part=p0/.hoodie_partition_metadata",
        "part=p0/abc_def_1-2-3_20260101000000123.parquet",  # '_' inside a file id
        "part=p0/.abc-0_20260101000000123.log.2_0-1-0.cdc",
    ):
        assert parse_data_file(other) is None


def test_archived_instants_keep_their_files_and_completion_times():
    t = SimTable()
    written = [t.write(t.records(i * 10, i * 10 + 10)) for i in range(6)]
    t.compact()
    t.write(t.records(60, 70))
    archived = archive_instants(t.table, max_active=3, min_active=2)
    assert archived, "nothing was archived"
    committed = load_committed(t.table)
    old = [i for i in committed.instants if i.archived]
    assert {i.requested for i in old} >= {written[0].requested_time}
    first = committed.get(written[0].requested_time)
    assert first.archived and first.completion == written[0].completion_time
    assert first.files and all(f.is_log for f in first.files)
    assert committed.rows.table.num_rows == 70
