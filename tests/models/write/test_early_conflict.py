"""Tests for models/write/early_conflict.py: which instants the direct strategy looks at (older,
not a pending table service, heartbeat live on the checker's clock), what it calls a conflict
(a marker of the same partition naming the file id), and that only new log files are checked."""

from __future__ import annotations

from dataclasses import replace

import pytest

from models.storage import InMemoryStorage
from models.timeline.active import Timeline
from models.timeline.instant import Instant, State
from models.write import heartbeat
from models.write.early_conflict import (
    DirectMarkerDetection,
    EarlyConflictDetectingMarkers,
    HoodieEarlyConflictDetectionException,
)
from models.write.markers import DirectWriteMarkers, list_markers

INTERVAL_MS = 1_000
MISSES = 2
FG = "00000001-aaaa-4bbb-8ccc-dddddddddddd-0"
OTHER_FG = "00000002-aaaa-4bbb-8ccc-dddddddddddd-0"


def t(n: int) -> str:
    return f"2026010100{n:07d}"


def log_name(file_id: str, n: int) -> str:
    return f".{file_id}_{t(n)}.log.1_0-1-0"


class World:
    """A table's storage at ``now_ms``, with pending instants whose markers and heartbeats the
    tests place."""

    def __init__(self) -> None:
        self.storage = InMemoryStorage()
        self.now_ms = 10_000
        self.timeline = Timeline(())

    def detection(self) -> DirectMarkerDetection:
        return DirectMarkerDetection(
            self.storage,
            now_ms=lambda: self.now_ms,
            timeline=lambda: self.timeline,
            heartbeat_interval_ms=INTERVAL_MS,
            tolerable_misses=MISSES,
        )

    def write(self, n: int, file_id: str, partition: str = "p=1", beat: bool = True) -> None:
        """Instant ``n`` marks a log file of ``file_id`` and beats now."""
        self.storage.now_ms = self.now_ms
        DirectWriteMarkers(self.storage).create_if_not_exists(
            t(n), partition, log_name(file_id, n), "CREATE"
        )
        if beat:
            heartbeat.refresh(self.storage, t(n), now_ms=self.now_ms)


@pytest.fixture
def world() -> World:
    return World()


def test_an_older_live_writers_marker_of_the_file_group_is_a_conflict(world):
    world.write(1, FG)
    with pytest.raises(HoodieEarlyConflictDetectionException, match="Early conflict detected") as e:
        world.detection().check(t(2), "p=1", FG)
    assert (e.value.instant_time, e.value.other, e.value.file_id) == (t(2), t(1), FG)


def test_the_older_writer_never_sees_the_newer_one(world):
    world.write(2, FG)
    world.detection().check(t(1), "p=1", FG)  # no raise: only older instants are candidates
    assert world.detection().candidate_instants(t(2)) == []  # nor its own


def test_another_file_group_or_partition_is_no_conflict(world):
    world.write(1, FG)
    world.detection().check(t(2), "p=1", OTHER_FG)
    world.detection().check(t(2), "p=2", FG)


def test_the_heartbeat_is_live_up_to_the_tolerance_and_expired_after_it(world):
    world.write(1, FG)
    tolerance = INTERVAL_MS * MISSES
    world.now_ms += tolerance  # exactly the tolerance: still live (strictly more expires)
    assert world.detection().candidate_instants(t(2)) == [t(1)]
    world.now_ms += 1
    assert world.detection().candidate_instants(t(2)) == []
    world.detection().check(t(2), "p=1", FG)


def test_expired_as_live_keeps_a_dead_writers_markers_a_conflict(world):
    """``[protocol] early_conflict_heartbeats = "expired_as_live"``: no heartbeat filter."""
    world.write(1, FG, beat=False)
    world.write(3, FG)
    world.now_ms += INTERVAL_MS * MISSES + 1  # both expired
    detection = replace(world.detection(), skip_expired_heartbeats=False)
    assert detection.candidate_instants(t(4)) == [t(1), t(3)]
    with pytest.raises(HoodieEarlyConflictDetectionException):
        detection.check(t(4), "p=1", FG)


def test_an_instant_without_heartbeat_is_expired(world):
    world.write(1, FG, beat=False)
    assert world.detection().candidate_instants(t(2)) == []


def test_pending_compactions_and_clustering_are_no_candidates(world):
    world.write(1, FG)
    world.write(2, FG)
    world.write(3, FG)
    world.timeline = Timeline(
        (
            Instant(t(1), State.INFLIGHT, "compaction"),
            Instant(t(2), State.REQUESTED, "clustering"),
            Instant(t(3), State.INFLIGHT, "deltacommit"),
        )
    )
    assert world.detection().candidate_instants(t(4)) == [t(3)]


def test_only_new_log_files_are_checked_before_their_marker(world):
    world.write(1, FG)
    markers = EarlyConflictDetectingMarkers(
        DirectWriteMarkers(world.storage),
        world.detection(),
    )
    base = f"{FG}_0-1-0_{t(2)}.parquet"
    assert markers.create_if_not_exists(t(2), "p=1", base, "CREATE")  # Flink's base handles
    with pytest.raises(HoodieEarlyConflictDetectionException):
        markers.create_if_not_exists(t(2), "p=1", log_name(FG, 2), "CREATE")
    assert [m.file_name for m in list_markers(world.storage, t(2))] == [base]  # none for the log
