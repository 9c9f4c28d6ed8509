"""One Flink job writing the table: source, write tasks, Hudi coordinator, checkpoints, failover.

Every protocol decision is made by the real code in ``models/`` (:class:`WriteTask`,
:class:`WriteCoordinator`, :class:`TableWriter`, TrueTime); this module only supplies what Flink
supplies: processes, mailboxes, RPC channels, checkpoint barriers and restarts.

Processes of one *epoch* (an execution attempt; a failover starts the next):

- ``<job>/source``: every tick reads what the upstream topic holds (a pure function of offsets,
  :class:`models.format.records.RecordSource`), routes it to the tasks by bucket and tells a task to flush
  eagerly when its buffer is full. It stalls (backpressure) while a task waits for an instant or
  has a backlog of flushes; the upstream keeps growing and the source catches up later.
- ``<job>/task-<i>``: flushes (instant request -> data files -> write-metadata event) and
  checkpoint barriers (last-batch flush, then ``snapshotState``, then the ACK).
- ``<job>/coordinator``: the single-threaded operator coordinator handling one message at a time.
- ``<job>/checkpoint``: Flink's checkpoint coordinator (one checkpoint at a time): coordinator
  snapshot first, then the source offset and the barriers, ACKs with a timeout, completion and a
  best-effort ``notifyCheckpointComplete`` over a lossy channel.
- ``<job>/compactor``: executes scheduled compactions (table services job only).

Barriers and eager flushes capture the task's buffered records at the instant they are issued,
so the records before a barrier are exactly the source offsets below the checkpoint's offset.
A task's events and its checkpoint ACKs share one FIFO channel to the job manager, as Flink's
RPCs from one task do: an event sent before an ACK arrives before it.

Failover (any task or coordinator error, a failed or timed-out checkpoint, a crash): every process
of the epoch is interrupted (locks they held are released by the driver), messages in flight are
dropped, and after ``restart_delay_ms`` a new epoch restores the last completed checkpoint.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import simpy

from models.flink.coordinator import CommitResult, CoordinatorError, WriteCoordinator
from models.flink.write_events import WriteMetadataEvent
from models.flink.write_task import FileLayout, TaskState, WriteTask, route, write_records
from models.format.records import ORDERING_FIELD, SCHEMA, RecordSource
from models.storage import FileAlreadyExistsError
from models.timeline.active import TimelineError
from models.timeline.instant import Instant, State
from models.txn.concurrency import ConcurrentWriteConflict
from models.view.partial_update import (
    PAYLOAD_CLASS,
    WHOLE_ROW_PAYLOAD_CLASS,
    ColumnGroup,
    declare_column_groups,
    table_schema,
)
from models.write.write_handles import WriteError
from models.write.writer import TableWriter
from sim.driver import drive
from sim.messages import (
    Barrier,
    BootstrapMessage,
    CheckpointComplete,
    CompletedCheckpoint,
    EagerFlush,
    EventMessage,
    InstantRequest,
    InstantResponse,
    SnapshotRequest,
    TaskAck,
)
from sim.network import Channel

if TYPE_CHECKING:
    from sim.world import World

SOURCE_TICK_MS = 100
INSTANT_RETRY_MS = 100  # Hudi's instant retry interval while waiting in blocking mode
CATCH_UP_FACTOR = 4  # a stalled source reads up to this many ticks' worth per tick
JOB_FAILURES: tuple[type[BaseException], ...] = (
    CoordinatorError,
    ConcurrentWriteConflict,
    OSError,  # storage write failures, FileAlreadyExistsError (a time collision)
    TimelineError,
    WriteError,
)


class Job:
    """A Flink job with a Hudi sink over the world's table."""

    def __init__(self, world: World, spec: Any, index: int) -> None:
        self.world = world
        self.env = world.env
        self.spec = spec
        self.index = index
        self.name = spec.name
        self.parallelism = spec.writers
        self.mode = spec.instant_generation
        self.table_services = bool(spec.table_services)
        self.rng = world.rng.child(f"job:{self.name}")
        config = world.table.config
        self.source = RecordSource(
            seed=world.seed,
            job_index=index,
            key_space=spec.key_space,
            partitions=world.scenario.table.partitions,
            records_per_s=spec.records_per_s,
            operation=spec.operation,
            columns=tuple(spec.columns),
            ordering_field=spec.ordering_field or ORDERING_FIELD,
        )
        self.data_schema = _table_data_schema(world, index)
        self.layout = FileLayout(
            index,
            spec.operation,
            config.is_mor,
            world.scenario.table.buckets_per_partition,
            world.scenario.protocol.file_slicing,
        )
        self.operation_type = "UPSERT" if spec.operation == "upsert" else "INSERT"
        self.interval_ms = int(spec.checkpoint_interval_s * 1000)
        self.timeout_ms = int(spec.checkpoint_timeout_s * 1000)
        self.eager_flush = config.is_mor or spec.operation == "insert"
        self.epoch = 0
        self.next_checkpoint_id = 1  # Flink's ids keep increasing across restarts
        self.completed: CompletedCheckpoint | None = None
        self.source_offset = 0
        self.emitted_offset = 0  # the highest offset any attempt emitted (exclusive)
        self.end_offset: int | None = None  # end of input, set by drain()
        self.processes: list[simpy.Process] = []
        self.failing = False
        self.drained = self.env.event()
        self.compacting = False
        self.commits_since_compaction = 0
        self._acks: dict[int, TaskState] = {}
        self._acks_done: simpy.Event | None = None
        self._pending_checkpoint: int | None = None
        self.blocked: set[int] = set()
        self._last_abort: str | None = None  # the instant the OCC check last aborted

    # --- helpers ---------------------------------------------------------------------------------

    def process_name(self, role: str) -> str:
        return f"{self.name}/{role}"

    @property
    def history(self) -> Any:
        return self.world.history

    def _recording_aborts(
        self, check: Callable[[Instant, tuple[Any, ...]], None] | None
    ) -> Callable[[Instant, tuple[Any, ...]], None] | None:
        """The OCC conflict check (None without OCC), recording each commit it aborts as an
        ``abort`` event of the coordinator: the abort is otherwise invisible (the coordinator
        retries the write under a new instant and only the retry's commit shows), and aborts
        and their wasted writes are what OCC costs compared with NBCC (``reports/metrics.py``).
        ``records`` counts the rows the aborted instant's files hold (for a copy-on-write
        merge, the whole rewritten file)."""
        if check is None:
            return None

        def precommit(instant: Instant, stats: tuple[Any, ...]) -> None:
            try:
                check(instant, stats)
            except ConcurrentWriteConflict as conflict:
                self._last_abort = instant.requested_time
                self.history.info(
                    self.process_name("coordinator"),
                    "abort",
                    {
                        "instant": instant.requested_time,
                        "conflict_with": conflict.other.requested_time,
                        "file_groups": len(conflict.file_groups),
                        "files": len(stats),
                        "records": sum(s.num_writes + s.num_deletes for s in stats),
                    },
                )
                raise

        return precommit

    def _retry_started(self, instant: Instant) -> None:
        """The coordinator started ``instant`` to redo an aborted write (``on_instant_start``
        runs for OCC retries only): record it and start its heartbeat."""
        self.history.info(
            self.process_name("coordinator"),
            "retry",
            {"instant": instant.requested_time, "retry_of": self._last_abort},
        )
        self.world.heartbeat_started(instant.requested_time)

    def _dropped_instant_rolled_back(self, instant: str, rollback: Instant) -> None:
        """The coordinator rolled back an instant it dropped with nothing to commit (see
        ``models/flink/coordinator.py``): record it as the failed-writes cleaning's rollbacks are."""
        self.history.ok(
            self.process_name("coordinator"),
            "rollback",
            {"instant": instant, "rollback": rollback.requested_time},
        )

    def _column_group(self) -> dict[str, Any]:
        """The column group this job writes, for its ``start`` events (the ledger reads it):
        nothing for whole records, so ordinary histories are unchanged."""
        if not self.source.columns:
            return {}
        return {
            "column_group": {
                "columns": list(self.source.columns),
                "ordering_field": self.source.ordering_field,
            }
        }

    def _channel(self, role: str, **kwargs: Any) -> Channel:
        delay = self.world.scenario.sim.network_delay_ms
        return Channel(
            self.env,
            f"{self.name}/{role}",
            self.rng.child(f"net:{role}"),
            delay_ms=kwargs.pop("delay_ms", (delay, delay * 2)),
            on_fault=self.world.network_fault,
            **kwargs,
        )

    def _spawn(self, body: Generator[Any, Any, Any]) -> None:
        self.processes.append(self.env.process(body))

    # --- lifecycle -------------------------------------------------------------------------------

    def start(self) -> None:
        self._launch(None)

    def _launch(self, checkpoint: CompletedCheckpoint | None) -> None:
        """Start a new execution attempt restored from ``checkpoint`` (None: from scratch)."""
        self.epoch += 1
        epoch = self.epoch
        self.failing = False
        self.processes = []
        self.blocked = set()
        self._acks, self._acks_done, self._pending_checkpoint = {}, None, None
        self.source_offset = checkpoint.source_offset if checkpoint else 0
        world = self.world
        coordinator_clock = self.process_name("coordinator")
        writer = TableWriter(
            world.table,
            world.time_generator(coordinator_clock),
            data_schema=self.data_schema,
            log_block_format=world.log_block_format,
            view_options=world.view_options,
        )
        self.coordinator = WriteCoordinator(
            writer,
            parallelism=self.parallelism,
            mode=self.mode,
            operation_type=self.operation_type,
            precommit=self._recording_aborts(world.precommit_hook(self)),
            commit_scope=world.scenario.protocol.commit_scope,
            snapshot_partial_buffers=world.scenario.protocol.snapshot_partial_buffers,
            on_instant_start=self._retry_started,
            on_rollback=self._dropped_instant_rolled_back,
        )
        self.tasks = [
            WriteTask(
                i,
                self.spec.buffer_records,
                operation=self.spec.operation,
                merge_mode=world.table.config.merge_mode or "EVENT_TIME_ORDERING",
                persist_write_meta=world.scenario.protocol.persist_write_meta,
            )
            for i in range(self.parallelism)
        ]
        self.task_writers = [
            TableWriter(
                world.table,
                None,
                data_schema=self.data_schema,
                log_block_format=world.log_block_format,
                view_options=world.view_options,
                stage_id=self.index + 1,
            )
            for _ in range(self.parallelism)
        ]
        self.base_instant_cache: dict[int, tuple[str, dict[tuple[str, str], str]]] = {}
        self.log_versions: list[dict[tuple[str, str, str], int]] = [
            {} for _ in range(self.parallelism)
        ]
        self.coordinator_mailbox = simpy.Store(self.env)
        self.task_mailboxes = [simpy.Store(self.env) for _ in range(self.parallelism)]
        self.responses = [simpy.Store(self.env) for _ in range(self.parallelism)]
        self.to_jm = [self._channel(f"task-{i}->jm") for i in range(self.parallelism)]
        self.to_task = [self._channel(f"jm->task-{i}") for i in range(self.parallelism)]
        faults = world.scenario.faults
        self.notify_channel = self._channel(
            "notify",
            loss=0.0 if world.draining else faults.ack_loss,
            duplicate=0.0 if world.draining else faults.ack_duplicate,
            fifo=False,
        )
        self.history.info(
            self.name,
            "start",
            {
                "epoch": epoch,
                "restored_checkpoint": checkpoint.checkpoint_id if checkpoint else None,
                "source_offset": self.source_offset,
                **self._column_group(),
            },
        )
        task_states = checkpoint.tasks if checkpoint else (None,) * self.parallelism
        self._spawn(self._coordinator_loop(epoch, checkpoint))
        for i in range(self.parallelism):
            self._spawn(self._task_loop(epoch, i, task_states[i]))
        self._spawn(self._source_loop(epoch))
        self._spawn(self._checkpoint_loop(epoch))
        if self.table_services:
            self._spawn(world.table_service_loop(self, epoch))

    def fail(self, epoch: int, cause: str) -> None:
        """Fail the job over (called from any of its processes): restore the last checkpoint."""
        if epoch != self.epoch or self.failing:
            return
        self.failing = True
        restore = self.completed.checkpoint_id if self.completed else None
        self.history.info(
            self.name, "failover", {"epoch": epoch, "cause": cause, "restore": restore}
        )
        self.env.process(self._failover(epoch))

    def _failover(self, epoch: int) -> Generator[Any, Any, None]:
        for process in self.processes:
            if process.is_alive and process is not self.env.active_process:
                process.interrupt("failover")
        for channel in [*self.to_jm, *self.to_task, self.notify_channel]:
            channel.cancel_pending()
        yield self.env.timeout(self.world.scenario.sim.restart_delay_ms)
        if self.epoch == epoch:
            self._launch(self.completed)

    def _guard(
        self, epoch: int, role: str, body: Generator[Any, Any, None]
    ) -> Generator[Any, Any, None]:
        """Run a process body; protocol/storage errors fail the job over, an interrupt ends it."""
        self.world.nemesis.name_process(self.process_name(role))  # storage_failure targets
        try:
            yield from body
        except simpy.Interrupt:
            return
        except JOB_FAILURES as error:
            self.history.fail(self.process_name(role), "error", {"error": _describe(error)})
            self.fail(epoch, f"{role}: {_describe(error)}")

    # --- the operator coordinator ---------------------------------------------------------------

    def _coordinator_loop(
        self, epoch: int, checkpoint: CompletedCheckpoint | None
    ) -> Generator[Any, Any, None]:
        yield from self._guard(epoch, "coordinator", self._coordinator_body(epoch, checkpoint))

    def _coordinator_body(
        self, epoch: int, checkpoint: CompletedCheckpoint | None
    ) -> Generator[Any, Any, None]:
        me = self.process_name("coordinator")
        coordinator = self.coordinator
        state = checkpoint.coordinator if checkpoint else None
        self.history.invoke(me, "restore", {"checkpoint": state.checkpoint_id if state else None})
        results = yield from drive(self.env, coordinator.restore(state), owner=me)
        self._record_commits(results)
        self.history.ok(me, "restore", {"recommitted": [r.instant.requested_time for r in results]})
        while True:
            message = yield self.coordinator_mailbox.get()
            if getattr(message, "epoch", epoch) != epoch:
                continue
            if isinstance(message, InstantRequest):
                before = set(coordinator.pending_instants)
                instant = yield from drive(
                    self.env,
                    coordinator.request_instant(message.task_id, message.checkpoint_id),
                    owner=me,
                )
                if instant is not None and instant not in before:
                    self.history.ok(
                        me,
                        "start_instant",
                        {"instant": instant, "checkpoint": message.checkpoint_id},
                    )
                    self.world.heartbeat_started(instant)
                self.to_task[message.task_id].send(
                    InstantResponse(epoch, instant),
                    lambda m, i=message.task_id: self.responses[i].put(m),
                )
            elif isinstance(message, EventMessage):
                coordinator.handle_event(message.event)
                self.history.info(me, "event", message.event.summary())
            elif isinstance(message, BootstrapMessage):
                event = message.event
                self.history.info(
                    me,
                    "bootstrap",
                    {
                        "task": event.task_id,
                        "checkpoint": event.checkpoint_id,
                        "events": [e.summary() for e in event.events],
                    },
                )
                results = yield from drive(self.env, coordinator.handle_bootstrap(event), owner=me)
                self._record_commits(results)
                if not coordinator.bootstrapping:
                    yield from self.world.after_bootstrap(self, epoch)
            elif isinstance(message, SnapshotRequest):
                snapshot = coordinator.snapshot_state(message.checkpoint_id)
                self.history.info(
                    me,
                    "snapshot",
                    {
                        "checkpoint": message.checkpoint_id,
                        "instants": [b.instant for b in snapshot.buffers],
                    },
                )
                message.reply.succeed(snapshot)
            elif isinstance(message, CheckpointComplete):
                self.history.info(me, "notify", {"checkpoint": message.checkpoint_id})
                results = yield from drive(
                    self.env,
                    coordinator.notify_checkpoint_complete(message.checkpoint_id),
                    owner=me,
                )
                self._record_commits(results)
                yield from self.world.after_commits(self, epoch, results)
                self._check_drained()

    def _record_commits(self, results: list[CommitResult]) -> None:
        me = self.process_name("coordinator")
        for result in results:
            self.history.ok(me, "commit", result.summary())
            self.world.heartbeat_stopped(result.instant.requested_time)
        self.commits_since_compaction += len(results)

    # --- write tasks -----------------------------------------------------------------------------

    def _task_loop(
        self, epoch: int, task_id: int, state: TaskState | None
    ) -> Generator[Any, Any, None]:
        yield from self._guard(epoch, f"task-{task_id}", self._task_body(epoch, task_id, state))

    def _task_body(
        self, epoch: int, task_id: int, state: TaskState | None
    ) -> Generator[Any, Any, None]:
        me = self.process_name(f"task-{task_id}")
        task = self.tasks[task_id]
        bootstrap = task.restore(state)
        self.to_jm[task_id].send(BootstrapMessage(epoch, bootstrap), self._to_coordinator)
        mailbox = self.task_mailboxes[task_id]
        while True:
            message = yield mailbox.get()
            if isinstance(message, EagerFlush):
                yield from self._flush(epoch, task_id, message.rows, last_batch=False)
            elif isinstance(message, Barrier):
                yield from self._flush(epoch, task_id, message.rows, last_batch=True)
                snapshot = task.snapshot_state(message.checkpoint_id)
                self.history.ok(
                    me,
                    "snapshot",
                    {
                        "checkpoint": message.checkpoint_id,
                        "instants": [e.instant for e in snapshot.events],
                    },
                )
                self.to_jm[task_id].send(
                    TaskAck(epoch, task_id, message.checkpoint_id, snapshot), self._on_ack
                )
                if self.mode == "blocking":
                    # Blocking generation (every release before 1.1; COPY_ON_WRITE upserts in 1.1):
                    # the writer holds its records until the coordinator committed the instant it
                    # just flushed and started the next one (docs/protocol.md section 6.4).
                    yield from self._wait_for_instant(epoch, task_id, task.last_checkpoint_id)

    def _to_coordinator(self, message: Any) -> None:
        if message.epoch == self.epoch:
            self.coordinator_mailbox.put(message)

    def _flush(
        self, epoch: int, task_id: int, rows: pa.Table | None, *, last_batch: bool
    ) -> Generator[Any, Any, None]:
        me = self.process_name(f"task-{task_id}")
        task = self.tasks[task_id]
        checkpoint_id = task.last_checkpoint_id
        if rows is None or rows.num_rows == 0:
            if last_batch:
                event = WriteMetadataEvent(task_id, None, checkpoint_id, (), True, 0)
                self.to_jm[task_id].send(EventMessage(epoch, event), self._to_coordinator)
            return
        instant = yield from self._wait_for_instant(epoch, task_id, checkpoint_id)
        self.history.invoke(
            me,
            "flush",
            {
                "instant": instant,
                "checkpoint": checkpoint_id,
                "records": rows.num_rows,
                "last_batch": last_batch,
            },
        )
        storage = self.world.storage
        base_instants = None
        if self.layout.file_slicing == "base_instant" and self.layout.is_mor:
            # 0.x keeps a task's append handles, and the base instant each read when it was
            # opened, for every flush into the same instant.
            cached = self.base_instant_cache.get(task_id)
            if cached is None or cached[0] != instant:
                cached = (instant, self.world.latest_base_instants())
                self.base_instant_cache[task_id] = cached
            base_instants = cached[1]
        # The write takes time and its files appear when it ends: what the writer read at the
        # start (the legacy rule's base instants) may be stale by then.
        yield self.env.timeout(storage.latency_for(rows.nbytes))
        mark = storage.usage()
        stats = write_records(
            self.task_writers[task_id],
            Instant(instant, State.INFLIGHT, self.coordinator.writer.default_action),
            rows,
            task_id=task_id,
            layout=self.layout,
            log_versions=self.log_versions[task_id],
            base_instants=base_instants,
        )
        yield self.env.timeout(storage.latency_since(mark))
        event = WriteMetadataEvent(
            task_id, instant, checkpoint_id, tuple(stats), last_batch, rows.num_rows
        )
        task.event_sent(event)
        self.to_jm[task_id].send(EventMessage(epoch, event), self._to_coordinator)
        self.history.ok(me, "flush", event.summary())

    def _wait_for_instant(
        self, epoch: int, task_id: int, checkpoint_id: int
    ) -> Generator[Any, Any, str]:
        """Ask the coordinator until it hands out an instant; the wait is the writer's stall."""
        me = self.process_name(f"task-{task_id}")
        started = self.env.now
        refused_at = None  # when the coordinator first said "wait for the commit"
        self.blocked.add(task_id)
        self.history.invoke(me, "wait_instant", {"checkpoint": checkpoint_id})
        while True:
            self.to_jm[task_id].send(
                InstantRequest(epoch, task_id, checkpoint_id), self._to_coordinator
            )
            response = yield self.responses[task_id].get()
            if response.instant is not None:
                break
            if refused_at is None:
                refused_at = self.env.now
            yield self.env.timeout(INSTANT_RETRY_MS)
        self.blocked.discard(task_id)
        self.history.ok(
            me,
            "wait_instant",
            {
                "instant": response.instant,
                "checkpoint": checkpoint_id,
                "blocked_ms": int(self.env.now - started),
                "commit_wait_ms": 0 if refused_at is None else int(self.env.now - refused_at),
            },
        )
        return response.instant

    # --- source ----------------------------------------------------------------------------------

    def _source_loop(self, epoch: int) -> Generator[Any, Any, None]:
        yield from self._guard(epoch, "source", self._source_body(epoch))

    def _source_body(self, epoch: int) -> Generator[Any, Any, None]:
        me = self.process_name("source")
        per_tick = max(1, int(self.spec.records_per_s * SOURCE_TICK_MS / 1000))
        while True:
            yield self.env.timeout(SOURCE_TICK_MS)
            if self._backpressured():
                continue
            available = self.source.available(int(self.env.now))
            if self.end_offset is not None:  # input ended: replay up to its end, no further
                available = self.end_offset
            stop = min(available, self.source_offset + per_tick * CATCH_UP_FACTOR)
            if stop <= self.source_offset:
                continue
            rows = self.source.batch(self.source_offset, stop)
            self.history.info(me, "emit", {"from": self.source_offset, "to": stop})
            self.source_offset = stop
            self.emitted_offset = max(self.emitted_offset, stop)
            for task_id, part in enumerate(
                route(rows, self.layout.buckets_per_partition, self.parallelism)
            ):
                task = self.tasks[task_id]
                if task.add(part) and self.eager_flush:
                    self.task_mailboxes[task_id].put(EagerFlush(task.take_buffer()))

    def _backpressured(self) -> bool:
        if self.blocked:
            return True
        return any(len(m.items) >= 2 for m in self.task_mailboxes)

    # --- checkpoints -----------------------------------------------------------------------------

    def _checkpoint_loop(self, epoch: int) -> Generator[Any, Any, None]:
        yield from self._guard(epoch, "checkpoint", self._checkpoint_body(epoch))

    def _checkpoint_body(self, epoch: int) -> Generator[Any, Any, None]:
        me = self.process_name("checkpoint")
        faults = self.world.scenario.faults
        fault_rng = self.rng.child(f"checkpoint-faults:{epoch}")
        while True:
            yield self.env.timeout(self.interval_ms)
            checkpoint_id = self.next_checkpoint_id
            self.next_checkpoint_id += 1
            declined = fault_rng.bernoulli(faults.checkpoint_failure) and not self.world.draining
            triggered_ms = int(self.env.now)
            self.history.invoke(me, "checkpoint", {"checkpoint": checkpoint_id})
            deadline = self.env.now + self.timeout_ms
            reply = self.env.event()
            self.coordinator_mailbox.put(SnapshotRequest(epoch, checkpoint_id, reply))
            yield reply | self.env.timeout(self.timeout_ms)
            if not reply.triggered:
                self._fail_checkpoint(epoch, checkpoint_id, "coordinator snapshot timed out")
                return
            coordinator_state = reply.value
            offset = self.source_offset
            self._acks, self._pending_checkpoint = {}, checkpoint_id
            self._acks_done = self.env.event()
            for task_id, task in enumerate(self.tasks):
                self.task_mailboxes[task_id].put(Barrier(checkpoint_id, task.take_buffer()))
            yield self._acks_done | self.env.timeout(max(0, deadline - self.env.now))
            if not self._acks_done.triggered:
                self._fail_checkpoint(epoch, checkpoint_id, "timed out waiting for task ACKs")
                return
            if self.world.nemesis.fail_checkpoint(
                self.name, checkpoint_id, triggered_ms, randomly=declined
            ):
                self._fail_checkpoint(epoch, checkpoint_id, "declined by a task")
                return
            states = tuple(self._acks[i] for i in range(self.parallelism))
            self.completed = CompletedCheckpoint(checkpoint_id, offset, coordinator_state, states)
            self.history.ok(
                me, "checkpoint", {"checkpoint": checkpoint_id, "source_offset": offset}
            )
            delay = 0
            if faults.ack_delay_ms and not self.world.draining:
                delay = fault_rng.randint(0, faults.ack_delay_ms)
            fate = self.world.nemesis.notification_fate(
                self.notify_channel.name, self.name, checkpoint_id
            )
            # Scheduled ACK faults (sim/nemesis.py). One send per notification whatever the
            # schedule does to it, so the channel's random draws (delay, loss, duplicate) stay
            # with their notification and a schedule entry never moves a random fault: a
            # scheduled loss is sent and silently discarded (the nemesis recorded it), a scheduled
            # duplicate is delivered twice, back to back, as a random duplicate is.
            channel, on_fault = self.notify_channel, self.notify_channel.on_fault
            if fate.copies == 0:
                channel.on_fault = None  # no random fault on a notification already lost
            try:
                channel.send(
                    CheckpointComplete(epoch, checkpoint_id),
                    self._to_coordinator if fate.copies == 1 else self._copies(fate.copies),
                    extra_delay_ms=delay + fate.extra_delay_ms,
                )
            finally:
                channel.on_fault = on_fault

    def _copies(self, copies: int) -> Callable[[Any], None]:
        """Deliver a notification ``copies`` times (0: a scheduled loss)."""

        def deliver(message: Any) -> None:
            for _ in range(copies):
                self._to_coordinator(message)

        return deliver

    def _fail_checkpoint(self, epoch: int, checkpoint_id: int, why: str) -> None:
        self.history.fail(
            self.process_name("checkpoint"), "checkpoint", {"checkpoint": checkpoint_id, "why": why}
        )
        self.fail(epoch, f"checkpoint {checkpoint_id} failed: {why}")

    def _on_ack(self, message: TaskAck) -> None:
        if message.epoch != self.epoch or message.checkpoint_id != self._pending_checkpoint:
            return
        self._acks[message.task_id] = message.state
        done = self._acks_done
        if len(self._acks) == self.parallelism and done is not None and not done.triggered:
            done.succeed()

    # --- end of run ------------------------------------------------------------------------------

    def _check_drained(self) -> None:
        """Drained: everything the source emitted, up to the end of input, is covered by a
        completed checkpoint whose data the coordinator has committed (no pending instant with
        data)."""
        if self.end_offset is None or self.drained.triggered or self.failing:
            return
        if self.completed is None or self.completed.source_offset != self.end_offset:
            return
        if any(b.write_stats for b in self.coordinator.buffers.values()):
            return
        if self.coordinator.bootstrapping:
            return
        self.history.info(self.name, "drained", {"source_offset": self.source_offset})
        self.drained.succeed()

    def drain(self) -> None:
        """The run is ending: the input ends and no more faults hit this job's channels.

        The input ends at the highest offset the source ever emitted, not at its current
        offset: a job that failed over shortly before (or fails during the drain) restored an
        earlier checkpoint (docs/protocol.md section 6), and a Flink job on a bounded input replays
        its source from the restored checkpoint's offsets to the end of the input, whose final
        checkpoint then commits everything (Flink's FLIP-147). Ending at the current offset would
        drop the emitted records after the restored checkpoint: the final checkpoint would cover
        less than the attempt before the failover had read and, in mini-batch mode, less than it
        had already committed (a late ACK commits eager flushes past its checkpoint). A run with
        no restore pending at the end replays nothing."""
        self.end_offset = self.emitted_offset
        self.notify_channel.loss = 0.0
        self.notify_channel.duplicate = 0.0


def _table_data_schema(world: World, index: int) -> pa.Schema:
    """The table's data columns, which every commit's metadata carries as its schema.

    Multi-stream partial updates (jobs with ``columns``): every stream's columns. The table is
    declared with those column groups (``models.view.partial_update``), as if its DDL named them all;
    the world creates the table before its jobs, so the first job declares them, with storage
    faults off as for the table's creation. The known-bad variant ``partial_update_merge = "row"``
    declares them with Hudi's default payload, which merges whole rows."""
    jobs = world.scenario.jobs
    if not any(job.columns for job in jobs):
        return SCHEMA
    groups = [ColumnGroup(job.ordering_field, tuple(job.columns)) for job in jobs]
    if index == 0:
        whole_rows = world.scenario.protocol.partial_update_merge == "row"
        enabled = world.storage.failures_enabled
        world.storage.failures_enabled = False
        try:
            declare_column_groups(
                world.table,
                groups,
                payload_class=WHOLE_ROW_PAYLOAD_CLASS if whole_rows else PAYLOAD_CLASS,
            )
        finally:
            world.storage.failures_enabled = enabled
    return table_schema(groups)


def _describe(error: BaseException) -> str:
    if isinstance(error, FileAlreadyExistsError):
        return f"FileAlreadyExistsError: {error}"
    return f"{type(error).__name__}: {error}"
