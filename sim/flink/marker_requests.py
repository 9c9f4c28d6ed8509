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
from models.write.markers import marker_name
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
    """Create each marker on ``server`` and wait for its answer before the next."""
    for instant_time, name in requests.names:
        asked_ms = server.env.now
        try:
            yield server.create_marker(instant_time, name)
        finally:
            server.stats.answer_wait_ms += int(server.env.now - asked_ms)


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
