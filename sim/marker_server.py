"""The embedded timeline server's marker requests (``[table] markers = "timeline_server"``).

Hudi's Flink coordinator starts an embedded timeline server with its write client
(``FlinkWriteClients#createWriteClient``); with ``hoodie.write.markers.type =
TIMELINE_SERVER_BASED`` the write tasks send every marker to it (``TimelineServerBasedWriteMarkers
#create``, an HTTP POST) and the server batches them (``MarkerHandler``):

- a dispatcher runs every ``hoodie.markers.timeline_server_based.batch.interval_ms`` (50) from the
  first request on (``scheduleAtFixedRate``); for each marker folder with requests waiting it
  takes a free worker file (``MarkerDirState#getNextFileIndexToUse``, round robin over
  ``batch.num_threads`` = 20 files; none free: the requests wait for the next round) and hands
  all of them to a batch worker of a pool of ``batch.num_threads`` threads
  (``MarkerCreationDispatchingRunnable``, ``BatchedMarkerCreationRunnable``);
- the worker adds the names (a name seen before is answered False), writes ``MARKERS.type`` once
  and the whole ``MARKERS<n>`` file, and only then completes the requests
  (``MarkerDirState#processMarkerCreationRequests``); a failed write fails them and drops their
  names (apache/hudi#19368);
- a folder's state is built from its files the first time a request names it
  (``MarkerDirState#syncMarkersFromFileSystem``), so a restarted server knows what was written;
- the coordinator's finalize asks it for an instant's created and merged files, answered from
  memory (``MarkerHandler#getCreateAndMergeMarkers``).

The server lives and dies with the coordinator (a JobManager failover starts a new one with
nothing in memory); its requests then fail, as HTTP requests to a dead server do.
``answer_before_write`` answers a batch before writing it (``[protocol] marker_answer =
"before_write"``): the known-bad order, in which a crash or a failed write loses markers whose
data files the tasks go on to write. ``swallow_write_failure`` is Hudi 1.0's and 1.1's failed
write (``[protocol] marker_write_failure = "swallow"``): answered as written, names in memory only.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

import simpy

from models.table_errors import HoodieException, HoodieIOException
from models.write.early_conflict import TimelineServerMarkerDetection
from models.write.marker_dir_state import MarkerDirState, process_marker_creation_requests
from models.write.markers import (
    RECONCILED_MARKER_TYPES,
    created_and_merged_data_paths,
    parse_marker_name,
)
from sim.storage import SimStorage

BATCH_INTERVAL_MS = 50
"""``hoodie.markers.timeline_server_based.batch.interval_ms``'s default."""
BATCH_NUM_THREADS = 20
"""``hoodie.markers.timeline_server_based.batch.num_threads``'s default."""


class HoodieRemoteException(HoodieException, RuntimeError):
    """A request to the timeline server failed (Hudi's ``HoodieRemoteException``)."""


@dataclass
class MarkerServerStats:
    """What the servers did in a run: requests, batches, duplicates refused, requests failed,
    and the tasks' time waiting for answers."""

    requests: int = 0
    batches: int = 0
    duplicates: int = 0
    failed_requests: int = 0
    answer_wait_ms: int = 0
    """How long the write tasks waited for their answers, summed."""

    def summary(self) -> dict[str, int]:
        return dict(vars(self))


@dataclass
class _Request:
    name: str
    answer: simpy.Event


@dataclass
class MarkerServer:
    """One coordinator's marker handler: :meth:`create_marker` returns an event that succeeds
    with True (created) or False (a duplicate), or fails with :class:`HoodieRemoteException`."""

    env: simpy.Environment
    storage: SimStorage
    batch_interval_ms: int = BATCH_INTERVAL_MS
    num_threads: int = BATCH_NUM_THREADS
    answer_before_write: bool = False
    swallow_write_failure: bool = False
    """Hudi 1.0 and 1.1: a failed ``MARKERS<n>`` write is swallowed (``[protocol]
    marker_write_failure = "swallow"``)."""
    name_batch: Callable[[], None] | None = None
    """Called as each batch worker starts: names the writer for the nemesis
    (``<job>/timeline_server``)."""
    stats: MarkerServerStats = field(default_factory=MarkerServerStats)
    early_conflict: ServerConflictDetection | None = None
    """Early conflict detection on the server (the timeline-server strategy), or None."""
    _dirs: dict[str, MarkerDirState] = field(default_factory=dict)
    _pending: dict[str, list[_Request]] = field(default_factory=dict)
    _processes: list[simpy.Process] = field(default_factory=list)
    _pool: simpy.Resource | None = None
    _down: bool = False

    def create_marker(self, instant_time: str, name: str) -> simpy.Event:
        """Queue marker ``name`` of ``instant_time``'s folder (``MarkerHandler#createMarker``)."""
        answer = self.env.event()
        if self._down:
            answer.fail(HoodieRemoteException(f"Failed to create marker file {name}"))
            answer.defused = True  # a task gone meanwhile does not wait for it
            return answer
        self.stats.requests += 1
        if self.early_conflict is not None and self.early_conflict.refuses(self, instant_time):
            answer.succeed(False)  # finishCreateMarkerFuture(false), at once
            return answer
        self._pending.setdefault(instant_time, []).append(_Request(name, answer))
        if self._pool is None:
            self._pool = simpy.Resource(self.env, capacity=self.num_threads)
            self._processes.append(self.env.process(self._dispatch()))
        return answer

    def current_markers(self, instant_time: str) -> set[str]:
        """The folder's markers in memory and those waiting in requests (what the detection
        runnable compares, ``getAllMarkers`` and ``getPendingMarkersToProcess``)."""
        waiting = {r.name for r in self._pending.get(instant_time, [])}
        return set(self._state(instant_time).markers) | waiting

    def crash(self) -> None:
        """The server is gone with its coordinator: waiting requests fail, nothing more is
        written."""
        self._down = True
        if self.early_conflict is not None:
            self.early_conflict.stop()
        for process in self._processes:
            if process.is_alive:
                process.interrupt("coordinator gone")
        for requests in self._pending.values():
            self._fail(requests, "the timeline server is gone")
        self._pending.clear()

    def _dispatch(self) -> Generator[Any, Any, None]:
        try:
            while True:
                yield self.env.timeout(self.batch_interval_ms)
                self._dispatch_round()
        except simpy.Interrupt:
            return

    def created_and_merged_data_paths(self, instant_time: str) -> list[str]:
        """The data files the folder's ``CREATE``/``MERGE`` markers name, from memory, sorted
        (``MarkerHandler#getCreateAndMergeMarkers``, what the coordinator's finalize asks)."""
        if self._down:
            raise HoodieRemoteException(f"Failed to read the markers of {instant_time}")
        state = self._state(instant_time)
        if not state.type_written:  # direct markers: the compactor's, which the model keeps
            return created_and_merged_data_paths(self.storage, instant_time)
        names = state.markers
        markers = [m for name in names if (m := parse_marker_name(name, "")) is not None]
        return sorted(m.data_path for m in markers if m.marker_type in RECONCILED_MARKER_TYPES)

    def _state(self, instant_time: str) -> MarkerDirState:
        """The folder's state, built from its files the first time (``getMarkerDirState``)."""
        state = self._dirs.get(instant_time)
        if state is None:
            state = MarkerDirState(self.storage, instant_time, self.num_threads)
            self._dirs[instant_time] = state
        return state

    def _dispatch_round(self) -> None:
        for instant_time in list(self._pending):
            state = self._state(instant_time)
            index = state.next_file_index()
            if index is None:
                continue
            requests = self._pending.pop(instant_time)
            self._processes.append(self.env.process(self._batch(state, index, requests)))
        self._processes = [p for p in self._processes if p.is_alive]

    def _batch(
        self, state: MarkerDirState, index: int, requests: list[_Request]
    ) -> Generator[Any, Any, None]:
        """One ``BatchedMarkerCreationRunnable``: accept and write the batch, then answer it
        (the variant: answer, then write)."""
        assert self._pool is not None
        if self.name_batch is not None:
            self.name_batch()
        names = [r.name for r in requests]
        try:
            with self._pool.request() as thread:
                yield thread
                self.stats.batches += 1
                if self.answer_before_write:
                    yield from self._answer_then_write(state, index, requests)
                    return
                mark = self.storage.usage()
                try:
                    results = process_marker_creation_requests(
                        state, index, names, swallow_failure=self.swallow_write_failure
                    )
                except HoodieIOException as error:
                    self._fail(requests, str(error))
                    return
                yield self.env.timeout(self.storage.latency_since(mark))
                self._answer(requests, results)
        except simpy.Interrupt:
            self._fail(requests, "the timeline server is gone")

    def _answer_then_write(
        self, state: MarkerDirState, index: int, requests: list[_Request]
    ) -> Generator[Any, Any, None]:
        results = state.accept(index, [r.name for r in requests])
        self._answer(requests, results)
        try:
            yield self.env.timeout(self._write_estimate_ms(state, index))
            state.flush(index)
        except OSError:
            if not self.swallow_write_failure:
                state.forget(index)
        finally:
            state.release(index)

    def _write_estimate_ms(self, state: MarkerDirState, index: int) -> int:
        """How long writing the worker file takes (what the variant answers ahead of)."""
        return self.storage.latency_for(len(state.buffers.get(index, "").encode()))

    def _answer(self, requests: list[_Request], results: list[bool]) -> None:
        for request, created in zip(requests, results, strict=True):
            if not request.answer.triggered:
                self.stats.duplicates += not created
                request.answer.succeed(created)

    def _fail(self, requests: list[_Request], why: str) -> None:
        for request in requests:
            if not request.answer.triggered:
                self.stats.failed_requests += 1
                request.answer.fail(
                    HoodieRemoteException(f"Failed to create marker file {request.name}: {why}")
                )
                request.answer.defused = True  # a task gone meanwhile does not wait for it


@dataclass
class ServerConflictDetection:
    """The server's early conflict detection (``AsyncTimelineServerBasedDetectionStrategy``, one
    per server in ``MarkerHandler``): a marker request for a folder other than the one being
    watched restarts it on that folder (``hasConflict`` cleared); it checks at once and then every
    ``period_ms`` (``hoodie.write.concurrency.async.conflict.detector.initial_delay_ms`` 0,
    ``...period_ms``) until it finds a conflict, after which every marker request of the folder
    is answered False. ``on_conflict(instant, other, key)`` records a detection."""

    env: simpy.Environment
    detection: TimelineServerMarkerDetection
    period_ms: int
    on_conflict: Callable[[str, str, str], None]
    watched: str | None = None
    found: tuple[str, str] | None = None
    """(the older instant, the ``<partition>/<file id>`` key) of the watched folder's conflict."""
    _process: simpy.Process | None = None

    def refuses(self, server: MarkerServer, instant_time: str) -> bool:
        """Whether a request of ``instant_time`` is refused (watching it from now on)."""
        if instant_time != self.watched:
            self.stop()
            self.watched, self.found = instant_time, None
            self._process = self.env.process(self._detect(server, instant_time))
        return self.found is not None

    def stop(self) -> None:
        if self._process is not None and self._process.is_alive:
            self._process.interrupt("stopped")
        self._process = None

    def _detect(self, server: MarkerServer, instant_time: str) -> Generator[Any, Any, None]:
        try:
            while True:
                hit = self.detection.conflict(instant_time, server.current_markers(instant_time))
                if hit is not None:
                    self.found = hit
                    self.on_conflict(instant_time, *hit)
                    return
                yield self.env.timeout(self.period_ms)
        except simpy.Interrupt:
            return


__all__ = [
    "BATCH_INTERVAL_MS",
    "BATCH_NUM_THREADS",
    "HoodieRemoteException",
    "MarkerServer",
    "MarkerServerStats",
    "ServerConflictDetection",
]
