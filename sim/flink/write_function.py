"""One write task of a job: Hudi's ``StreamWriteFunction`` in its Flink subtask.

The protocol state is :class:`models.flink.write_task.WriteTask` (buffer, events sent since the
last checkpoint, snapshot and restore); this process supplies the task's mailbox and its RPCs.
On start it restores its state as its Flink attempt number says and tells the coordinator it is
up, with the bootstrap event Hudi sends (``AbstractStreamWriteFunction#sendBootstrapEvent``;
:meth:`models.flink.write_task.WriteTask.restore`). Then it handles, one at a time:

- an eager flush (the buffer filled up between checkpoints): ask the coordinator for the instant
  to write into, write the records' data files, send the write-metadata event;
- a checkpoint barrier: flush the last batch (``flushRemaining``: the task asks for the instant
  even with nothing to write and sends an empty last batch into it, so the coordinator knows
  the task finished), ``snapshotState``, then the ACK to the checkpoint coordinator.

A task asks for an instant only when it flushes and blocks on the answer; in ``blocking`` mode
the coordinator holds a new instant back while an earlier one holding events is not committed
(``CommitGuard``), so the task waits: asking again until ``write.commit.ack.timeout`` when told
"not yet" (``polled``), or on one request the coordinator answers late (``blocked``, Hudi 1.1),
failing when that takes longer than Flink's RPC timeout (docs/protocol.md section 6.4). The
mini-batch mode (a design proposal) asks only to write data.

Barriers and eager flushes carry the records buffered when they were issued
(:meth:`WriteFunction.inject_barrier`, :meth:`WriteFunction.receive`), so the records before a
barrier are exactly the source offsets below the checkpoint's offset. The task's events and its
ACKs share one FIFO channel to the job manager, as Flink's RPCs from one task do.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import simpy

from models.flink.bucket_index import BucketIdParseError, DuplicateFileIdError
from models.flink.write_buffer import BufferTooSmallError
from models.flink.write_events import BootstrapEvent, WriteMetadataEvent
from models.flink.write_files import FileLayout, write_records
from models.flink.write_task import TaskState, WriteTask, record_columns
from models.format.commit_metadata import WriteStat
from models.format.records import RECORD_KEY_FIELD
from models.table_errors import HoodieException
from models.timeline.instant import Instant, State
from models.write.early_conflict import HoodieEarlyConflictDetectionException
from models.write.writer import TableWriter
from sim.flink.bucket_assign import TaskBucketIndex
from sim.flink.marker_requests import write_after_markers
from sim.flink.runtime import Attempt, Gateway
from sim.marker_server import MarkerServer
from sim.messages import (
    Barrier,
    BootstrapMessage,
    EagerFlush,
    EventMessage,
    InstantRequest,
    InstantResponse,
    TaskAck,
)
from sim.pauses import sit_out_pause
from sim.storage import Mark, SimStorage

RPC_ASK_TIMEOUT_MS = 10_000
"""Flink's ``pekko.ask.timeout``: how long a task waits for the coordinator's answer."""
POLL_BACKOFF_MS = (200, 1000)
"""A task answered "not yet" asks again after 200 ms, doubling up to 1 s (Hudi master's
``Correspondent#requestInstantTime``, apache/hudi#19960)."""
BACKLOG_LIMIT = 2  # queued flushes and barriers at which the task pushes back on the source


@dataclass(frozen=True)
class RecordFailures:
    """Records a write handle fails to write: ``count(task)`` is how many of the task's flush
    starting now fail (the nemesis's ``write_error`` hook); ``throws``: the handle throws
    (``[protocol] record_write_failure = "throw"`` without ``write.ignore.failed``) instead of
    marking them failed."""

    count: Callable[[str], int]
    throws: bool


@dataclass(frozen=True)
class TaskFailure:
    """``processElement`` threw (the bucket index failed to load: a bucket with two file ids, a
    file id that is no bucket's; or a record does not fit the buffer): the task fails."""

    error: DuplicateFileIdError | BucketIdParseError | BufferTooSmallError


BaseInstants = Callable[[], dict[tuple[str, str], str]]
"""The base instant of each file group's latest slice, as a 0.x writer reads it."""


class WriteFunction:
    """The process ``<job>/task-<i>`` of one attempt.

    Receives its protocol state machine (``task``), its write client (``writer``: data files
    only, the coordinator commits), the job's file layout and instant-generation mode, the
    storage whose counters price its I/O, and two gateways over its one channel to the job
    manager: write events to the operator coordinator, ACKs to the checkpoint coordinator.
    ``attempt_number`` is the task's Flink attempt (0 when Flink deployed it afresh).
    ``base_instants`` is only read by the legacy ``base_instant`` file slicing.
    ``bucket_index`` assigns upserts' file ids as Hudi's bucket-index writer does (None: fixed
    ids). ``record_failures`` is what happens to records a write handle fails to write (None:
    none fails). ``restore_fails(task)`` is the nemesis's ``restore_crash`` hook, asked as the
    task restores: True when it has failed the task over before its bootstrap event."""

    def __init__(
        self,
        attempt: Attempt,
        task: WriteTask,
        writer: TableWriter,
        *,
        layout: FileLayout,
        mode: str,
        attempt_number: int,
        storage: SimStorage,
        base_instants: BaseInstants,
        to_coordinator: Gateway,
        to_checkpoints: Gateway,
        bucket_index: TaskBucketIndex | None = None,
        rpc_ask_timeout_ms: int = RPC_ASK_TIMEOUT_MS,
        commit_ack_timeout_ms: int = 300_000,
        record_failures: RecordFailures | None = None,
        marker_server: MarkerServer | None = None,
        restore_fails: Callable[[str], bool] = lambda process: False,
    ) -> None:
        self.attempt = attempt
        self.task = task
        self.task_id = task.task_id
        self.writer = writer
        self.layout = layout
        self.mode = mode
        self.attempt_number = attempt_number
        self.storage = storage
        self.base_instants = base_instants
        self.to_coordinator = to_coordinator
        self.to_checkpoints = to_checkpoints
        self.mailbox = simpy.Store(attempt.env)
        self.responses = simpy.Store(attempt.env)
        self.waiting_for_instant = False
        self.me = attempt.process_name(f"task-{self.task_id}")
        self._base_instants: tuple[str, dict[tuple[str, str], str | None]] | None = None
        self._log_versions: dict[tuple[str, str, str], int] = {}
        self._handles: dict[str, str] = {}  # Hudi's bucketToHandles, until the barrier's flush
        self.bucket_index = bucket_index
        self.rpc_ask_timeout_ms = rpc_ask_timeout_ms
        self.commit_ack_timeout_ms = commit_ack_timeout_ms
        self.record_failures = record_failures
        self.marker_server = marker_server
        self.restore_fails = restore_fails

    # --- what the other roles call ----------------------------------------------------------

    def receive(self, rows: pa.Table) -> None:
        """Records from the source: buffered per bucket; each bucket they make the task flush is
        queued as an eager flush (Hudi's ``StreamWriteFunction#bufferRecord`` flushes at once,
        on every table type: COPY_ON_WRITE mini-batches merge as :mod:`models.write.mini_batch`
        says)."""
        try:
            if self.bucket_index is not None:
                self.bucket_index.on_records(rows)
            flushed = self.task.add(rows)
        except (DuplicateFileIdError, BucketIdParseError, BufferTooSmallError) as error:
            self.mailbox.put(TaskFailure(error))  # fails the task, from its own process
            return
        for bucket_rows in flushed:
            self.mailbox.put(EagerFlush(bucket_rows))

    @property
    def backpressured(self) -> bool:
        """Waiting for an instant, or a backlog of flushes and barriers."""
        return self.waiting_for_instant or len(self.mailbox.items) >= BACKLOG_LIMIT

    def inject_barrier(self, checkpoint_id: int) -> None:
        """The barrier of ``checkpoint_id`` reaches the task, behind the records buffered now."""
        self.mailbox.put(Barrier(checkpoint_id, self.task.take_buffer()))

    def respond(self, message: InstantResponse) -> None:
        """Delivery of the coordinator's answer to an instant request."""
        self.responses.put(message)

    # --- the process ------------------------------------------------------------------------

    def run(self, state: TaskState | None) -> Generator[Any, Any, None]:
        """The process body, restored from ``state`` (None: a fresh start)."""
        yield from self.attempt.run(f"task-{self.task_id}", self._process(state))

    def _process(self, state: TaskState | None) -> Generator[Any, Any, None]:
        epoch, task = self.attempt.epoch, self.task
        if self.restore_fails(self.me):
            return  # failed over by the nemesis (restore_crash): no bootstrap event
        bootstrap = self._bootstrap(state)
        if self.bucket_index is not None:
            self.bucket_index.resent(bootstrap)
        yield from sit_out_pause(self.attempt.env, self.me)
        self.to_coordinator.send(BootstrapMessage(epoch, self.task_id, bootstrap))
        while True:
            message = yield self.mailbox.get()
            yield from sit_out_pause(self.attempt.env, self.me)
            if isinstance(message, TaskFailure):
                raise message.error
            if isinstance(message, EagerFlush):
                yield from self._flush(message.rows, last_batch=False)
            elif isinstance(message, Barrier):
                yield from self._flush(message.rows, last_batch=True)
                self._handles.clear()  # flushRemaining ends with the write client's cleanHandles
                snapshot = task.snapshot_state(message.checkpoint_id)
                self.attempt.history.ok(
                    self.me,
                    "snapshot",
                    {
                        "checkpoint": message.checkpoint_id,
                        "instants": [e.instant for e in snapshot.events],
                    },
                )
                self.to_checkpoints.send(
                    TaskAck(epoch, self.task_id, message.checkpoint_id, snapshot)
                )

    def _bootstrap(self, state: TaskState | None) -> BootstrapEvent | None:
        """The bootstrap event to send. The minibatch coordinator collects one from every task
        after any restart (:mod:`models.flink.minibatch`), so in that mode the task re-sends its
        state whatever its attempt."""
        timeline = self.writer.timeline

        def pending(instant: str) -> bool:
            return not timeline.load().is_completed(instant)

        if self.mode == "minibatch":
            event = self.task.restore(state, attempt=0, pending=pending)
            return event or BootstrapEvent(self.task_id, -1, ())
        return self.task.restore(state, attempt=self.attempt_number, pending=pending)

    def _flush(self, rows: pa.Table | None, *, last_batch: bool) -> Generator[Any, Any, None]:
        """Write ``rows`` into the current instant and send the write-metadata event."""
        env = self.attempt.env
        checkpoint_id = self.task.last_checkpoint_id
        if rows is None or rows.num_rows == 0:
            if last_batch:
                instant = None  # mini-batch: no instant without data
                if self.mode != "minibatch":
                    instant = yield from self._wait_for_instant(checkpoint_id)
                event = WriteMetadataEvent(self.task_id, instant, checkpoint_id, (), True, 0)
                yield from self._send_event(event)
            return
        instant = yield from self._wait_for_instant(checkpoint_id)
        self.attempt.history.invoke(
            self.me,
            "flush",
            {
                "instant": instant,
                "checkpoint": checkpoint_id,
                "records": rows.num_rows,
                "last_batch": last_batch,
            },
        )
        rows, error_records = self._fail_records(rows, instant)
        base_instants = self._legacy_base_instants(instant)
        # The write takes time and its files appear when it ends: what the writer read at the
        # start (the legacy rule's base instants) may be stale by then.
        yield env.timeout(self.storage.latency_for(record_columns(rows).nbytes))
        mark = self.storage.usage()

        def write(writer: TableWriter) -> list[WriteStat]:
            stats = write_records(
                writer,
                Instant(instant, State.INFLIGHT, writer.default_action),
                rows,
                task_id=self.task_id,
                layout=self.layout,
                log_versions=self._log_versions,
                base_instants=base_instants,
                handles=self._handles,
                file_ids=None if self.bucket_index is None else self.bucket_index.index,
            )
            self._open_handles(base_instants, stats)
            return stats

        stats = yield from self._write(write, mark)
        event = WriteMetadataEvent(
            self.task_id,
            instant,
            checkpoint_id,
            tuple(stats),
            last_batch,
            rows.num_rows,
            error_records=error_records,
        )
        yield from self._send_event(event)
        self.attempt.history.ok(self.me, "flush", event.summary())

    def _write(
        self, write: Callable[[TableWriter], list[WriteStat]], mark: Mark
    ) -> Generator[Any, Any, list[WriteStat]]:
        """Run ``write`` and wait for its storage requests (with a timeline server, for its
        markers first: :mod:`sim.flink.marker_requests`)."""
        env, server = self.attempt.env, self.marker_server
        try:
            if server is not None:
                return (
                    yield from write_after_markers(env, self.storage, server, self.writer, write)
                )
            stats = write(self.writer)
        except HoodieEarlyConflictDetectionException as conflict:
            if server is None:  # the direct strategy's listings took storage time
                yield env.timeout(self.storage.latency_since(mark))
            self.attempt.history.info(
                self.me,
                "early_conflict",
                {
                    "instant": conflict.instant_time,
                    "other": conflict.other,
                    "partition": conflict.partition,
                    "file_id": conflict.file_id,
                },
            )
            raise
        yield env.timeout(self.storage.latency_since(mark))
        return stats

    def _fail_records(self, rows: pa.Table, instant: str) -> tuple[pa.Table, int]:
        """The rows the write handles write, and how many failed (the first ones of the flush,
        when a ``write_error`` fault hits it): a handle that throws fails the task
        (``HoodieWriteMergeHandle#writeRecord``, ``HoodieAppendHandle#doWrite`` on Hudi's master
        unless ``write.ignore.failed``), one that marks them (``WriteStatus#markFailure``) leaves
        them out of its file and reports them in the write status."""
        failures = self.record_failures
        failed = 0 if failures is None else min(failures.count(self.me), rows.num_rows)
        if failed == 0:
            return rows, 0
        assert failures is not None
        if failures.throws:
            key = rows.column(RECORD_KEY_FIELD)[0].as_py()
            raise HoodieException(f"Error writing record {key} of instant {instant}")
        return rows.slice(failed), failed

    def _send_event(self, event: WriteMetadataEvent) -> Generator[Any, Any, None]:
        """Keep ``event`` in the task's state and send it to the coordinator; a task paused
        since it asked for the instant sends it when the pause ends (the coordinator holds the
        instant's buffer with no event from this task meanwhile)."""
        yield from sit_out_pause(self.attempt.env, self.me)
        self.task.event_sent(event)
        self.to_coordinator.send(EventMessage(self.attempt.epoch, event))

    def _legacy_base_instants(self, instant: str) -> dict[tuple[str, str], str | None] | None:
        """0.x keeps a task's append handles, and the base instant each read when it was opened
        (at the file group's first flush into the instant), for every later flush into the same
        instant (``base_instant`` slicing on MERGE_ON_READ): the file groups' base instants now,
        those of the handles already open as they read them."""
        if not (self.layout.file_slicing == "base_instant" and self.layout.is_mor):
            return None
        if self._base_instants is None or self._base_instants[0] != instant:
            self._base_instants = (instant, {})
        return {**self.base_instants(), **self._base_instants[1]}

    def _open_handles(
        self, read: dict[tuple[str, str], str | None] | None, stats: list[WriteStat]
    ) -> None:
        """The file groups a flush wrote keep the base instant they read (0.x handles)."""
        if read is None or self._base_instants is None:
            return
        opened = self._base_instants[1]
        for stat in stats:
            key = (stat.partition_path, stat.file_id)
            opened.setdefault(key, read.get(key))

    def _wait_for_instant(self, checkpoint_id: int) -> Generator[Any, Any, str]:
        """Ask the coordinator for the instant and block on the answer (Hudi's
        ``Correspondent#requestInstantTime``); an answer "not yet" is asked again with backoff
        until ``write.commit.ack.timeout``. The wait is the writer's stall; an answer later
        than the RPC timeout, or no instant in time, fails the task."""
        env, history = self.attempt.env, self.attempt.history
        started, refused_at, backoff_ms = env.now, None, POLL_BACKOFF_MS[0]
        self.waiting_for_instant = True
        history.invoke(self.me, "wait_instant", {"checkpoint": checkpoint_id})
        while True:
            response = yield from self._ask(checkpoint_id)
            if response.instant is not None:
                break
            refused_at = env.now if refused_at is None else refused_at
            left_ms = refused_at + self.commit_ack_timeout_ms - env.now
            if left_ms <= 0:
                raise HoodieException(
                    "Timeout waiting for the instant time from the coordinator for checkpoint "
                    f"{checkpoint_id}"
                )
            yield env.timeout(min(backoff_ms, left_ms))
            backoff_ms = min(2 * backoff_ms, POLL_BACKOFF_MS[1])
        self.waiting_for_instant = False
        polled_ms = 0 if refused_at is None else int(env.now - refused_at)
        history.ok(
            self.me,
            "wait_instant",
            {
                "instant": response.instant,
                "checkpoint": checkpoint_id,
                "blocked_ms": int(env.now - started),
                "commit_wait_ms": response.guard_wait_ms + polled_ms,
            },
        )
        return response.instant

    def _ask(self, checkpoint_id: int) -> Generator[Any, Any, InstantResponse]:
        """One instant request and its answer, within the RPC timeout."""
        env = self.attempt.env
        self.to_coordinator.send(InstantRequest(self.attempt.epoch, self.task_id, checkpoint_id))
        with self.responses.get() as answer:
            yield answer | env.timeout(self.rpc_ask_timeout_ms)
            if not answer.triggered:
                raise HoodieException(
                    "Error requesting the instant time from the coordinator: no answer in "
                    f"{self.rpc_ask_timeout_ms} ms"
                )
            return answer.value


__all__ = ["POLL_BACKOFF_MS", "RPC_ASK_TIMEOUT_MS", "WriteFunction"]
