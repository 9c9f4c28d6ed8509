"""Rollback of failed writes from their markers: files gone, a completed rollback on the timeline,
the table reads as before the failed write (ours and hudi-rs)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from models.format.properties import COPY_ON_WRITE
from models.format.rollback_metadata import InstantInfo, read_rollback_metadata, read_rollback_plan
from models.ports import run
from models.timeline.instant import Instant, State
from models.view.reader import read_snapshot
from models.write import heartbeat
from models.write.markers import list_markers
from models.write.rollback import RollbackError, plan_rollback, rollback
from tests import hudi_oracle
from tests.table_harness import START_MS, TableHarness, rows

FG_A = "aaaaaaaa-0000-4000-8000-000000000001-0"
FG_B = "bbbbbbbb-0000-4000-8000-000000000002-0"
FG_C = "cccccccc-0000-4000-8000-000000000003-0"


class Harness(TableHarness):
    """The shared harness plus rollback and views of what is on storage."""

    def rollback(self, failed, via=None):
        return run(rollback(self.table, via or self.writer, failed, self.generator), self.clock)

    def data_files(self) -> set[str]:
        return {
            f"{part}/{f.name}"
            for part in ("p=1", "p=2")
            for f in self.storage.list_dir(part)
            if not f.name.startswith(".hoodie_partition")
        }

    def timeline_names(self) -> list[str]:
        return [f.name for f in self.storage.list_dir(".hoodie/timeline")]

    def slices(self):
        return [
            (s.partition, s.file_id, s.base_instant, [lf.name for lf in s.log_files])
            for s in self.table.latest_file_slices()
        ]


def values(table: pa.Table) -> dict[str, int]:
    return dict(zip(table.column("id").to_pylist(), table.column("value").to_pylist(), strict=True))


def assert_hudi_rs_agrees(h: Harness) -> None:
    pytest.importorskip("hudi")
    from tests.testbed.test_cli import same_rows

    assert same_rows(read_snapshot(h.table), hudi_oracle.oracle_read(h.path))
    theirs = hudi_oracle.oracle_file_slices(h.path)
    assert h.slices() == [
        (s["partition"], s["file_id"], s["base_instant"], s["log_files"]) for s in theirs
    ]


def assert_rolled_back(h: Harness, failed: Instant, done: Instant, written: set[str]) -> None:
    assert done.action == "rollback" and done.is_completed
    assert not [n for n in h.timeline_names() if n.startswith(failed.requested_time)]
    assert not written & h.data_files()
    assert list_markers(h.storage, failed.requested_time) == []
    plan = read_rollback_plan(h.table.active_timeline.read_content(done.requested()))
    assert plan.instant_to_rollback == InstantInfo(failed.requested_time, failed.action)
    assert set(plan.files_to_delete()) == written
    meta = read_rollback_metadata(h.table.active_timeline.read_content(done))
    assert meta.commits_rollback == (failed.requested_time,)
    assert meta.instants_rollback == (InstantInfo(failed.requested_time, failed.action),)
    assert set(meta.deleted_files()) == written
    assert meta.total_files_deleted == len(written)
    inflight = Instant(done.requested_time, State.INFLIGHT, "rollback")
    assert h.table.active_timeline.read_content(inflight) == b""


@pytest.mark.oracle
def test_failed_deltacommit_with_logs_is_rolled_back(tmp_path):
    h = Harness(tmp_path / "mor")
    w = h.writer
    c1 = h.start()
    h.commit(
        c1,
        [
            w.write_base_file(c1, "p=1", FG_A, rows(["a", "b"], 1, 1)),
            w.write_base_file(c1, "p=2", FG_B, rows(["x"], 1, 1, "p=2")),
        ],
    )
    d1 = h.start()
    h.commit(d1, [w.append_log_file(d1, "p=1", FG_A, rows(["a"], 2, 2))])
    snapshot, slices, files = read_snapshot(h.table), h.slices(), h.data_files()

    failed = h.start()
    stats = [
        w.append_log_file(failed, "p=1", FG_A, rows(["b"], 3, 3)),
        w.append_log_file(failed, "p=2", FG_B, rows(["x"], 3, 3, "p=2")),
    ]
    written = {s.path for s in stats}
    assert written <= h.data_files()
    heartbeat.start(h.storage, failed.requested_time, START_MS)

    done = h.rollback(failed)
    assert_rolled_back(h, failed, done, written)
    assert h.data_files() == files
    assert read_snapshot(h.table).equals(snapshot)
    assert h.slices() == slices
    assert heartbeat.last_heartbeat_ms(h.storage, failed.requested_time) == 0
    assert_hudi_rs_agrees(h)


@pytest.mark.oracle
def test_failed_commit_with_base_files_is_rolled_back(tmp_path):
    h = Harness(tmp_path / "cow", COPY_ON_WRITE)
    w = h.writer
    c1 = h.start()
    h.commit(c1, [w.upsert_base_file(c1, "p=1", FG_A, rows(["a", "b"], 1, 1))])
    snapshot, slices, files = read_snapshot(h.table), h.slices(), h.data_files()

    failed = h.start()
    stats = [
        w.upsert_base_file(failed, "p=1", FG_A, rows(["a"], 2, 2)),  # a new version of FG_A
        w.write_base_file(failed, "p=1", FG_C, rows(["c"], 2, 2)),  # a new file group
    ]
    written = {s.path for s in stats}
    done = h.rollback(failed, via=h.table.active_timeline)
    assert_rolled_back(h, failed, done, written)
    assert h.data_files() == files
    assert read_snapshot(h.table).equals(snapshot)
    assert values(snapshot) == {"a": 1, "b": 1}
    assert h.slices() == slices
    assert_hudi_rs_agrees(h)
    # the table moves on: a new commit after the rollback
    c3 = h.start()
    h.commit(c3, [w.upsert_base_file(c3, "p=1", FG_A, rows(["a"], 4, 4))])
    assert values(read_snapshot(h.table)) == {"a": 4, "b": 1}


def test_plan_requests_look_like_hudis(tmp_path):
    """Base files: no file id, no base instant (as in the fixture); logs: file id and instant."""
    h = Harness(tmp_path / "t")
    w = h.writer
    failed = h.start()
    base = w.write_base_file(failed, "p=1", FG_A, rows(["a"], 1, 1))
    log = w.append_log_file(failed, "p=1", FG_B, rows(["b"], 1, 1))
    plan = plan_rollback(h.table, failed)
    by_file = {r.files_to_be_deleted: r for r in plan.requests}
    base_request = by_file[(base.path,)]
    assert (base_request.partition_path, base_request.file_id) == ("p=1", "")
    assert base_request.latest_base_instant == ""
    log_request = by_file[(log.path,)]
    assert (log_request.file_id, log_request.latest_base_instant) == (FG_B, failed.requested_time)


def test_a_data_file_without_a_marker_stays_behind(tmp_path):
    """Hudi's marker-based rollback reads the markers and lists no partition: a file whose
    marker is missing is not in the plan (what makes a lost marker a leak)."""
    h = Harness(tmp_path / "t")
    failed = h.start()
    kept = h.writer.append_log_file(failed, "p=1", FG_A, rows(["a"], 1, 1))
    gone = h.writer.append_log_file(failed, "p=2", FG_B, rows(["x"], 1, 1, "p=2"))
    marker = next(m for m in list_markers(h.storage, failed.requested_time) if m.partition == "p=1")
    h.storage.delete(marker.path)
    done = h.rollback(failed)
    plan = read_rollback_plan(h.table.active_timeline.read_content(done.requested()))
    assert plan.files_to_delete() == (gone.path,)
    assert kept.path in h.data_files() and gone.path not in h.data_files()


def test_a_requested_only_instant_is_rolled_back_too(tmp_path):
    h = Harness(tmp_path / "t")
    requested = h.table.active_timeline.create_requested("20260101000000001", "deltacommit")
    done = h.rollback(requested)
    rollback_files = [
        done.requested().file_name(),
        Instant(done.requested_time, State.INFLIGHT, "rollback").file_name(),
        done.file_name(),
    ]
    assert sorted(h.timeline_names()) == sorted(rollback_files)
    meta = read_rollback_metadata(h.table.active_timeline.read_content(done))
    assert meta.deleted_files() == ()


def test_completed_and_unknown_instants_are_refused(tmp_path):
    h = Harness(tmp_path / "t")
    c1 = h.start()
    done = h.commit(c1, [h.writer.write_base_file(c1, "p=1", FG_A, rows(["a"], 1, 1))])
    for instant in (done, c1):  # the inflight handle of a commit that completed meanwhile
        with pytest.raises(RollbackError, match="is completed"):
            h.rollback(instant)
    ghost = Instant("20250101000000000", State.INFLIGHT, "deltacommit")
    with pytest.raises(RollbackError, match="not on the active timeline"):
        h.rollback(ghost)
    with pytest.raises(TypeError):
        run(rollback(h.table, object(), c1, h.generator), h.clock)
    assert h.data_files() == {"p=1/" + done_stat for done_stat in _base_names(h)}
    assert values(read_snapshot(h.table)) == {"a": 1}  # nothing was touched


def _base_names(h: Harness) -> list[str]:
    return [f.name for f in h.storage.list_dir("p=1") if f.name.endswith(".parquet")]


def test_a_failed_compaction_keeps_its_plan_and_runs_again(tmp_path):
    h = Harness(tmp_path / "t")
    w = h.writer
    c1 = h.start()
    h.commit(c1, [w.write_base_file(c1, "p=1", FG_A, rows(["a", "b"], 1, 1))])
    d1 = h.start()
    h.commit(d1, [w.append_log_file(d1, "p=1", FG_A, rows(["a"], 2, 2))])
    scheduled = run(w.schedule_compaction(), h.clock)
    inflight = h.table.active_timeline.transition_to_inflight(scheduled)
    half = w.write_base_file(inflight, "p=1", FG_A, rows(["a"], 9, 9))  # dies mid-way
    snapshot = read_snapshot(h.table)

    h.rollback(inflight)
    assert half.path not in h.data_files()
    state = h.table.timeline().get(scheduled.requested_time)
    assert state == scheduled  # reverted to requested: the plan stays
    assert read_snapshot(h.table).equals(snapshot)
    run(w.run_compaction(state), h.clock)
    assert values(read_snapshot(h.table)) == {"a": 2, "b": 1}
