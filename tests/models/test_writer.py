"""Tables written by our own writer (COW and MOR: several commits, a compaction, a log requested
before and completed after a compaction, an inflight write) are read identically by hudi-rs and by
our reader, and hudi-rs's slices equal ours. Plus a property test over random write histories."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.commit_metadata import read_commit_metadata
from models.properties import COPY_ON_WRITE
from models.reader import read_snapshot
from models.storage import FileAlreadyExistsError
from models.writer import WriteError
from tests.hudi_oracle import oracle_file_slices, oracle_read
from tests.table_harness import TableHarness, rows
from tests.testbed.test_cli import same_rows

hudi = pytest.importorskip("hudi")

FG_A = "aaaaaaaa-0000-4000-8000-000000000001-0"
FG_B = "bbbbbbbb-0000-4000-8000-000000000002-0"


class Harness(TableHarness):
    """The shared harness plus comparisons with hudi-rs."""

    def our_slices(self):
        return [
            {
                "partition": s.partition,
                "file_id": s.file_id,
                "base_instant": s.base_instant,
                "base_file": s.base_file.name if s.base_file else None,
                "log_files": [lf.name for lf in s.log_files],
            }
            for s in self.writer.table.latest_file_slices()
        ]

    def assert_agrees_with_hudi_rs(self):
        assert self.our_slices() == oracle_file_slices(self.path)
        ours = read_snapshot(self.writer.table)
        theirs = oracle_read(self.path)
        assert same_rows(ours, theirs), (ours.to_pylist(), theirs.to_pylist())
        return ours


def values(table: pa.Table) -> dict[str, int]:
    return dict(zip(table.column("id").to_pylist(), table.column("value").to_pylist(), strict=True))


def test_mor_commits_compaction_late_log_and_inflight_write(tmp_path):
    h = Harness(tmp_path / "mor")
    w = h.writer
    c1 = h.start()
    h.commit(
        c1,
        [
            w.write_base_file(c1, "p=1", FG_A, rows(["a", "b", "c"], 1, 1)),
            w.write_base_file(c1, "p=2", FG_B, rows(["x", "y"], 1, 1, "p=2")),
        ],
        "INSERT",
    )
    d1 = h.start()
    h.commit(d1, [w.append_log_file(d1, "p=1", FG_A, rows(["a"], 2, 2))])
    d2 = h.start()  # requested before the compaction ...
    late = w.append_log_file(d2, "p=1", FG_A, rows(["b"], 2, 2))
    compaction = h.schedule()
    assert compaction is not None
    h.assert_agrees_with_hudi_rs()  # pending compaction: the merged slice
    h.commit(d2, [late])  # ... completed after it: lands in the compaction's slice
    h.assert_agrees_with_hudi_rs()
    h.compact(compaction)
    deletes = pa.table(
        {
            "record_key": pa.array(["y"], pa.string()),
            "partition_path": pa.array(["p=2"], pa.string()),
            "ordering_value": pa.array([None], pa.int64()),
        }
    )
    d3 = h.start()
    h.commit(d3, [w.append_log_file(d3, "p=2", FG_B, delete_keys=deletes)])
    d4 = h.start()  # an inflight write that never commits
    w.append_log_file(d4, "p=1", FG_A, rows(["c"], 9, 9))
    ours = h.assert_agrees_with_hudi_rs()
    assert values(ours) == {"a": 2, "b": 2, "c": 1, "x": 1}
    (slice_a,) = [s for s in h.our_slices() if s["file_id"] == FG_A]
    assert slice_a["base_instant"] == compaction.requested_time
    assert slice_a["log_files"] == [late.file_name]


def test_cow_commits_and_inflight_write(tmp_path):
    h = Harness(tmp_path / "cow", COPY_ON_WRITE)
    w = h.writer
    c1 = h.start()
    h.commit(c1, [w.upsert_base_file(c1, "p=1", FG_A, rows(["a", "b"], 1, 1))], "INSERT")
    c2 = h.start()
    h.commit(c2, [w.upsert_base_file(c2, "p=1", FG_A, rows(["b", "c"], 2, 2))])
    c3 = h.start()
    w.upsert_base_file(c3, "p=1", FG_A, rows(["a"], 3, 3))  # never committed
    ours = h.assert_agrees_with_hudi_rs()
    assert values(ours) == {"a": 1, "b": 2, "c": 2}
    assert h.our_slices()[0]["base_instant"] == c2.requested_time


def test_commit_metadata_carries_schema_and_stats(tmp_path):
    h = Harness(tmp_path / "meta")
    c1 = h.start()
    stat = h.writer.write_base_file(c1, "p=1", FG_A, rows(["a"], 1, 1))
    done = h.commit(c1, [stat])
    meta = read_commit_metadata(h.writer.timeline.read_content(done))
    assert meta.schema and '"value"' in meta.schema
    assert [s.path for s in meta.write_stats()] == [stat.path]
    markers = tmp_path / "meta" / ".hoodie" / ".temp" / c1.requested_time
    assert not [p for p in markers.rglob("*") if p.is_file()], "markers are removed on commit"


def test_completion_time_collision_is_an_abort_not_an_overwrite(tmp_path):
    """Two writers with the same requested time: the second create fails (write-once files)."""
    h = Harness(tmp_path / "dup")
    c1 = h.start()
    with pytest.raises(FileAlreadyExistsError):
        h.writer.timeline.create_requested(c1.requested_time, "deltacommit")


def test_files_need_an_inflight_instant(tmp_path):
    h = Harness(tmp_path / "state")
    c1 = h.start()
    done = h.commit(c1, [h.writer.write_base_file(c1, "p=1", FG_A, rows(["a"], 1, 1))])
    with pytest.raises(WriteError):
        h.writer.append_log_file(done, "p=1", FG_A, rows(["a"], 2, 2))


# --- property: random MOR histories, our view and reader against hudi-rs ------------------------

OPS = st.lists(
    st.tuples(
        st.sampled_from(["write", "write", "complete", "complete", "schedule", "compact"]),
        st.integers(0, 1),  # file group
        st.lists(st.sampled_from("abcdef"), min_size=1, max_size=3, unique=True),
        st.integers(0, 5),  # ordering value
    ),
    min_size=1,
    max_size=12,
)


@pytest.mark.oracle
@settings(max_examples=25, deadline=None)
@given(ops=OPS)
def test_random_histories_agree_with_hudi_rs(tmp_path_factory, ops):
    h = Harness(tmp_path_factory.mktemp("prop") / "t")
    w = h.writer
    groups = [FG_A, FG_B]
    c0 = h.start()
    h.commit(c0, [w.write_base_file(c0, "p=1", g, rows([g[0] + "0"], 0, 0)) for g in groups])
    pending: list = []
    scheduled = None
    for i, (op, group, ids, ts) in enumerate(ops):
        if op == "write":
            d = h.start()
            stat = w.append_log_file(
                d, "p=1", groups[group], rows([f"{k}{group}" for k in ids], ts, i)
            )
            pending.append((d, stat))
        elif op == "complete" and pending:
            d, stat = pending.pop(0)
            h.commit(d, [stat])
        elif op == "schedule" and scheduled is None:
            scheduled = h.schedule()
        elif op == "compact" and scheduled is not None:
            h.compact(scheduled)
            scheduled = None
    h.assert_agrees_with_hudi_rs()
