"""Early conflict detection (RFC-56): with direct markers Hudi's
``SimpleDirectMarkerBasedDetectionStrategy``, with timeline-server markers the server's check
(``AsyncTimelineServerBasedDetectionStrategy``), as ``hoodie.write.markers.type`` infers them
(``ConflictDetectionUtils#getDefaultEarlyConflictDetectionStrategy``).

With ``hoodie.write.concurrency.early.conflict.detection.enable`` and the concurrency mode exactly
``OPTIMISTIC_CONCURRENCY_CONTROL``, a write handle checks other writers' markers before it creates
its own (``WriteMarkers#createWithEarlyConflictDetection``) and throws
:class:`HoodieEarlyConflictDetectionException` on a hit, failing the task long before the OCC check
at commit would (which stays). Flink reaches it only for new log files of MERGE_ON_READ tables: the
log-creation callback of the common ``HoodieWriteHandle`` calls the detecting
``createLogMarkerIfNotExists`` (Hudi 0.14 and later), while Flink's base-file handles create their
markers through the plain 3-argument ``createIfNotExists``.

The check, per marker (``DirectMarkerBasedDetectionStrategy#checkMarkerConflict`` over
``MarkerUtils#getCandidateInstants``):

- candidates: every folder under ``.hoodie/.temp`` whose instant is strictly older than the
  writer's (a string compare: the newer writer fails, never the older), that is neither a pending
  compaction nor a pending replace/clustering, and whose heartbeat is not expired on the checking
  process's clock (``HoodieHeartbeatUtils#isHeartbeatExpired``: strictly more than
  ``interval x tolerable misses`` since the heartbeat file's modification time, a missing file
  counting as time 0). Whether the candidate completed is not asked: its marker folder and
  heartbeat go at commit.
- conflict: a candidate's marker folder of the same partition holds an entry whose name contains
  the file id (direct markers only; a candidate that wrote ``MARKERS<n>`` files has no partition
  folder and contributes nothing).

The timeline server's check (:class:`TimelineServerMarkerDetection`; when it runs and what it
refuses is ``sim/marker_server.py``'s) compares the current instant's markers with the candidates'
``MARKERS<n>`` files by ``<partition>/<file id>``.

Not modelled: ``hoodie.write.concurrency.early.conflict.check.commit.conflict`` (default false),
the ZooKeeper-locked ``SimpleTransactionDirectMarkerBasedDetectionStrategy``, and the writer's
timeline being its cached one (the pending table services are read from storage at each check).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from models.storage import Storage, join
from models.table_errors import HoodieException
from models.timeline.active import Timeline
from models.timeline.instant import State
from models.view.filenames import parse_log_file_name
from models.write.heartbeat import (
    DEFAULT_HEARTBEAT_INTERVAL_MS,
    DEFAULT_TOLERABLE_MISSES,
    is_expired,
)
from models.write.markers import MARKERS_FOLDER, WriteMarkers, read_server_marker_files

TABLE_SERVICE_ACTIONS = ("compaction", "logcompaction", "clustering", "replacecommit")
"""Pending actions that are never candidates (``filterPendingCompactionTimeline``,
``filterPendingReplaceOrClusteringTimeline``)."""


class HoodieEarlyConflictDetectionException(HoodieException, RuntimeError):
    """A marker of an older live writer names this file group (Hudi's exception wraps
    ``ConcurrentModificationException("Early conflict detected but cannot resolve conflicts for
    overlapping writes")``); the write handle throws it and the task fails."""

    def __init__(self, instant_time: str, other: str, partition: str, file_id: str) -> None:
        super().__init__(
            "java.util.ConcurrentModificationException: Early conflict detected but cannot "
            f"resolve conflicts for overlapping writes (instant {instant_time}, file group "
            f"{file_id} of {partition or 'the table'}, marker of instant {other})"
        )
        self.instant_time = instant_time
        self.other = other
        self.partition = partition
        self.file_id = file_id


@dataclass(frozen=True)
class DirectMarkerDetection:
    """``SimpleDirectMarkerBasedDetectionStrategy`` on ``storage``; ``now_ms`` is the checking
    process's clock, ``timeline()`` its view of the table's timeline."""

    storage: Storage
    now_ms: Callable[[], int]
    timeline: Callable[[], Timeline]
    heartbeat_interval_ms: int = DEFAULT_HEARTBEAT_INTERVAL_MS
    tolerable_misses: int = DEFAULT_TOLERABLE_MISSES
    skip_expired_heartbeats: bool = True
    """Hudi's filter on ``isHeartbeatExpired``; False keeps every older instant, as if its writer
    were alive (``[protocol] early_conflict_heartbeats = "expired_as_live"``)."""

    def candidate_instants(self, instant_time: str) -> list[str]:
        """``MarkerUtils#getCandidateInstants``: older, not a table service, heartbeat live."""
        older = sorted(i for i in self.storage.list_subdirs(MARKERS_FOLDER) if i < instant_time)
        if not older:
            return []
        services = {
            i.requested_time
            for i in self.timeline()
            if i.state != State.COMPLETED and i.action in TABLE_SERVICE_ACTIONS
        }
        now = self.now_ms()
        return [
            i
            for i in older
            if i not in services
            and not (
                self.skip_expired_heartbeats
                and is_expired(
                    self.storage, i, now, self.heartbeat_interval_ms, self.tolerable_misses
                )
            )
        ]

    def check(self, instant_time: str, partition: str, file_id: str) -> None:
        """Raise :class:`HoodieEarlyConflictDetectionException` when a candidate's markers of
        ``partition`` name ``file_id`` (``checkMarkerConflict``)."""
        for other in self.candidate_instants(instant_time):
            folder = (
                join(MARKERS_FOLDER, other, partition) if partition else join(MARKERS_FOLDER, other)
            )
            if any(file_id in f.name for f in self.storage.list_dir(folder)):
                raise HoodieEarlyConflictDetectionException(instant_time, other, partition, file_id)


def partition_and_file_id(marker: str) -> str:
    """A marker name's conflict key, ``<partition>/<file id>``: the name up to its first ``_``
    (``MarkerUtils#makerToPartitionAndFileID``; a log file's key keeps its leading dot)."""
    return marker.split("_", 1)[0]


@dataclass(frozen=True)
class TimelineServerMarkerDetection:
    """One run of the timeline server's check (``MarkerBasedEarlyConflictDetectionRunnable``,
    ``AsyncTimelineServerBasedDetectionStrategy``): the current instant's markers, in memory,
    against the ``MARKERS<n>`` files of the same candidates as the direct strategy's."""

    candidates: DirectMarkerDetection

    def conflict(self, instant_time: str, markers: Iterable[str]) -> tuple[str, str] | None:
        """The first (candidate instant, conflict key) the two share, or None."""
        keys = {partition_and_file_id(m) for m in markers}
        if not keys:
            return None
        storage = self.candidates.storage
        for other in self.candidates.candidate_instants(instant_time):
            for _, names in sorted(read_server_marker_files(storage, other).items()):
                hit = next((k for n in names if (k := partition_and_file_id(n)) in keys), None)
                if hit is not None:
                    return other, hit
        return None


@dataclass(frozen=True)
class EarlyConflictDetectingMarkers:
    """A Flink write task's markers with early conflict detection: a new log file's marker is
    created after the check (``createLogMarkerIfNotExists``), every other marker as ``inner``
    creates it."""

    inner: WriteMarkers
    detection: DirectMarkerDetection

    def create_if_not_exists(
        self, instant_time: str, partition: str, file_name: str, io_type: str
    ) -> bool:
        if file_name.startswith("."):  # a log file: its name starts with a dot
            file_id = parse_log_file_name(file_name).file_id
            self.detection.check(instant_time, partition, file_id)
        return self.inner.create_if_not_exists(instant_time, partition, file_name, io_type)


__all__ = [
    "DirectMarkerDetection",
    "EarlyConflictDetectingMarkers",
    "HoodieEarlyConflictDetectionException",
    "TimelineServerMarkerDetection",
    "partition_and_file_id",
]
