"""Both kinds of write markers: names, files, the server's folder state, reading either kind, and
rollback and finalize over timeline-server markers."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from models.format.commit_metadata import WriteStat
from models.format.rollback_metadata import read_rollback_plan
from models.ports import run
from models.storage import InMemoryStorage
from models.write import heartbeat
from models.write.finalize import finalize_write
from models.write.marker_dir_state import MarkerDirState
from models.write.markers import (
    MARKER_TYPE_FILE,
    TIMELINE_SERVER_BASED,
    DirectWriteMarkers,
    delete_markers,
    list_markers,
    marker_name,
    marker_type_of,
    parse_marker_name,
    read_server_marker_files,
)
from models.write.rollback import rollback
from tests.table_harness import START_MS, TableHarness, rows

INSTANT = "20260101000000000"
FG_A = "aaaaaaaa-0000-4000-8000-000000000001-0"
FG_B = "bbbbbbbb-0000-4000-8000-000000000002-0"


@dataclass
class ServerMarkersNow:
    """Timeline-server markers written at once (the server's batch of one request)."""

    storage: InMemoryStorage
    threads: int = 2
    states: dict[str, MarkerDirState] = field(default_factory=dict)

    def create_if_not_exists(self, instant_time, partition, file_name, io_type) -> bool:
        state = self.states.setdefault(
            instant_time, MarkerDirState(self.storage, instant_time, self.threads)
        )
        index = state.next_file_index()
        assert index is not None
        (created,) = state.accept(index, [marker_name(partition, file_name, io_type)])
        state.flush(index)
        state.release(index)
        return created


def test_marker_names_are_hudis():
    assert marker_name("p=1", "f1_1-0-1_001.parquet", "CREATE") == (
        "p=1/f1_1-0-1_001.parquet.marker.CREATE"
    )
    assert marker_name("", "f1_1-0-1_001.parquet", "MERGE") == "f1_1-0-1_001.parquet.marker.MERGE"
    marker = parse_marker_name("a/b/f.parquet.marker.APPEND", "x")
    assert marker is not None and (marker.partition, marker.file_name) == ("a/b", "f.parquet")
    assert marker.marker_type == "APPEND" and marker.data_path == "a/b/f.parquet"
    assert parse_marker_name("f.parquet.marker.BOGUS", "x") is None
    assert parse_marker_name("MARKERS0", "x") is None


def test_a_direct_marker_is_one_empty_file_created_once():
    storage = InMemoryStorage()
    markers = DirectWriteMarkers(storage)
    assert markers.create_if_not_exists(INSTANT, "p=1", "f.parquet", "CREATE")
    assert not markers.create_if_not_exists(INSTANT, "p=1", "f.parquet", "CREATE")
    assert list(storage.paths()) == [f".hoodie/.temp/{INSTANT}/p=1/f.parquet.marker.CREATE"]
    assert storage.read(f".hoodie/.temp/{INSTANT}/p=1/f.parquet.marker.CREATE") == b""
    assert marker_type_of(storage, INSTANT) is None


def test_the_server_state_writes_type_file_then_whole_worker_files():
    storage = InMemoryStorage()
    state = MarkerDirState(storage, INSTANT, 3)
    first = state.next_file_index()
    second = state.next_file_index()
    assert (first, second) == (0, 1)
    assert state.accept(0, ["p=1/a.parquet.marker.CREATE", "p=1/a.parquet.marker.CREATE"]) == [
        True,
        False,
    ]
    state.flush(0)
    assert marker_type_of(storage, INSTANT) == TIMELINE_SERVER_BASED
    assert storage.read(f".hoodie/.temp/{INSTANT}/MARKERS0") == b"p=1/a.parquet.marker.CREATE\n"
    assert state.accept(1, ["b.parquet.marker.MERGE"]) == [True]
    state.flush(1)
    state.release(0)
    state.release(1)
    assert state.accept(0, ["p=2/c.parquet.marker.CREATE"]) == [True]
    state.flush(0)
    assert read_server_marker_files(storage, INSTANT) == {
        0: ["p=1/a.parquet.marker.CREATE", "p=2/c.parquet.marker.CREATE"],
        1: ["b.parquet.marker.MERGE"],
    }


def test_worker_files_are_handed_out_round_robin_and_only_when_free():
    state = MarkerDirState(InMemoryStorage(), INSTANT, 2)
    assert [state.next_file_index(), state.next_file_index(), state.next_file_index()] == [
        0,
        1,
        None,
    ]
    state.release(0)
    assert state.next_file_index() == 0
    state.release(1)
    state.release(0)
    assert state.next_file_index() == 1


def test_a_restarted_server_rebuilds_its_state_from_the_files():
    storage = InMemoryStorage()
    state = MarkerDirState(storage, INSTANT, 2)
    state.accept(1, ["p=1/a.parquet.marker.CREATE"])
    state.flush(1)
    again = MarkerDirState(storage, INSTANT, 2)
    assert again.type_written
    assert again.accept(0, ["p=1/a.parquet.marker.CREATE", "p=1/b.parquet.marker.CREATE"]) == [
        False,
        True,
    ]
    again.flush(0)
    assert read_server_marker_files(storage, INSTANT) == {
        0: ["p=1/b.parquet.marker.CREATE"],
        1: ["p=1/a.parquet.marker.CREATE"],
    }


def test_a_rebuilt_file_runs_its_lines_together_on_the_next_batch():
    """Hudi's ``syncMarkersFromFileSystem`` seeds a file's buffer with its names joined by ``,``
    and no line end; the next batch appends ``name\n`` after it, so the rewritten file holds one
    line that names no marker file."""
    storage = InMemoryStorage()
    state = MarkerDirState(storage, INSTANT, 1)
    state.accept(0, ["a.parquet.marker.CREATE", "b.parquet.marker.CREATE"])
    state.flush(0)
    again = MarkerDirState(storage, INSTANT, 1)
    assert again.buffers == {0: "a.parquet.marker.CREATE,b.parquet.marker.CREATE"}
    again.accept(0, ["c.parquet.marker.CREATE"])
    again.flush(0)
    (line,) = read_server_marker_files(storage, INSTANT)[0]
    assert line == "a.parquet.marker.CREATE,b.parquet.marker.CREATEc.parquet.marker.CREATE"
    assert [m.file_name for m in list_markers(storage, INSTANT)] == [
        "a.parquet.marker.CREATE,b.parquet.marker.CREATEc.parquet"
    ]


def test_a_failed_write_forgets_its_batch():
    state = MarkerDirState(InMemoryStorage(), INSTANT, 1)
    state.accept(0, ["a.parquet.marker.CREATE"])
    state.accept(0, ["b.parquet.marker.CREATE", "b.parquet.marker.CREATE"])
    state.forget(0)
    assert state.markers == {"a.parquet.marker.CREATE"}
    assert state.accept(0, ["b.parquet.marker.CREATE"]) == [True]
    assert state.buffers[0] == "a.parquet.marker.CREATE\nb.parquet.marker.CREATE\n"


def test_a_batch_of_duplicates_writes_only_the_type_file():
    storage = InMemoryStorage()
    state = MarkerDirState(storage, INSTANT, 1)
    state.markers.add("a.parquet.marker.CREATE")
    assert state.accept(0, ["a.parquet.marker.CREATE"]) == [False]
    state.flush(0)
    assert list(storage.paths()) == [f".hoodie/.temp/{INSTANT}/MARKERS.type"]


def test_both_kinds_are_listed_and_deleted_alike():
    direct, server = InMemoryStorage(), InMemoryStorage()
    for markers in (DirectWriteMarkers(direct), ServerMarkersNow(server)):
        markers.create_if_not_exists(INSTANT, "p=2", "z.parquet", "MERGE")
        markers.create_if_not_exists(INSTANT, "p=1", "a.parquet", "CREATE")
        markers.create_if_not_exists(INSTANT, "", "n.parquet", "CREATE")
    want = [
        ("", "n.parquet", "CREATE"),
        ("p=1", "a.parquet", "CREATE"),
        ("p=2", "z.parquet", "MERGE"),
    ]
    for storage in (direct, server):
        got = [(m.partition, m.file_name, m.marker_type) for m in list_markers(storage, INSTANT)]
        assert got == want
        delete_markers(storage, INSTANT)
        assert list_markers(storage, INSTANT) == []
        assert not storage.exists(f".hoodie/.temp/{INSTANT}/{MARKER_TYPE_FILE}")


def test_finalize_reads_timeline_server_markers(tmp_path):
    h = TableHarness(tmp_path / "t")
    h.writer.markers = ServerMarkersNow(h.storage)
    instant = h.start()
    kept = h.writer.write_base_file(instant, "p=1", FG_A, rows(["a"], 1, 1))
    stray = h.writer.write_base_file(instant, "p=1", FG_B, rows(["b"], 1, 1))
    assert marker_type_of(h.storage, instant.requested_time) == TIMELINE_SERVER_BASED
    assert finalize_write(h.storage, instant.requested_time, [kept]) == [stray.path]
    assert not h.storage.exists(stray.path) and h.storage.exists(kept.path)


@pytest.mark.parametrize("kind", ["direct", "timeline_server"])
def test_rollback_finds_files_through_either_kind(tmp_path, kind):
    h = TableHarness(tmp_path / kind)
    if kind == "timeline_server":
        h.writer.markers = ServerMarkersNow(h.storage)
    failed = h.start()
    stats: list[WriteStat] = [
        h.writer.write_base_file(failed, "p=1", FG_A, rows(["a"], 1, 1)),
        h.writer.append_log_file(failed, "p=2", FG_B, rows(["x"], 1, 1, "p=2")),
    ]
    heartbeat.start(h.storage, failed.requested_time, START_MS)
    done = run(rollback(h.table, h.writer, failed, h.generator), h.clock)
    plan = read_rollback_plan(h.table.active_timeline.read_content(done.requested()))
    assert set(plan.files_to_delete()) == {s.path for s in stats}
    assert not any(h.storage.exists(s.path) for s in stats)
    assert list_markers(h.storage, failed.requested_time) == []
