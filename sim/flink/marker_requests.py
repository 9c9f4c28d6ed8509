"""A write task's markers sent to the coordinator's timeline server
(``TimelineServerBasedWriteMarkers``, ``[table] markers = "timeline_server"``).

A flush's write code runs over a :class:`~sim.staged_storage.StagedStorage` with
:class:`MarkerRequests` as its markers: the handles' marker names are kept, their data files held
back. The task then sends the names one by one, as Hudi's handles do (each waits for its marker
before writing its file), and the files are written once every marker is answered. A failed
request (the server gone or its write failed) fails the task with ``HoodieRemoteException``; a
name the server already had is answered False, which the Flink handles ignore
(``createIfNotExists`` returns empty).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any, TypeVar

import simpy

from models.storage import Storage
from models.write.early_conflict import HoodieEarlyConflictDetectionException
from models.write.markers import marker_name, parse_marker_name
from models.write.writer import TableWriter
from sim.marker_server import MarkerServer
from sim.staged_storage import StagedStorage
from sim.storage import SimStorage

T = TypeVar("T")


@dataclass
class MarkerRequests:
    """The markers a flush's handles create, in order: (instant, name) pairs."""

    names: list[tuple[str, str]] = field(default_factory=list)

    def create_if_not_exists(
        self, instant_time: str, partition: str, file_name: str, io_type: str
    ) -> bool:
        self.names.append((instant_time, marker_name(partition, file_name, io_type)))
        return True


def staged_writer(
    writer: TableWriter, probe: Storage
) -> tuple[TableWriter, StagedStorage, MarkerRequests]:
    """``writer`` writing to a staged storage and keeping its markers as requests; ``probe``
    answers the staged creates' existence checks (:class:`~sim.staged_storage.StagedStorage`)."""
    staged = StagedStorage(writer.storage, probe)
    requests = MarkerRequests()
    staging = copy.copy(writer)
    staging.storage = staged
    staging.markers = requests
    return staging, staged, requests


def send_markers(server: MarkerServer, requests: MarkerRequests) -> Generator[Any, Any, None]:
    """Create each marker on ``server`` and wait for its answer before the next. With early
    conflict detection a False answer throws (``TimelineServerBasedWriteMarkers
    #createWithEarlyConflictDetection``: "Early conflict detected but cannot resolve conflicts
    for overlapping writes"), whether the server found a conflict or already had the name."""
    for instant_time, name in requests.names:
        asked_ms = server.env.now
        try:
            created = yield server.create_marker(instant_time, name)
        finally:
            server.stats.answer_wait_ms += int(server.env.now - asked_ms)
        if not created and server.early_conflict is not None:
            raise _refused(server, instant_time, name)


def _refused(server: MarkerServer, instant_time: str, name: str) -> Exception:
    """The client's exception for a refused marker; the conflicting instant is the server's
    finding (for the history: Hudi's message does not name it)."""
    marker = parse_marker_name(name, "")
    partition, file_name = (marker.partition, marker.file_name) if marker else ("", name)
    found = server.early_conflict.found if server.early_conflict else None
    return HoodieEarlyConflictDetectionException(
        instant_time,
        found[0] if found else "",
        partition,
        file_name.lstrip(".").split("_", 1)[0],
    )


def write_after_markers(
    env: simpy.Environment,
    storage: SimStorage,
    server: MarkerServer,
    writer: TableWriter,
    write: Callable[[TableWriter], T],
) -> Generator[Any, Any, T]:
    """Run ``write`` over a staged storage and wait for the requests it made (its reads), send
    its markers one by one, then write its files and wait for those requests."""
    mark = storage.usage()
    staging, staged, requests = staged_writer(writer, storage.inner)
    result = write(staging)
    yield env.timeout(storage.latency_since(mark))
    yield from send_markers(server, requests)
    mark = storage.usage()
    staged.apply()
    yield env.timeout(storage.latency_since(mark))
    return result


__all__ = ["MarkerRequests", "send_markers", "staged_writer", "write_after_markers"]
