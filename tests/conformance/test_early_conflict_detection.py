"""Hudi's early-conflict-detection tests, ported onto :mod:`models.write.early_conflict` and the
scenario schema with Hudi's assertions.

- ``TestHoodieClientMultiWriter#testHoodieClientBasicMultiWriterWithEarlyConflictDetection``,
  the direct strategy's case (``SimpleDirectMarkerBasedDetectionStrategy``;
  ``hudi-spark-datasource/hudi-spark/src/test/java/org/apache/hudi/client/``).
- ``TestHoodieWriteConfig#testNonBlockingConcurrencyControlInvalidEarlyConflictDetection``
  (``hudi-client/hudi-client-common``).
- ``TestMarkerBasedEarlyConflictDetectionRunnable#testMarkerConflictDetectionRunnable``
  (``hudi-timeline-service/src/test/java/org/apache/hudi/timeline/service/handlers/marker/``), on
  :class:`~models.write.early_conflict.TimelineServerMarkerDetection`.

Translations. Hudi's clients write through Spark, each upsert task creating its markers; here each
client is a :class:`~models.write.writer.TableWriter` whose markers run the direct strategy, and a
client's write is one log file per file group it updates, in file-group order (the Spark job's
tasks). Hudi's ``assertThrows(SparkException)`` around client3's write is the strategy's
:class:`HoodieEarlyConflictDetectionException`, which Spark wraps. Each client starts its
instant's heartbeat (LAZY cleaning, forced by OCC) and its commit stops it after the marker
folder is deleted (``BaseHoodieWriteClient#postCommit``). Hudi's ``Thread.sleep(20000)`` with
client4's heartbeat interval of 10 s (tolerance 20 s) is the storage's clock moving past the
tolerance. Hudi's ``hoodie.write.concurrency.mode`` and the NBCC config builder are the scenario
keys ``[[jobs]] concurrency`` and ``early_conflict_detection``. The runnable test's
``maxAllowableHeartbeatIntervalInMs = Long.MAX_VALUE`` keeps instant 001's missing heartbeat
(time 0) live; here 001 gets a heartbeat and the tolerance is as large (the model calls a missing
heartbeat expired outright); its mocked ``MarkerHandler#getAllMarkers`` is the set of 002's
markers the runnable compares; Hudi's ``001``/``002`` are 17-digit times; the commit-conflict
part (``checkCommitConflict``, an empty commit) adds nothing, and is not modelled.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from models.format.properties import MERGE_ON_READ
from models.ports import FakeClock, FakeWorld, LocalLock, run
from models.storage import InMemoryStorage
from models.timeline.active import Timeline
from models.timeline.truetime import make_time_generator
from models.write import heartbeat
from models.write.early_conflict import (
    DirectMarkerDetection,
    EarlyConflictDetectingMarkers,
    HoodieEarlyConflictDetectionException,
    TimelineServerMarkerDetection,
)
from models.write.markers import DirectWriteMarkers
from models.write.table_init import create_table
from models.write.writer import TableWriter
from scenarios.errors import ScenarioError
from scenarios.schema import scenario_from_dict

START_MS = 1_767_225_600_000
INTERVAL_MS = 60_000
CLIENT4_INTERVAL_MS = 10_000
MISSES = 2
FILE_GROUPS = (
    "00000000-aaaa-4bbb-8ccc-dddddddddddd-0",
    "00000001-aaaa-4bbb-8ccc-dddddddddddd-0",
)


def records(ids: list[str], ts: int) -> pa.Table:
    n = len(ids)
    return pa.table(
        {
            "id": pa.array(ids, pa.string()),
            "ts": pa.array([ts] * n, pa.int64()),
            "part": pa.array(["2016"] * n, pa.string()),
        }
    )


class MultiWriter:
    """One MERGE_ON_READ table on in-memory storage; every client shares its clock."""

    def __init__(self) -> None:
        self.world = FakeWorld(START_MS)
        self.clock = FakeClock(self.world)
        self.storage = InMemoryStorage()
        self.storage.now_ms = START_MS
        self.table = create_table(
            self.storage,
            name="t",
            table_type=MERGE_ON_READ,
            record_key_field="id",
            ordering_field="ts",
            partition_fields=("part",),
        )
        generator = make_time_generator("truetime", clock=self.clock, lock=LocalLock())
        self.writer = TableWriter(self.table, generator)

    def advance(self, ms: int) -> None:
        self.world.advance(ms)
        self.storage.now_ms = self.world.now_ms

    def client(self, interval_ms: int = INTERVAL_MS) -> TableWriter:
        """A write client with early conflict detection on its markers."""
        detection = DirectMarkerDetection(
            self.storage,
            now_ms=lambda: self.world.now_ms,
            timeline=self.table.timeline,
            heartbeat_interval_ms=interval_ms,
            tolerable_misses=MISSES,
        )
        self.writer.markers = EarlyConflictDetectingMarkers(
            DirectWriteMarkers(self.storage),
            detection,
        )
        return self.writer

    def upsert(self, writer: TableWriter, ts: int):
        """Start an instant (and its heartbeat) and update every file group's keys."""
        instant = run(writer.start_commit(), self.clock)
        heartbeat.start(self.storage, instant.requested_time, self.world.now_ms)
        stats = []
        try:
            for index, file_id in enumerate(FILE_GROUPS):
                keys = [f"k{index}-{n}" for n in range(50)]
                stats.append(writer.append_log_file(instant, "2016", file_id, records(keys, ts)))
        finally:
            self.pending = (instant, stats)
        return instant, stats

    def commit(self, writer: TableWriter, instant, stats) -> None:
        run(writer.commit(instant, stats, "UPSERT"), self.clock)
        heartbeat.stop(self.storage, instant.requested_time)


def test_hoodie_client_basic_multi_writer_with_early_conflict_detection_direct():
    t = MultiWriter()
    c1 = t.upsert(t.client(), ts=1)  # client1 inserts and commits "001"
    t.commit(t.writer, *c1)
    c2 = t.upsert(t.client(), ts=2)  # client2 writes "002", not committed yet
    with pytest.raises(HoodieEarlyConflictDetectionException):  # assertThrows: client3, "003"
        t.upsert(t.client(), ts=3)
    c3_instant = t.pending[0]
    t.commit(t.writer, *c2)  # assertDoesNotThrow: client2 commits "002"
    heartbeat.start(t.storage, c3_instant.requested_time, t.world.now_ms)  # re-created
    t.advance(MISSES * CLIENT4_INTERVAL_MS + 1)  # Thread.sleep(20000): 003's heartbeat expires
    c4 = t.upsert(t.client(interval_ms=CLIENT4_INTERVAL_MS), ts=4)  # assertDoesNotThrow
    t.commit(t.writer, *c4)
    completed = {i.requested_time for i in t.table.timeline().completed()}
    assert len(completed) == 3
    assert completed == {c1[0].requested_time, c2[0].requested_time, c4[0].requested_time}


def test_non_blocking_concurrency_control_invalid_early_conflict_detection():
    data = {
        "scenario": {"name": "nbcc_ecd", "description": "NBCC with early detection"},
        "table": {"type": "MERGE_ON_READ"},
        "jobs": [{"name": "a", "concurrency": "nbcc", "early_conflict_detection": True}],
    }
    with pytest.raises(ScenarioError, match="OPTIMISTIC_CONCURRENCY_CONTROL"):
        scenario_from_dict(data)


def test_marker_conflict_detection_runnable():
    storage = InMemoryStorage()
    storage.now_ms = START_MS
    old, current = "00000000000000001", "00000000000000002"
    storage.write(f".hoodie/.temp/{old}/MARKERS.type", b"TIMELINE_SERVER_BASED")
    names = [
        "2016/b21adfa2-7013-4452-a565-4cc39fea5b73-0_4-17-21_001.parquet.marker.CREATE",
        "2016/4a266542-c7d5-426f-8fb8-fb85a2e88448-0_3-17-20_001.parquet.marker.CREATE",
    ]
    storage.write(f".hoodie/.temp/{old}/MARKERS0", "\n".join(names).encode())
    heartbeat.start(storage, old, START_MS)
    candidates = DirectMarkerDetection(
        storage, now_ms=lambda: START_MS, timeline=lambda: Timeline(()), heartbeat_interval_ms=2**62
    )
    current_markers = {
        "2016/b21adfa2-7013-4452-a565-4cc39fea5b73-0_40-170-210_002.parquet.marker.MERGE",
        "2016/1228caeb-4188-4e19-a18d-848e6f9b0448-0_55-55-425_002.parquet.marker.MERGE",
    }
    has_conflict = TimelineServerMarkerDetection(candidates).conflict(current, current_markers)
    assert has_conflict is not None  # hasConflict.get() == true
    assert has_conflict == (old, "2016/b21adfa2-7013-4452-a565-4cc39fea5b73-0")
