"""Stateful hypothesis tests of the Flink write pipeline (models/flink/coordinator.py, write_task.py,
write_events.py) on a real MERGE_ON_READ table in memory.

Hypothesis drives one Flink job step by step: the source emits records, tasks flush (eagerly or at a
checkpoint barrier) into instants they ask the coordinator for, their write-metadata events and
checkpoint ACKs travel one FIFO channel per task (Flink's RPCs from one task keep their order;
different tasks interleave freely), checkpoints are triggered in Hudi's order (coordinator snapshot
first, then the barriers), complete or fail, completion notifications are delivered in any order,
late or never, and the job crashes and restores from its last completed checkpoint (coordinator
restore with re-commit, then one bootstrap event per task). A failed checkpoint fails the job over,
as Flink does with its default of zero tolerable checkpoint failures (and as ``sim/job.py`` does).

After every step the invariants of docs/protocol.md sections 6 and 9 are checked against the test's own
bookkeeping (which source offsets each data file holds, which checkpoints completed and covered
which offsets), never against what the coordinator believes:

* instants commit in checkpoint order, at most once each, with increasing completion times;
* ``async`` and ``blocking``: the committed records are exactly the source offsets below one
  checkpoint boundary (no loss, no duplicate, nothing of a checkpoint that has not completed), and
  at least the offsets of the newest checkpoint whose notification (or a later one, or a restore
  from it) has been handled; ``blocking`` never starts an instant while another instant that
  received data is pending (Hudi's commit guard);
* ``minibatch``: nothing covered by a handled checkpoint is missing, but inserts may be committed
  twice after a failover (the source replays what an instant spanning checkpoints already held):
  that at-least-once difference is the expected outcome of the design and is asserted as such. A
  notification that finds a flush into the open instant under way is skipped (the design allows
  skipped notifications), so it only counts as handled when no task is writing;
* no mode ever fails the job with a protocol error, and no instant the current attempt opened is
  left pending on the timeline unless the coordinator still buffers it (an instant dropped with
  nothing to commit is rolled back).

Notifications are delivered in any order, late (after later checkpoints started) or never, in
every mode. (Blocking mode once committed records of the next checkpoint on a late notification
and left instants it dropped inflight: the regressions
:func:`test_blocking_late_notification_commits_part_of_a_pending_checkpoint` and
:func:`test_blocking_notification_drops_an_empty_instant_without_finishing_it`.)

At the end of every example the job drains (no more faults: flush, checkpoint, notify until
nothing is pending) and the real snapshot reader must return the model of the committed records:
every emitted record exactly once (inserts in ``async``/``blocking``), at least once
(``minibatch``), or per key the version with the greatest ordering value (upserts); and no instant
is left pending on the timeline but the coordinator's own, with nothing written for them (after a
restart the job cleans the failed attempts' instants ``EAGER``, as ``sim/table_services.py`` does).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from models.flink.coordinator import CommitResult, CoordinatorError, RestoreRules, WriteCoordinator
from models.flink.event_buffers import CoordinatorState
from models.flink.write_events import BootstrapEvent, WriteMetadataEvent
from models.flink.write_files import FileLayout, route, write_records
from models.flink.write_task import TaskState, WriteTask
from models.format.properties import MERGE_ON_READ
from models.format.records import (
    PARTITION_FIELD,
    RECORD_KEY_FIELD,
    SCHEMA,
    RecordSource,
    bucket_ids,
)
from models.ports import FakeClock, FakeWorld, LocalLock, run
from models.storage import InMemoryStorage
from models.timeline.instant import Instant, State
from models.timeline.truetime import make_time_generator
from models.view.reader import read_snapshot
from models.view.table import HudiTable
from models.write.heartbeat import instants_to_roll_back
from models.write.rollback import rollback
from models.write.table_init import create_table
from models.write.writer import TableWriter
from tests.table_harness import START_MS

PARALLELISM = 2
TASK_SWITCHES = ("restored_checkpoint_id", "restored_events_resend")
RESTORE_SWITCHES = ("snapshot_partial_buffers", "reset_recommit", "checkpoint_deferred_recommits")
BUCKETS = 2
PARTITIONS = 2
KEY_SPACE = 12
MAX_FAILOVERS = 3  # per example: a job that restarts all the time never gets anywhere

# --- messages ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Flush:
    """Task mailbox: an eager flush of the records the source handed over (a full buffer)."""

    rows: pa.Table | None


@dataclass(frozen=True)
class Barrier:
    """Task mailbox: checkpoint barrier with the records buffered when it was triggered."""

    checkpoint_id: int
    rows: pa.Table | None


@dataclass(frozen=True)
class Ack:
    """Task -> job manager: the task snapshotted ``checkpoint_id`` (after its last-batch event)."""

    checkpoint_id: int
    state: TaskState


@dataclass(frozen=True)
class Up:
    """A restarted task is running (behind the bootstrap event it sent, if any)."""

    task_id: int


Outgoing = BootstrapEvent | WriteMetadataEvent | Ack | Up


@dataclass
class PendingCheckpoint:
    checkpoint_id: int
    source_offset: int
    coordinator: CoordinatorState
    acks: dict[int, TaskState] = field(default_factory=dict)


@dataclass(frozen=True)
class CompletedCheckpoint:
    checkpoint_id: int
    source_offset: int
    coordinator: CoordinatorState
    tasks: tuple[TaskState, ...]


class ProtocolViolation(AssertionError):
    """An invariant of docs/protocol.md section 9 broke; the message says which and why."""


def _numbers_after(column: pa.ChunkedArray, prefix: int) -> np.ndarray:
    """``p1`` -> 1, ``k00000012`` -> 12: the number after a ``prefix``-character prefix."""
    digits = pc.utf8_slice_codeunits(column, prefix)
    return pc.cast(digits, pa.int64()).to_numpy(zero_copy_only=False)


# --- the job -------------------------------------------------------------------------------------


class FlinkJob:
    """One Flink job with a Hudi sink, advanced one message at a time by the caller.

    Everything protocol-relevant is the real code of ``models/``; this class only plays Flink:
    mailboxes, FIFO channels, checkpoint bookkeeping, restarts. It also keeps the ground truth the
    invariants need: the source offsets in every data file, and each completed checkpoint's offset.
    """

    def __init__(
        self,
        mode: str,
        operation: str,
        *,
        parallelism: int = PARALLELISM,
        persist_write_meta: bool = True,
        **variants: object,
    ) -> None:
        """``variants``: known-bad coordinator switches (``commit_scope``,
        ``snapshot_partial_buffers``), passed to every coordinator the job starts."""
        self.mode = mode
        self.task_switches = {k: variants.pop(k) for k in TASK_SWITCHES if k in variants}
        self.variants = variants
        self.operation = operation
        self.parallelism = parallelism
        self.persist_write_meta = persist_write_meta
        self.clock = FakeClock(FakeWorld(START_MS))
        self.lock = LocalLock()
        self.storage = InMemoryStorage()
        create_table(
            self.storage,
            name="t",
            table_type=MERGE_ON_READ,
            record_key_field=RECORD_KEY_FIELD,
            ordering_field="ts",
            partition_fields=(PARTITION_FIELD,),
        )
        self.source = RecordSource(
            seed=11,
            job_index=0,
            key_space=KEY_SPACE,
            partitions=PARTITIONS,
            records_per_s=1000.0,
            operation=operation,
        )
        self.layout = FileLayout(0, operation, True, buckets_per_partition=BUCKETS)
        # ground truth
        self.file_offsets: dict[str, np.ndarray] = {}
        self.commits: list[CommitResult] = []
        self.commit_attempts: list[int] = []  # the execution attempt that made each commit
        self.attempt = 0
        self.task_attempt = 0  # the tasks' Flink attempt number
        self.covered: dict[int, int] = {}  # completed checkpoint id -> source offset it covers
        self.handled: int | None = None  # newest checkpoint whose data must be committed by now
        self.emitted = 0  # highest offset ever emitted (exclusive), across restarts
        self._keys = np.zeros(0, np.int64)
        self._ts = np.zeros(0, np.int64)
        self._checked: tuple | None = None
        self.failovers = 0
        self.job_errors: list[str] = []
        self.epoch_instants: list[str] = []  # instants opened by the current attempt
        self.written_instants: set[str] = set()  # instants some data file was written for
        self.dropped: set[str] = set()  # dropped with nothing to commit: left to cleaning
        self.delivered_instants: set[str] = set()  # instants a data event reached the JM for
        self.writing: set[int] = set()  # tasks handed an instant whose next event is in flight
        # Flink's checkpoint coordinator
        self.next_checkpoint_id = 1
        self.completed: CompletedCheckpoint | None = None
        self._launch(None)

    # --- lifecycle -------------------------------------------------------------------------------

    def _launch(self, checkpoint: CompletedCheckpoint | None, path: str = "jobmanager") -> None:
        """A new execution attempt restored from ``checkpoint``. ``jobmanager``: a new coordinator
        restored (re-commits restored instants), every task deployed afresh (attempt 0) queues
        the bootstrap event of its restored state; ``global``: the coordinator reset to the
        checkpoint, every task restarted (attempt + 1) queues an empty bootstrap."""
        self.attempt += 1
        self.path = path
        if path == "global":
            self.task_attempt += 1
            self.task_writer = TableWriter(
                HudiTable(self.storage), None, data_schema=SCHEMA, attempt_id=self.task_attempt
            )
            self._restart_tasks()
            self.restored = checkpoint.checkpoint_id if checkpoint else None
            self.offset = checkpoint.source_offset if checkpoint else 0
            state = checkpoint.coordinator if checkpoint else None
            self._record(run(self.coordinator.reset_to_checkpoint(state), self.clock))
            self._queue_bootstraps(checkpoint)
            return
        self.task_attempt = 0
        generator = make_time_generator(
            "truetime", clock=self.clock, lock=self.lock, max_expected_clock_skew_ms=1
        )
        self.writer = TableWriter(HudiTable(self.storage), generator, data_schema=SCHEMA)
        self.task_writer = TableWriter(HudiTable(self.storage), None, data_schema=SCHEMA)
        variants = dict(self.variants)
        rules = {k: variants.pop(k) for k in RESTORE_SWITCHES if k in variants}
        self.coordinator = WriteCoordinator(
            self.writer,
            parallelism=self.parallelism,
            mode=self.mode,
            operation_type="UPSERT" if self.operation == "upsert" else "INSERT",
            restore_rules=RestoreRules(**rules),  # type: ignore[arg-type]
            on_drop=self.dropped.add,
            **variants,  # type: ignore[arg-type]
        )
        self._restart_tasks()
        self.restored = checkpoint.checkpoint_id if checkpoint else None
        self.offset = checkpoint.source_offset if checkpoint else 0
        state = checkpoint.coordinator if checkpoint else None
        self._record(run(self.coordinator.restore(state), self.clock))
        self._queue_bootstraps(checkpoint)

    def _restart_tasks(self) -> None:
        """Every task and its channels anew (messages in flight are dropped)."""
        self.tasks = [
            WriteTask(
                i,
                buffer_records=10**9,  # eager flushes are rules of their own
                operation=self.operation,
                persist_write_meta=self.persist_write_meta,
                **self.task_switches,  # type: ignore[arg-type]
            )
            for i in range(self.parallelism)
        ]
        self.log_versions: list[dict] = [{} for _ in range(self.parallelism)]
        self.mailboxes: list[deque[Flush | Barrier]] = [deque() for _ in range(self.parallelism)]
        self.outboxes: list[deque[Outgoing]] = [deque() for _ in range(self.parallelism)]
        self.notifications: list[int] = []
        self.pending: PendingCheckpoint | None = None
        self.epoch_instants = []
        self.writing = set()

    def _queue_bootstraps(self, checkpoint: CompletedCheckpoint | None) -> None:
        """Every task restores its state and queues its bootstrap event (if any) and ``Up``."""
        task_states = checkpoint.tasks if checkpoint else (None,) * self.parallelism
        timeline = self.writer.timeline
        for task, task_state in zip(self.tasks, task_states, strict=True):
            boot = task.restore(
                task_state,
                attempt=self.task_attempt,
                pending=lambda i: not timeline.load().is_completed(i),
            )
            if boot is None and self.mode == "minibatch":
                boot = BootstrapEvent(task.task_id, -1, ())
            if boot is not None:
                self.outboxes[task.task_id].append(boot)
            self.outboxes[task.task_id].append(Up(task.task_id))
        self.reported: set[int] = set()

    def failover(self, cause: str, path: str = "jobmanager") -> None:
        """Every process of the attempt dies, messages in flight are dropped, and the job
        restarts from the last completed checkpoint along ``path`` (see :meth:`_launch`)."""
        self.failovers += 1
        self.job_errors.append(cause)
        self._launch(self.completed, path)

    # --- source ----------------------------------------------------------------------------------

    def ingest(self, n: int) -> None:
        rows = self.source.batch(self.offset, self.offset + n)
        self.offset += n
        self.emitted = max(self.emitted, self.offset)
        for task, part in zip(self.tasks, route(rows, BUCKETS, self.parallelism), strict=True):
            task.add(part)

    def eager_flush(self, task_id: int) -> None:
        self.mailboxes[task_id].append(Flush(self.tasks[task_id].take_buffer()))

    # --- tasks -----------------------------------------------------------------------------------

    def needs_instant(self, task_id: int) -> bool:
        """Whether the task's next step asks the coordinator for an instant: a flush with data,
        or a barrier (``flushRemaining`` asks even with nothing to write; mini-batch does not)."""
        head = self.mailboxes[task_id][0] if self.mailboxes[task_id] else None
        if head is None:
            return False
        has_rows = head.rows is not None and head.rows.num_rows > 0
        return has_rows or (isinstance(head, Barrier) and self.mode != "minibatch")

    def can_step(self, task_id: int) -> bool:
        """A task can take its next step; one that asks for an instant only once its earlier
        messages are delivered (the request travels behind them on the same channel)."""
        if not self.mailboxes[task_id]:
            return False
        return not (self.needs_instant(task_id) and self.outboxes[task_id])

    def step_task(self, task_id: int) -> bool:
        """The task's next step; False if the coordinator made it wait (blocking mode)."""
        task = self.tasks[task_id]
        item = self.mailboxes[task_id][0]
        last_batch = isinstance(item, Barrier)
        if not self._flush(task_id, item.rows, last_batch=last_batch):
            return False
        self.mailboxes[task_id].popleft()
        if isinstance(item, Barrier):
            self.outboxes[task_id].append(
                Ack(item.checkpoint_id, task.snapshot_state(item.checkpoint_id))
            )
        return True

    def request_only(self, task_id: int) -> None:
        """The task asks for an instant and then has nothing to write (an empty instant)."""
        self._request(task_id, self.tasks[task_id].last_checkpoint_id)

    def _request(self, task_id: int, checkpoint_id: int) -> str | None:
        before = set(self.coordinator.pending_instants)
        instant = run(self.coordinator.request_instant(task_id, checkpoint_id), self.clock)
        self._opened(before)
        if instant is not None:
            self.writing.add(task_id)
        return instant

    def _opened(self, before: set[str]) -> None:
        """Remember the instants the coordinator just started. Blocking mode: none may start
        while an instant of this attempt that received a data event is still pending (on the
        timeline, by the job's own record of delivered events)."""
        new = sorted(set(self.coordinator.pending_instants) - before)
        if new and self.mode == "blocking":
            pending = set(self.open_instants())
            holding = [
                t for t in self.epoch_instants if t in self.delivered_instants and t in pending
            ]
            if holding:
                raise ProtocolViolation(
                    f"blocking: instant {new} started while {holding} holding data is pending"
                )
        self.epoch_instants.extend(new)

    def _flush(self, task_id: int, rows: pa.Table | None, *, last_batch: bool) -> bool:
        task = self.tasks[task_id]
        checkpoint_id = task.last_checkpoint_id
        if rows is None or rows.num_rows == 0:
            if last_batch:
                instant = None  # mini-batch asks for no instant without data
                if self.mode != "minibatch":  # ``flushRemaining``: an instant even so
                    instant = self._request(task_id, checkpoint_id)
                    if instant is None:
                        return False
                event = WriteMetadataEvent(task_id, instant, checkpoint_id, (), True, 0)
                task.event_sent(event)
                self.outboxes[task_id].append(event)
            return True
        instant = self._request(task_id, checkpoint_id)
        if instant is None:
            return False
        stats = write_records(
            self.task_writer,
            Instant(instant, State.INFLIGHT, self.writer.default_action),
            rows,
            task_id=task_id,
            layout=self.layout,
            log_versions=self.log_versions[task_id],
        )
        self._remember_files(rows, stats)
        self.written_instants.add(instant)
        event = WriteMetadataEvent(
            task_id, instant, checkpoint_id, tuple(stats), last_batch, rows.num_rows
        )
        task.event_sent(event)
        self.outboxes[task_id].append(event)
        return True

    def _remember_files(self, rows: pa.Table, stats) -> None:
        """Which source offsets each written file holds (upsert: one file per bucket; insert: one
        file per partition), derived from the routing, not read back through ``models``."""
        parts = _numbers_after(rows.column(PARTITION_FIELD), 1)
        offsets = rows.column("offset").to_numpy()
        if self.operation == "upsert":
            groups = parts * BUCKETS + bucket_ids(rows.column(RECORD_KEY_FIELD), BUCKETS)
        for stat in stats:
            p = int(stat.partition_path.split("=p")[1])
            if self.operation == "upsert":
                mask = groups == p * BUCKETS + int(stat.file_id[:8])  # bucket_file_id's prefix
            else:
                mask = parts == p
            assert stat.path not in self.file_offsets, f"{stat.path} written twice"
            self.file_offsets[stat.path] = offsets[mask]

    # --- the job manager side --------------------------------------------------------------------

    def deliver(self, task_id: int) -> None:
        """The next message on the task's channel reaches the job manager."""
        message = self.outboxes[task_id].popleft()
        if isinstance(message, Ack):
            if self.pending is not None and self.pending.checkpoint_id == message.checkpoint_id:
                self.pending.acks[task_id] = message.state
            return
        try:
            if isinstance(message, Up):
                self.reported.add(task_id)
                if len(self.reported) == self.parallelism and not self.coordinator.bootstrapping:
                    self.clean_failed_writes()
                    # after a global failover the coordinator's live buffers wait for the next
                    # notification; a new coordinator re-commits at once
                    if self.restored is not None and self.path == "jobmanager":
                        self._handled(self.restored)
            elif isinstance(message, BootstrapEvent):
                self._record(run(self.coordinator.handle_bootstrap(message), self.clock))
            else:
                self.writing.discard(task_id)
                if message.instant is not None:
                    self.delivered_instants.add(message.instant)
                self.coordinator.handle_event(message)
        except CoordinatorError as error:
            self.failover(f"coordinator: {error}")

    def bootstraps_delivered(self) -> bool:
        """No task's bootstrap event is still on its way to the coordinator."""
        return not any(isinstance(m, BootstrapEvent) for box in self.outboxes for m in box)

    def clean_failed_writes(self) -> None:
        """``EAGER`` failed-writes cleaning once a restarted job re-committed what it could (as
        ``sim/table_services.py`` does): roll back the pending instants of failed attempts."""
        failed = instants_to_roll_back(
            self.writer.timeline.load(),
            self.storage,
            "EAGER",
            START_MS,
            own_instants=self.coordinator.pending_instants,
        )
        for instant in failed:
            run(
                rollback(self.writer.table, self.writer, instant, self.writer.time_generator),
                self.clock,
            )

    def trigger_checkpoint(self) -> int:
        """Flink's checkpoint coordinator: the operator coordinator snapshots first, then the
        barriers go out carrying the records buffered up to now. Flink triggers a checkpoint
        only once every task is running, and a task sends its bootstrap event while it
        initializes, ahead of its running report on the same channel: every bootstrap reaches
        the coordinator before the snapshot."""
        for task_id, box in enumerate(self.outboxes):
            while any(isinstance(m, BootstrapEvent | Up) for m in box):
                self.deliver(task_id)
        n = self.next_checkpoint_id
        self.next_checkpoint_id += 1
        state = self.coordinator.snapshot_state(n)
        self.pending = PendingCheckpoint(n, self.offset, state)
        for task in self.tasks:
            self.mailboxes[task.task_id].append(Barrier(n, task.take_buffer()))
        return n

    def checkpoint_round(self, records: int = 0) -> None:
        """``records`` arrive, then a whole checkpoint: trigger (unless one is in progress),
        every barrier, every message delivered, completion (unless a task is blocked)."""
        if records:
            self.ingest(records)
        if self.pending is None:
            self.trigger_checkpoint()
        self.quiesce()
        if self.all_acked():
            self.complete_checkpoint()

    def all_acked(self) -> bool:
        return self.pending is not None and len(self.pending.acks) == self.parallelism

    def complete_checkpoint(self) -> None:
        pending = self.pending
        assert pending is not None
        states = tuple(pending.acks[i] for i in range(self.parallelism))
        self.completed = CompletedCheckpoint(
            pending.checkpoint_id, pending.source_offset, pending.coordinator, states
        )
        self.covered[pending.checkpoint_id] = pending.source_offset
        self.notifications.append(pending.checkpoint_id)
        self.pending = None

    def notify(self, index: int) -> None:
        """Deliver one of the notifications in flight (any order: the channel is not FIFO).
        Minibatch skips a notification while a task writes into the open instant (handed it,
        its event not delivered yet): that one does not count as handled."""
        n = self.notifications.pop(index)
        skipped = self.mode == "minibatch" and bool(self.writing)
        self._record(run(self.coordinator.notify_checkpoint_complete(n), self.clock))
        if not skipped:
            self._handled(n)

    def _handled(self, checkpoint_id: int) -> None:
        if self.handled is None or checkpoint_id > self.handled:
            self.handled = checkpoint_id

    def _record(self, results: list[CommitResult]) -> None:
        self.commits.extend(results)
        self.commit_attempts.extend([self.attempt] * len(results))

    # --- ground truth ----------------------------------------------------------------------------

    def committed_paths(self) -> list[str]:
        return [path for result in self.commits for path in result.files]

    def committed_offsets(self) -> np.ndarray:
        paths = self.committed_paths()
        if not paths:
            return np.zeros(0, np.int64)
        return np.concatenate([self.file_offsets[p] for p in paths])

    def required_offset(self) -> int:
        """Offsets below this must be committed: the newest handled checkpoint's coverage."""
        return 0 if self.handled is None else self.covered[self.handled]

    def boundaries(self) -> list[int]:
        """Source offsets the committed records may end at: a completed checkpoint's coverage
        (nothing of a checkpoint that has not completed may be committed: it may still fail)."""
        return sorted({0, *self.covered.values()})

    def winners(self, offsets: np.ndarray) -> dict[str, int]:
        """Per key the offset of the version with the greatest ordering value."""
        if len(offsets) == 0:
            return {}
        keys, ts = self._key_and_ts(int(offsets.max()) + 1)
        offsets = np.unique(offsets)  # a duplicate is the same version
        order = np.lexsort((ts[offsets], keys[offsets]))  # by key, then ts ascending
        ordered = offsets[order]
        last = np.append(keys[ordered][1:] != keys[ordered][:-1], True)
        return dict(zip(keys[ordered][last].tolist(), ordered[last].tolist(), strict=True))

    def _key_and_ts(self, stop: int) -> tuple[np.ndarray, np.ndarray]:
        """Key ids and ordering values of offsets ``[0, stop)`` (the source is a pure function
        of the offset; cached because every check needs them)."""
        if stop > len(self._keys):
            rows = self.source.batch(0, max(stop, 2 * len(self._keys)))
            if self.operation == "upsert":
                self._keys = _numbers_after(rows.column(RECORD_KEY_FIELD), 1)  # k<id>
            else:
                self._keys = rows.column("offset").to_numpy()  # one key per offset
            self._ts = rows.column("ts").to_numpy()
        return self._keys, self._ts

    def is_prefix(self, offsets: np.ndarray, stop: int) -> bool:
        """Whether the committed records are exactly the offsets ``[0, stop)`` (upserts: the same
        winner per key, since a flush pre-combines the versions it holds)."""
        if self.operation == "insert":
            return np.array_equal(np.sort(offsets), np.arange(stop))
        if len(offsets) and int(offsets.max()) >= stop:
            return False
        return self.winners(offsets) == self.winners(np.arange(stop))

    # --- invariants ------------------------------------------------------------------------------

    def check(self) -> None:
        seen = (len(self.commits), self.handled, len(self.covered), self.failovers)
        if seen != self._checked:  # the records checks only change when one of these does
            self.check_commit_order()
            self.check_records()
            self._checked = seen
        self.check_no_abandoned_instant()

    def check_commit_order(self) -> None:
        times = [r.instant.requested_time for r in self.commits]
        if len(times) != len(set(times)):
            raise ProtocolViolation(f"an instant committed twice: {times}")
        # Minibatch commits, at a notification, records written after that checkpoint (an
        # instant started by a task that already snapshotted the next one); if that checkpoint
        # then fails, the restore rewinds the tasks' checkpoint ids. Its order therefore holds
        # within one execution attempt; the other modes never commit beyond the notification.
        ids = [r.checkpoint_id for r in self.commits]
        attempts = self.commit_attempts if self.mode == "minibatch" else [0] * len(ids)
        if list(zip(attempts, ids, strict=True)) != sorted(zip(attempts, ids, strict=True)):
            raise ProtocolViolation(f"instants committed out of checkpoint order: {ids}")
        completions = [r.instant.completion_time for r in self.commits]
        if completions != sorted(completions):
            raise ProtocolViolation(f"completion times not increasing: {completions}")
        paths = self.committed_paths()
        if len(paths) != len(set(paths)):
            raise ProtocolViolation("a data file is listed by two commits")

    def check_records(self) -> None:
        offsets = self.committed_offsets()
        if len(offsets) and int(offsets.max()) >= self.emitted:
            raise ProtocolViolation("a committed record was never emitted")
        required = self.required_offset()
        if self.mode == "minibatch":
            self.check_at_least_once(offsets, required)
            return
        if len(np.unique(offsets)) != len(offsets):
            raise ProtocolViolation(f"{self.mode}: a record committed twice")
        ends = [b for b in self.boundaries() if b >= required]
        if not any(self.is_prefix(offsets, end) for end in ends):
            raise ProtocolViolation(
                f"{self.mode}: committed offsets {sorted(offsets.tolist())} are not the records "
                f"of one checkpoint boundary >= {required} (boundaries {self.boundaries()})"
            )

    def check_at_least_once(self, offsets: np.ndarray, required: int) -> None:
        """Minibatch: no loss below the handled checkpoint; duplicates only after a failover."""
        if self.operation == "insert":
            missing = sorted(set(range(required)) - set(offsets.tolist()))
            if missing:
                raise ProtocolViolation(f"minibatch lost offsets {missing} (required < {required})")
        else:
            got = self.winners(offsets)
            _, ts = self._key_and_ts(max(required, self.emitted))
            for key, offset in self.winners(np.arange(required)).items():
                if key not in got or ts[got[key]] < ts[offset]:  # an older version won
                    raise ProtocolViolation(
                        f"minibatch lost the version at offset {offset} of key {key}"
                    )
        if self.failovers == 0 and len(np.unique(offsets)) != len(offsets):
            raise ProtocolViolation("minibatch committed a record twice without any failover")

    def open_instants(self) -> list[str]:
        """Write instants pending on the timeline (requested or inflight), oldest first."""
        timeline = self.writer.timeline.load()
        return sorted(i.requested_time for i in timeline.pending() if i.action == "deltacommit")

    def check_no_abandoned_instant(self) -> None:
        """Every instant this attempt opened is completed, rolled back, still buffered by the
        coordinator, or dropped with nothing to commit (failed-writes cleaning rolls those
        back): one left inflight otherwise would never be committed or cleaned, and a pending
        instant blocks archiving."""
        buffered = set(self.coordinator.pending_instants) | self.dropped
        opened = set(self.epoch_instants)
        abandoned = [t for t in self.open_instants() if t in opened and t not in buffered]
        if abandoned:
            raise ProtocolViolation(
                f"{self.mode}: instants {abandoned} left inflight, no longer buffered by the "
                f"coordinator (pending: {sorted(buffered)})"
            )

    def check_nothing_left_inflight(self) -> None:
        """After :meth:`drain`: the only pending instants are the coordinator's open ones, with
        nothing written for them (the next checkpoint's instant, opened early), and those it
        dropped with nothing to commit, which failed-writes cleaning rolls back."""
        buffered = set(self.coordinator.pending_instants)
        left = [
            t
            for t in self.open_instants()
            if t not in self.dropped and (t not in buffered or t in self.written_instants)
        ]
        if left:
            raise ProtocolViolation(f"{self.mode}: instants {left} left inflight after the drain")

    # --- the end ---------------------------------------------------------------------------------

    def quiesce(self) -> None:
        """Deliver every message and run every task until nothing moves."""
        moved = True
        while moved:
            moved = False
            for t in range(self.parallelism):
                while self.outboxes[t]:
                    self.deliver(t)
                    moved = True
                if self.can_step(t) and self.step_task(t):
                    moved = True

    def drain(self, rounds: int = 8) -> None:
        """Faults stop: flush everything through checkpoints until every emitted record is
        committed (docs/protocol.md section 9, liveness)."""
        for _ in range(rounds):
            if self.offset < self.emitted:  # the source replays what a restore rewound
                self.ingest(self.emitted - self.offset)
            self.quiesce()
            if self.pending is not None and not self.all_acked():
                self.failover("drain: a checkpoint cannot complete")  # a blocked barrier
                self.quiesce()
            if self.pending is None:
                self.trigger_checkpoint()
                self.quiesce()
            if not self.all_acked():
                continue
            self.complete_checkpoint()
            while self.notifications:
                self.notify(len(self.notifications) - 1)
            self.quiesce()
            if self.drained():
                return
        raise ProtocolViolation(f"not drained after {rounds} rounds: {self.describe()}")

    def drained(self) -> bool:
        if self.completed is None or self.completed.source_offset != self.emitted:
            return False
        if any(b.write_stats for b in self.coordinator.buffers.values()):
            return False
        return (
            not any(self.mailboxes)
            and not any(self.outboxes)
            and not self.coordinator.bootstrapping
        )

    def check_final(self) -> None:
        """After :meth:`drain`: everything emitted is committed, and the reader agrees."""
        offsets = self.committed_offsets()
        stop = self.emitted
        if self.mode == "minibatch":
            if self.operation == "insert" and sorted(set(offsets.tolist())) != list(range(stop)):
                raise ProtocolViolation("minibatch: drained table lacks emitted records")
            if self.operation == "upsert" and self.winners(offsets) != self.winners(
                np.arange(stop)
            ):
                raise ProtocolViolation("minibatch upsert: wrong winner for some key")
        elif not self.is_prefix(offsets, stop) or len(np.unique(offsets)) != len(offsets):
            values, counts = np.unique(offsets, return_counts=True)
            raise ProtocolViolation(
                f"{self.mode}: drained table is not the {stop} emitted records once: offsets "
                f"{values[counts > 1].tolist()} committed twice, "
                f"{sorted(set(range(stop)) - set(values.tolist()))} missing"
            )
        self.check_table(offsets)

    def check_table(self, offsets: np.ndarray) -> None:
        """The real reader and the commit metadata on storage agree with the bookkeeping."""
        table = HudiTable(self.storage)
        listed = sorted(
            s.path
            for instant in table.timeline().completed().with_actions("deltacommit")
            for stats in table.commit_metadata(instant).partition_to_write_stats.values()
            for s in stats
        )
        if listed != sorted(self.committed_paths()):
            raise ProtocolViolation("commit metadata on storage differs from the commit results")
        rows = read_snapshot(table)
        got = sorted(rows.column("offset").to_pylist()) if rows.num_rows else []
        if self.operation == "insert":
            expected = sorted(offsets.tolist())
        else:
            expected = sorted(self.winners(offsets).values())
        if got != expected:
            raise ProtocolViolation(f"snapshot offsets {got} != model {expected}")

    def describe(self) -> str:
        return (
            f"mode={self.mode} pending={self.pending and self.pending.checkpoint_id} "
            f"buffers={self.coordinator.pending_instants} "
            f"mailboxes={[len(m) for m in self.mailboxes]} "
            f"outboxes={[len(o) for o in self.outboxes]}"
        )


# --- the state machine ---------------------------------------------------------------------------


class PipelineMachine(RuleBasedStateMachine):
    """What can happen next in one Flink job; subclasses fix the mode and the operation.

    Fine-grained rules (one task step, one message delivered) interleave with coarse ones (a
    whole checkpoint round, settling every channel) so that short examples still reach many
    checkpoints, commits and restores.
    """

    mode = "async"
    operation = "upsert"
    persist_write_meta = True

    def __init__(self) -> None:
        super().__init__()
        self.job = FlinkJob(self.mode, self.operation, persist_write_meta=self.persist_write_meta)

    # --- choices among the tasks that can act ----------------------------------------------------

    @staticmethod
    def _pick(candidates: list[int], index: int) -> int:
        return candidates[index % len(candidates)]

    def _ready(self) -> list[int]:
        return [t for t in range(PARALLELISM) if self.job.can_step(t)]

    def _sending(self) -> list[int]:
        return [t for t in range(PARALLELISM) if self.job.outboxes[t]]

    def _idle(self) -> list[int]:
        job = self.job
        return [t for t in range(PARALLELISM) if not job.outboxes[t]]

    def may_trigger(self) -> bool:
        """One checkpoint at a time (notifications of earlier ones may still be in flight)."""
        return self.job.pending is None

    def failures_left(self) -> bool:
        return self.job.failovers < MAX_FAILOVERS

    # --- source and tasks ------------------------------------------------------------------------

    @rule(n=st.integers(1, 8), eager=st.integers(0, 2**PARALLELISM - 1))
    def ingest(self, n: int, eager: int) -> None:
        """Records arrive; the tasks in the ``eager`` bit mask flush their full buffer."""
        self.job.ingest(n)
        for task in self.job.tasks:
            if eager >> task.task_id & 1 and task.buffered_rows:
                self.job.eager_flush(task.task_id)

    @precondition(lambda self: bool(self._ready()))
    @rule(index=st.integers(0, PARALLELISM - 1))
    def step_task(self, index: int) -> None:
        self.job.step_task(self._pick(self._ready(), index))

    @precondition(lambda self: bool(self._sending()))
    @rule(index=st.integers(0, PARALLELISM - 1))
    def deliver(self, index: int) -> None:
        self.job.deliver(self._pick(self._sending(), index))

    @precondition(lambda self: bool(self._idle()))
    @rule(index=st.integers(0, PARALLELISM - 1))
    def request_empty_instant(self, index: int) -> None:
        self.job.request_only(self._pick(self._idle(), index))

    @rule()
    def settle(self) -> None:
        self.job.quiesce()

    # --- checkpoints -----------------------------------------------------------------------------

    @precondition(lambda self: self.may_trigger())
    @rule()
    def trigger_checkpoint(self) -> None:
        self.job.trigger_checkpoint()

    @precondition(lambda self: self.job.all_acked())
    @rule()
    def complete_checkpoint(self) -> None:
        self.job.complete_checkpoint()

    @precondition(lambda self: self.job.pending is not None or self.may_trigger())
    @rule(n=st.integers(0, 8))
    def checkpoint_round(self, n: int) -> None:
        """A whole checkpoint in one step (see :meth:`FlinkJob.checkpoint_round`)."""
        self.job.checkpoint_round(n)

    @precondition(lambda self: self.job.pending is not None and self.failures_left())
    @rule()
    def fail_checkpoint(self) -> None:
        self.job.failover("checkpoint failed")

    @precondition(lambda self: bool(self.job.notifications))
    @rule(index=st.integers(0, 3))
    def deliver_notification(self, index: int) -> None:
        self.job.notify(index % len(self.job.notifications))

    @precondition(lambda self: bool(self.job.notifications))
    @rule(index=st.integers(0, 3))
    def lose_notification(self, index: int) -> None:
        self.job.notifications.pop(index % len(self.job.notifications))

    @precondition(lambda self: self.failures_left())
    @rule()
    def crash(self) -> None:
        self.job.failover("crash")

    @precondition(
        lambda self: (
            self.failures_left() and self.mode != "minibatch" and self.job.bootstraps_delivered()
        )
    )
    @rule()
    def fail_job(self) -> None:
        """A global failover: the coordinator kept and reset, the tasks at the next attempt.
        Not while a task's bootstrap is undelivered: Hudi's restarted task (attempt > 0) never
        re-sends, so the restored events are lost then
        (:func:`test_restart_before_the_bootstrap_reached_a_new_coordinator`)."""
        self.job.failover("failJob", path="global")

    # --- checks ----------------------------------------------------------------------------------

    @invariant()
    def protocol_holds(self) -> None:
        """The invariants of :meth:`FlinkJob.check`; and no protocol error ever fails the job
        (minibatch included: a notification no longer overtakes a task's write into the open
        instant, so no event arrives for an instant already committed)."""
        errors = [e for e in self.job.job_errors if e.startswith("coordinator")]
        assert not errors, f"{self.mode}: the coordinator failed the job: {errors}"
        self.job.check()

    def teardown(self) -> None:
        """Faults stop: everything emitted must end up committed, and readable, and no instant
        is left inflight."""
        self.job.drain()
        self.job.check()
        self.job.check_final()
        self.job.check_nothing_left_inflight()


def machine(mode: str, operation: str, **overrides) -> type[PipelineMachine]:
    attributes = {"mode": mode, "operation": operation}
    return type(
        f"PipelineMachine_{mode}_{operation}", (PipelineMachine,), {**attributes, **overrides}
    )


CASES = [(m, o) for m in ("async", "blocking", "minibatch") for o in ("upsert", "insert")]
FAST = settings(max_examples=15, stateful_step_count=40, deadline=None)
SLOW = settings(max_examples=400, stateful_step_count=60, deadline=None)


@pytest.mark.parametrize(("mode", "operation"), CASES)
def test_pipeline_machine(mode: str, operation: str) -> None:
    run_state_machine_as_test(machine(mode, operation), settings=FAST)


@pytest.mark.slow
@pytest.mark.parametrize(("mode", "operation"), CASES)
def test_pipeline_machine_slow(mode: str, operation: str) -> None:
    run_state_machine_as_test(machine(mode, operation), settings=SLOW)


# --- fixed schedules: what the machines must be able to tell apart -------------------------------


def duplicated_offsets(job: FlinkJob) -> list[int]:
    values, counts = np.unique(job.committed_offsets(), return_counts=True)
    return values[counts > 1].tolist()


@pytest.mark.parametrize(("mode", "operation"), CASES)
def test_eager_flush_before_a_notification_then_crash(mode: str, operation: str) -> None:
    """Checkpoint 1 completes; the tasks flush more records eagerly; the notification for 1 is
    handled; the job crashes and replays from checkpoint 1.

    ``minibatch`` commits everything received at the notification, so the eager flush is in the
    table already and the replay writes it again: inserts show up twice (at-least-once, the
    design's stated semantics), upserts still read right. ``async`` commits only what checkpoint 1
    covers; ``blocking`` makes the eager flush wait: both stay exactly-once."""
    job = FlinkJob(mode, operation)
    job.checkpoint_round(4)
    job.ingest(4)
    for task in range(PARALLELISM):
        job.eager_flush(task)
    job.quiesce()
    job.notify(0)
    job.check()
    job.failover("crash")
    job.quiesce()
    job.check()
    job.drain()
    job.check()
    job.check_final()  # every mode: nothing lost, the reader agrees with the commits
    duplicates = duplicated_offsets(job)
    if mode == "minibatch":
        assert duplicates and set(duplicates) <= set(range(4, 8))
        if operation == "insert":
            assert duplicates == [4, 5, 6, 7]
            rows = read_snapshot(HudiTable(job.storage))
            assert rows.num_rows == 8 + 4  # the reader shows the duplicates
    else:
        assert duplicates == []


@pytest.mark.parametrize(("mode", "operation"), CASES)
def test_failed_checkpoint_after_an_early_commit(mode: str, operation: str) -> None:
    """Checkpoint 2 starts; the tasks flush newer records eagerly; the notification for 1 is
    handled; checkpoint 2 fails and the job restores from 1.

    ``minibatch`` committed the eager flush at notification 1 (an instant started after the
    tasks snapshotted 2, so its checkpoint id is 2); the replay commits those records again under
    checkpoint id 1 in the next attempt: the design's duplicates, and checkpoint ids that restart
    with the attempt. The other modes commit them once."""
    job = FlinkJob(mode, operation)
    job.checkpoint_round()
    job.trigger_checkpoint()
    job.ingest(4)
    for task in range(PARALLELISM):
        job.eager_flush(task)
    job.quiesce()
    job.notify(0)
    job.check()
    job.failover("checkpoint 2 failed")
    job.checkpoint_round(4)  # the source replays offsets 0..3
    job.notify(0)
    job.check()
    job.drain()
    job.check_final()
    if mode == "minibatch":
        assert [r.checkpoint_id for r in job.commits][:2] == [2, 1]
        assert job.commit_attempts[:2] == [1, 2]
        if operation == "insert":
            assert duplicated_offsets(job) == [0, 1, 2, 3]
    else:
        assert duplicated_offsets(job) == []


@pytest.mark.parametrize("persist_write_meta", [True, False])
def test_hudi_9570_crash_after_checkpoint_before_notification(persist_write_meta: bool) -> None:
    """Checkpoint 2 completes and the job crashes before its notification. With the tasks'
    write metadata in their state the restore re-commits checkpoint 2's instant; without it
    (the HUDI-9570 variant) those records are lost, and the invariants say so."""
    job = FlinkJob("async", "insert", persist_write_meta=persist_write_meta)
    job.checkpoint_round(4)
    job.notify(0)
    job.checkpoint_round(4)
    job.failover("crash before the notification for checkpoint 2")
    job.quiesce()  # bootstrap events delivered
    if not persist_write_meta:
        with pytest.raises(ProtocolViolation, match=r"boundary >= 8"):
            job.check()
        return
    job.check()
    assert [r.recommit for r in job.commits] == [False, True]
    job.drain()
    job.check_final()


@pytest.mark.parametrize("commit_scope", ["all_below", "latest_only"])
def test_lost_notification_and_the_commit_scope(commit_scope: str) -> None:
    """Notification 1 lost; notification 2 must commit both instants (Flink's subsume
    contract). The ``latest_only`` variant drops the older one: checkpoint 1's records are
    lost, and the invariants say so."""
    job = FlinkJob("async", "insert", commit_scope=commit_scope)
    job.checkpoint_round(4)
    job.checkpoint_round(4)
    job.notifications.remove(1)
    job.notify(0)
    if commit_scope == "latest_only":
        with pytest.raises(ProtocolViolation, match=r"boundary >= 8"):
            job.check()
        return
    job.check()
    assert [r.checkpoint_id for r in job.commits] == [-1, 1]


@pytest.mark.parametrize(
    ("snapshot_partial_buffers", "reset_recommit", "loses"),
    [
        (True, "next_notification", True),  # Hudi 1.1
        (True, "immediate", True),  # the recommit alone recommits the stored empty buffer
        (False, "next_notification", False),  # the live buffer stays
        (False, "immediate", False),  # apache/hudi#19237
    ],
)
def test_hudi_19215_global_failover_after_an_empty_buffer_snapshot(
    snapshot_partial_buffers: bool, reset_recommit: str, loses: bool
) -> None:
    """apache/hudi#19215: a task asked for instant B before checkpoint 2 and wrote nothing yet, so
    the coordinator's snapshot for 2 sees B's buffer empty; the tasks then flush their last
    batches into B and checkpoint 2 completes; a global failover before its notification resets
    the coordinator (the same object) to checkpoint 2 and restarts the tasks at attempt 1, which
    re-send nothing. Storing the empty buffer (Hudi 1.1's ``getAllCompletedEvents``) puts it
    over the filled one and B is dropped: the completed checkpoint's records are lost."""
    job = FlinkJob(
        "async",
        "insert",
        snapshot_partial_buffers=snapshot_partial_buffers,
        reset_recommit=reset_recommit,
    )
    job.checkpoint_round(4)
    job.notify(0)
    job.ingest(4)
    job.request_only(0)  # B's buffer exists, empty, when the coordinator snapshots checkpoint 2
    job.checkpoint_round(0)
    assert [b.is_empty for b in job.completed.coordinator.buffers] == (
        [True] if snapshot_partial_buffers else []
    )
    job.failover("commit failed at the notification for checkpoint 2", path="global")
    job.quiesce()
    if loses:
        with pytest.raises(ProtocolViolation, match=r"\[4, 5, 6, 7\] missing"):
            job.drain()
            job.check_final()
        return
    job.drain()  # next_notification: B waits for the next checkpoint's notification
    job.check_final()


@pytest.mark.parametrize("resend", ["attempt_0", "every_attempt"])
def test_restart_before_the_bootstrap_reached_a_new_coordinator(resend: str) -> None:
    """Checkpoint 1 completes, the JobManager fails before its notification, and the job fails
    again (a global failover) before the tasks' attempt-0 bootstraps reached the new coordinator.
    Hudi's tasks at attempt 1 send empty bootstraps (``restored_events_resend = "attempt_0"``),
    so checkpoint 1's write metadata reaches no one and the next checkpoint's task state no longer
    holds it: lost. Re-sending at every attempt (Hudi 1.0's rule) commits it."""
    job = FlinkJob("async", "upsert", restored_events_resend=resend)
    job.checkpoint_round(4)
    job.failover("the JobManager fails")  # new coordinator; bootstraps queued, undelivered
    assert not job.bootstraps_delivered()
    job.failover("failJob", path="global")
    job.quiesce()
    if resend == "attempt_0":
        with pytest.raises(ProtocolViolation, match="missing"):
            job.drain()
            job.check_final()
        return
    job.drain()
    job.check_final()


def test_lost_and_reordered_notifications_commit_in_checkpoint_order() -> None:
    """Notification 1 lost, 3 delivered before 2: notification 3 commits all three instants in
    checkpoint order; the late one for 2 commits nothing more."""
    job = FlinkJob("async", "upsert")
    for _ in range(3):
        job.checkpoint_round(5)
    job.notifications.remove(1)
    job.notify(job.notifications.index(3))
    job.check()
    assert [r.checkpoint_id for r in job.commits] == [-1, 1, 2]
    assert job.required_offset() == job.covered[3] == 15
    job.notify(0)
    assert len(job.commits) == 3
    job.drain()
    job.check_final()


def late_notification_schedule(job: FlinkJob) -> None:
    """Blocking mode: the notification for checkpoint 1 arrives after checkpoint 2 started, so
    the instant it starts (B) is closed by task 1's empty barrier-2 batch; task 0 then flushes its
    barrier-3 records (checkpoint id 2) into B, the late notification for 2 commits B, and
    checkpoint 3 fails."""
    job.checkpoint_round()  # checkpoint 1 (no records); task 1 waits on instant A
    job.checkpoint_round()  # checkpoint 2 triggered; task 1 cannot take its barrier yet
    job.notify(0)  # late notification 1: commits A (empty), starts B
    job.ingest(2)  # offset 0 -> task 0, offset 1 -> task 1
    job.checkpoint_round()  # task 1's empty barrier 2 closes it on B; checkpoint 2 completes
    job.checkpoint_round()  # checkpoint 3: task 0 flushes offset 0 into B; task 1 is blocked
    job.notify(0)  # notification 2: every task closed on B, so B (with offset 0) commits
    job.failover("checkpoint 3 failed")  # restore from 2 (offset 0): offsets 0 and 1 replay
    job.drain()


def test_blocking_late_notification_commits_part_of_a_pending_checkpoint() -> None:
    """Regression (was a strict xfail: "offsets [0] committed twice"). Blocking mode kept one
    instant and committed it on notification ``n`` once every task had sent *a* last batch for
    it; here task 0's barrier-3 records (id 2) shared instant B with task 1's barrier-2 batch,
    notification 2 committed them before checkpoint 3 completed, and its failure replayed them.
    Hudi's ``commitInstants`` commits by checkpoint id (buffers with id < n), and its commit
    guard gives task 1 no instant for id 2 while B holds events: notification 2 commits only
    what checkpoint 2 covers."""
    job = FlinkJob("blocking", "insert")
    late_notification_schedule(job)
    job.check()
    job.check_final()
    assert duplicated_offsets(job) == []
    job.check_nothing_left_inflight()


def test_blocking_empty_barriers_share_one_instant_committed_empty() -> None:
    """Both tasks take an empty barrier 1: each asks for the instant of id -1 anyway (Hudi's
    ``flushRemaining``), so they share instant A and report empty last batches into it; the
    notification for 1 commits A empty (``allowCommitOnEmptyBatch``) and leaves no instant open
    (once, a task's wait after the barrier opened an instant for id 1 that no notification
    committed)."""
    job = FlinkJob("blocking", "upsert")
    job.quiesce()  # bootstrap events
    job.trigger_checkpoint()
    assert job.step_task(0) and job.step_task(1)  # empty barriers, one instant
    (a,) = job.coordinator.pending_instants
    for task in range(PARALLELISM):
        while job.outboxes[task]:
            job.deliver(task)
    job.complete_checkpoint()
    job.notify(0)
    assert [(r.instant.requested_time, r.records) for r in job.commits] == [(a, 0)]
    assert job.coordinator.pending_instants == job.open_instants() == []
    job.check()
    job.checkpoint_round(4)
    job.notify(0)
    job.drain()
    job.check_final()
    job.check_nothing_left_inflight()


@pytest.mark.parametrize("mode", ["async", "blocking", "minibatch"])
def test_an_instant_dropped_with_nothing_to_commit_is_left_to_failed_writes_cleaning(
    mode: str,
) -> None:
    """Empty commits not allowed: a checkpoint with no records leaves its instant with only
    empty last batches, which Hudi's ``commitInstant`` drops (``eventBuffers.reset``) and leaves
    pending for failed-writes cleaning, which then rolls it back."""
    job = FlinkJob(mode, "insert", allow_empty_commit=False)
    job.checkpoint_round(4)
    job.notify(0)
    job.request_only(0)  # an instant for checkpoint 2's data, which then has none
    (empty,) = job.coordinator.pending_instants
    job.checkpoint_round()
    job.notify(0)
    assert empty in job.open_instants() and empty in job.dropped
    assert empty not in job.coordinator.pending_instants
    job.clean_failed_writes()
    assert job.writer.timeline.load().get(empty) is None  # rolled back, not completed
    job.check()
    job.drain()
    job.check_final()
    job.check_nothing_left_inflight()


def round_or_time_out(job: FlinkJob, records: int = 0) -> None:
    """A checkpoint round; one that cannot complete (blocking mode: a task waits for a commit
    whose notification was lost) times out and fails the job over, as Flink's would."""
    job.checkpoint_round(records)
    if job.pending is not None:
        job.failover("checkpoint timed out")


@pytest.mark.parametrize("mode", ["async", "blocking", "minibatch"])
@pytest.mark.parametrize("operation", ["upsert", "insert"])
def test_nothing_is_left_inflight_after_lost_and_late_notifications(
    mode: str, operation: str
) -> None:
    """Notifications late (after the next checkpoint started), lost and reordered, an instant
    requested for data that never came, empty checkpoints, failovers: after the drain every
    instant is committed or rolled back, except the coordinator's open one with nothing written
    for it."""
    job = FlinkJob(mode, operation, allow_empty_commit=False)
    job.checkpoint_round(4)  # checkpoint 1; its notification stays in flight
    job.ingest(3)
    job.trigger_checkpoint()  # checkpoint 2 starts before notification 1 arrives
    job.quiesce()
    job.notify(0)  # the late notification 1
    round_or_time_out(job)  # checkpoint 2 completes
    job.notifications.clear()  # notification 2 lost
    job.request_only(1)  # an instant for data that never comes
    round_or_time_out(job)  # an empty checkpoint (blocking: stalls on the lost one)
    round_or_time_out(job, 2)
    while job.notifications:
        job.notify(len(job.notifications) - 1)  # newest first
    job.check()
    job.ingest(5)
    round_or_time_out(job)
    job.failover("crash before the notification")
    job.check()
    job.drain()
    job.check()
    job.check_final()
    job.check_nothing_left_inflight()


def test_blocking_late_notification_schedule_is_clean_in_async() -> None:
    """The same schedule in async mode: exactly-once."""
    job = FlinkJob("async", "insert")
    late_notification_schedule(job)
    job.check()
    job.check_final()
    assert duplicated_offsets(job) == []


@pytest.mark.slow
def test_machine_finds_the_hudi_9570_loss() -> None:
    """The search itself, not only a fixed schedule, finds the known-bad variant."""
    with pytest.raises(ProtocolViolation):
        run_state_machine_as_test(
            machine("async", "insert", persist_write_meta=False), settings=SLOW
        )
