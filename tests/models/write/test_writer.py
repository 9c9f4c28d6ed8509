"""Tables written by our own writer (COW and MOR: several commits, a compaction, a log requested
before and completed after a compaction, an inflight write) are read identically by hudi-rs and by
our reader, and hudi-rs's slices equal ours. Plus a property test over random write histories."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.format.commit_metadata import read_commit_metadata
from models.format.properties import COPY_ON_WRITE
from models.ports import run
from models.storage import FileAlreadyExistsError
from models.view.reader import read_snapshot
from models.write.markers import list_markers
from models.write.write_handles import WriteError
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


def data_files(h: Harness) -> list[str]:
    """Every base and log file of the table (partition/name), sorted."""
    return sorted(
        s.path
        for p in h.writer.table.partitions()
        for s in h.storage.list_dir(p)
        if s.name.endswith(".parquet") or ".log." in s.name
    )


def test_commit_deletes_the_log_files_it_does_not_list_and_keeps_the_listed_ones(tmp_path):
    """Several flushes into one instant and file group write log versions 1, 2, 3; the commit
    lists 1 and 3 (2 came after the snapshot a re-commit restored): finalizing the write deletes
    2, keeps 1 and 3, and the reader sees exactly the listed records (hudi-rs agrees)."""
    h = Harness(tmp_path / "logs")
    w = h.writer
    d1 = h.start()
    v1 = w.append_log_file(d1, "p=1", FG_A, rows(["a"], 1, 1), version=1)
    v2 = w.append_log_file(d1, "p=1", FG_A, rows(["b"], 1, 1), version=2)
    v3 = w.append_log_file(d1, "p=1", FG_A, rows(["c"], 1, 1), version=3)
    markers = [m.marker_type for m in list_markers(h.storage, d1.requested_time)]
    assert markers == ["CREATE"] * 3  # table version 8: a new log file is marked CREATE
    h.commit(d1, [v1, v3])
    assert data_files(h) == sorted([v1.path, v3.path])
    assert not h.storage.exists(v2.path)
    assert values(h.assert_agrees_with_hudi_rs()) == {"a": 1, "c": 1}
    assert list_markers(h.storage, d1.requested_time) == []


def test_commit_deletes_unlisted_base_files_only_of_its_own_instant(tmp_path):
    """A retried task's duplicate base file (Hudi's reason for reconciling) goes; the files of
    other instants, pending or completed, are not this commit's to judge."""
    h = Harness(tmp_path / "base", COPY_ON_WRITE)
    w = h.writer
    c1 = h.start()
    kept = w.write_base_file(c1, "p=1", FG_A, rows(["a"], 1, 1), task_id=0)
    duplicate = w.write_base_file(c1, "p=1", FG_A, rows(["a"], 1, 1), task_id=1)
    other = h.start()
    pending = w.write_base_file(other, "p=1", FG_B, rows(["x"], 1, 1))
    h.commit(c1, [kept])
    assert data_files(h) == sorted([kept.path, pending.path])
    assert duplicate.path not in data_files(h)
    assert w.finalize_write(c1.requested_time, [kept]) == []  # idempotent: markers are gone


def test_a_failed_conflict_check_finalizes_nothing(tmp_path):
    """Hudi finalizes after conflict resolution: an aborted commit leaves its files to the
    rollback (which finds them through the markers, still in place)."""
    h = Harness(tmp_path / "abort")
    w = h.writer
    d1 = h.start()
    listed = w.append_log_file(d1, "p=1", FG_A, rows(["a"], 1, 1), version=1)
    unlisted = w.append_log_file(d1, "p=1", FG_A, rows(["b"], 1, 1), version=2)

    def conflict() -> None:
        raise RuntimeError("conflict")

    with pytest.raises(RuntimeError, match="conflict"):
        run(w.commit(d1, [listed], precommit=conflict), h.clock)
    assert data_files(h) == sorted([listed.path, unlisted.path])
    assert len(list_markers(h.storage, d1.requested_time)) == 2


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


class _Heartbeats:
    """A write client's heartbeat client; with ``fail`` the first beat cannot be written."""

    def __init__(self) -> None:
        self.fail = False
        self.started: list[str] = []

    def start(self, instant_time: str) -> None:
        if self.fail:
            raise OSError(f"cannot write the heartbeat of {instant_time}")
        self.started.append(instant_time)

    def abort_if_expired(self, instant_time: str) -> None:
        pass

    def stop(self, instant_time: str) -> None:
        pass


def test_start_commit_starts_the_heartbeat_before_the_requested_file(tmp_path):
    """``BaseHoodieWriteClient#startCommit`` (LAZY): a heartbeat that cannot be written fails
    the call and leaves no instant on the timeline."""
    h = TableHarness(tmp_path)
    h.writer.heartbeat = beats = _Heartbeats()
    first = h.start()
    assert beats.started == [first.requested_time]
    beats.fail = True
    with pytest.raises(OSError, match="cannot write the heartbeat"):
        h.start()
    assert [i.requested_time for i in h.table.timeline().pending().instants] == [
        first.requested_time
    ]
