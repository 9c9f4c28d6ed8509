"""Tests for invariants/committed_rows.py: the own rows of committed write instants and the
records of any data file.
"""

from __future__ import annotations

import pyarrow.compute as pc

from invariants.committed import load_committed
from invariants.committed_rows import COMMIT_TIME, KEY, TIME
from models.format.properties import COPY_ON_WRITE
from tests.invariants.test_committed import SimTable


def test_copy_on_write_carries_old_rows_that_are_not_the_commits_own():
    t = SimTable(table_type=COPY_ON_WRITE, key_space=100_000)  # no key twice in a batch
    first = t.write(t.records(0, 30))
    t.write(t.records(30, 40))
    committed = load_committed(t.table)
    rows = committed.rows.table
    assert rows.num_rows == 40  # the second base files repeat the first's rows; only own rows
    firsts = rows.filter(pc.equal(rows.column(TIME), first.requested_time))
    assert sorted(firsts.column("offset").to_pylist()) == list(range(30))


def test_file_rows_reads_any_data_file():
    t = SimTable()
    pending = t.write(t.records(0, 10), commit=False)
    committed = load_committed(t.table)
    path = next(p for p, f in committed.files.items() if f.instant == pending.requested_time)
    rows = committed.file_rows(path)
    assert rows.num_rows > 0
    assert set(rows.column(TIME).to_pylist()) == {pending.requested_time}
    assert KEY in rows.column_names and COMMIT_TIME not in rows.column_names
