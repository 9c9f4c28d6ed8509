"""The write coordinator (models/flink/coordinator.py) driven by a small synchronous Flink pipeline:
source -> route -> write tasks -> coordinator -> storage, over a fake clock, in its three modes,
through failovers (HUDI-9570), protocol errors, commit retries and a failing pre-commit hook.

The model of the table: after the notification for checkpoint ``n`` was handled, the table holds
exactly the records of the offsets checkpoint ``n`` covered (for upserts: per key the version with
the greatest ``ts``; for inserts: every record exactly once)."""

from __future__ import annotations

import re

import pyarrow as pa
import pytest

from models.flink.coordinator import (
    CommitResult,
    CoordinatorError,
    RestoreRules,
    WriteCoordinator,
)
from models.flink.event_buffers import EventBufferError
from models.flink.write_events import BootstrapEvent, WriteMetadataEvent
from models.flink.write_files import FileLayout, route, write_records
from models.flink.write_task import TaskState, WriteTask
from models.format.commit_metadata import WriteStat
from models.format.properties import COPY_ON_WRITE, MERGE_ON_READ
from models.format.records import SCHEMA, RecordSource
from models.ports import FakeClock, FakeWorld, LocalLock, run
from models.storage import InMemoryStorage
from models.timeline.instant import Instant, State
from models.timeline.truetime import make_time_generator
from models.view.reader import read_snapshot
from models.view.table import HudiTable
from models.write.table_init import create_table
from models.write.writer import TableWriter

START_MS = 1_767_225_600_000
DATA = SCHEMA.names


class Pipeline:
    """One Flink job: a source, ``parallelism`` write tasks and a coordinator over one table."""

    def __init__(
        self,
        mode: str = "async",
        *,
        parallelism: int = 2,
        operation: str = "upsert",
        table_type: str = MERGE_ON_READ,
        persist_write_meta: bool = True,
        storage: InMemoryStorage | None = None,
        precommit=None,
        allow_empty_commit: bool = True,
        commit_scope: str = "all_below",
        snapshot_partial_buffers: bool = False,
    ) -> None:
        self.mode = mode
        self.commit_scope = commit_scope
        self.snapshot_partial_buffers = snapshot_partial_buffers
        self.parallelism = parallelism
        self.operation = operation
        self.persist_write_meta = persist_write_meta
        self.precommit = precommit
        self.allow_empty_commit = allow_empty_commit
        self.clock = FakeClock(FakeWorld(START_MS))
        self.lock = LocalLock()
        self.storage = storage if storage is not None else InMemoryStorage()
        create_table(
            self.storage,
            name="t",
            table_type=table_type,
            record_key_field="key",
            ordering_field="ts",
            partition_fields=("part",),
        )
        self.source = RecordSource(
            seed=3,
            job_index=0,
            key_space=25,
            partitions=2,
            records_per_s=1000.0,
            operation=operation,
        )
        self.layout = FileLayout(0, operation, table_type == MERGE_ON_READ, buckets_per_partition=2)
        self.offset = 0
        self.covered: dict[int, int] = {}  # checkpoint id -> source offset it covers
        self.start_job()

    def start_job(self) -> None:
        """A (re)started job: a fresh coordinator process and fresh tasks (restore separately)."""
        generator = make_time_generator(
            "truetime", clock=self.clock, lock=self.lock, max_expected_clock_skew_ms=1
        )
        self.writer = TableWriter(HudiTable(self.storage), generator, data_schema=SCHEMA)
        self.coordinator = WriteCoordinator(
            self.writer,
            parallelism=self.parallelism,
            mode=self.mode,
            operation_type="UPSERT" if self.operation == "upsert" else "INSERT",
            precommit=self.precommit,
            allow_empty_commit=self.allow_empty_commit,
            commit_scope=self.commit_scope,
            restore_rules=RestoreRules(snapshot_partial_buffers=self.snapshot_partial_buffers),
        )
        self.tasks = [
            WriteTask(
                i,
                buffer_records=10**9,
                operation=self.operation,
                persist_write_meta=self.persist_write_meta,
            )
            for i in range(self.parallelism)
        ]
        self.log_versions: list[dict] = [{} for _ in range(self.parallelism)]

    # --- steps ---------------------------------------------------------------------------------

    def ingest(self, n: int) -> None:
        batch = self.source.batch(self.offset, self.offset + n)
        self.offset += n
        for task, rows in zip(self.tasks, route(batch, 2, self.parallelism), strict=True):
            task.add(rows)

    def flush(self, task_id: int, last_batch: bool = False) -> WriteMetadataEvent | None:
        """Flush one task; None if the coordinator made it wait (blocking mode)."""
        task = self.tasks[task_id]
        checkpoint = task.last_checkpoint_id
        if not task.buffered_rows:
            event = WriteMetadataEvent(task_id, None, checkpoint, (), last_batch)
        else:
            instant = run(self.coordinator.request_instant(task_id, checkpoint), self.clock)
            if instant is None:
                return None
            rows = task.take_buffer()
            stats = write_records(
                self.writer,
                Instant(instant, State.INFLIGHT, self.writer.default_action),
                rows,
                task_id=task_id,
                layout=self.layout,
                log_versions=self.log_versions[task_id],
            )
            event = WriteMetadataEvent(
                task_id, instant, checkpoint, stats, last_batch, rows.num_rows
            )
        self.coordinator.handle_event(event)
        task.event_sent(event)
        return event

    def checkpoint(self, n: int):
        """Checkpoint ``n`` up to all acknowledgements (no notification): coordinator state
        first, then every task flushes its last batch and snapshots."""
        coordinator_state = self.coordinator.snapshot_state(n)
        events = [self.flush(i, last_batch=True) for i in range(self.parallelism)]
        task_states = [task.snapshot_state(n) for task in self.tasks]
        self.covered[n] = self.offset
        return coordinator_state, task_states, events

    def notify(self, n: int) -> list[CommitResult]:
        return run(self.coordinator.notify_checkpoint_complete(n), self.clock)

    def failover(self, coordinator_state, task_states: list[TaskState], restored: int):
        """A JobManager failover to checkpoint ``restored``: a new coordinator restored, then the
        tasks' bootstrap events (attempt 0: their restored events); the source rewinds to the
        checkpoint's offset."""
        self.start_job()
        results = run(self.coordinator.restore(coordinator_state), self.clock)
        assert self.coordinator.bootstrapping == (self.mode == "minibatch")
        timeline = self.writer.timeline
        for task, state in zip(self.tasks, task_states, strict=True):
            boot = task.restore(
                state, attempt=0, pending=lambda i: not timeline.load().is_completed(i)
            )
            if boot is None and self.mode == "minibatch":
                boot = BootstrapEvent(task.task_id, -1, ())
            if boot is not None:
                results += run(self.coordinator.handle_bootstrap(boot), self.clock)
        assert not self.coordinator.bootstrapping
        self.offset = self.covered[restored]
        return results

    # --- observations --------------------------------------------------------------------------

    def completed(self) -> list[Instant]:
        return list(self.writer.timeline.load().completed().by_completion_time())

    def snapshot(self) -> list[dict]:
        rows = read_snapshot(HudiTable(self.storage))
        if rows.num_rows == 0:
            return []
        return (
            rows.select(DATA).sort_by([("key", "ascending"), ("offset", "ascending")]).to_pylist()
        )

    def committed_files(self) -> list[str]:
        """The data files the completed instants' commit metadata list (duplicates kept)."""
        table = HudiTable(self.storage)
        return [
            s.path
            for instant in self.completed()
            for stats in table.commit_metadata(instant).partition_to_write_stats.values()
            for s in stats
        ]

    def data_files(self) -> set[str]:
        return {
            path
            for path in self.storage.paths()
            if not path.startswith(".hoodie") and not path.endswith(".hoodie_partition_metadata")
        }

    def assert_all_files_committed_once(self) -> None:
        committed = self.committed_files()
        assert len(committed) == len(set(committed))
        assert set(committed) == self.data_files()

    def model(self, stop: int) -> list[dict]:
        """What the table must hold once the offsets ``[0, stop)`` are committed."""
        rows = self.source.batch(0, stop)
        if self.operation == "insert":
            return rows.sort_by("key").to_pylist()
        best: dict[str, dict] = {}
        for r in rows.to_pylist():
            if r["key"] not in best or r["ts"] > best[r["key"]]["ts"]:
                best[r["key"]] = r
        return [best[k] for k in sorted(best)]


def instant_times(results: list[CommitResult]) -> list[str]:
    return [r.instant.requested_time for r in results]


# --- async ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("table_type", [MERGE_ON_READ, COPY_ON_WRITE])
def test_async_same_checkpoint_same_instant_and_snapshot_equals_model(table_type):
    p = Pipeline("async", parallelism=3, table_type=table_type)
    for n in (1, 2, 3):
        p.ingest(40)
        _, _, events = p.checkpoint(n)
        instants = {e.instant for e in events}
        assert len(instants) == 1 and None not in instants  # one instant for all tasks
        assert all(e.checkpoint_id == (n - 1 if n > 1 else -1) for e in events)
        results = p.notify(n)
        assert instant_times(results) == list(instants)
        assert results[0].checkpoint_id == events[0].checkpoint_id
        assert results[0].records == sum(e.records for e in events)
        assert p.coordinator.pending_instants == []
        assert p.snapshot() == p.model(p.covered[n])
    assert len(p.completed()) == 3


def test_async_eager_flush_carries_last_snapshotted_id():
    p = Pipeline("async", parallelism=2)
    p.ingest(30)
    p.checkpoint(1)
    p.ingest(30)
    eager = p.flush(0)  # between checkpoints 1 and 2: carries 1
    assert eager is not None and eager.checkpoint_id == 1
    assert p.notify(1)  # commits the data flushed for checkpoint 1 only
    assert p.coordinator.pending_instants == [eager.instant]
    assert p.snapshot() == p.model(p.covered[1])
    p.ingest(30)
    _, _, events = p.checkpoint(2)
    assert {e.instant for e in events} == {eager.instant}  # merged into the same instant
    (result,) = p.notify(2)
    assert result.instant.requested_time == eager.instant
    assert result.records == eager.records + sum(e.records for e in events)
    assert p.snapshot() == p.model(p.covered[2])


def test_async_lost_notification_is_covered_by_the_next():
    p = Pipeline("async", parallelism=2)
    p.ingest(50)
    _, _, first = p.checkpoint(1)
    # notification for 1 lost
    p.ingest(50)
    _, _, second = p.checkpoint(2)
    a, b = first[0].instant, second[0].instant
    assert a < b
    assert p.coordinator.pending_instants == [a, b]
    assert p.snapshot() == []  # nothing committed yet
    results = p.notify(2)
    assert instant_times(results) == [a, b]  # both, in checkpoint order
    assert [r.checkpoint_id for r in results] == [0 - 1, 1]
    assert results[0].instant.completion_time < results[1].instant.completion_time
    assert [i.requested_time for i in p.completed()] == [a, b]
    assert p.snapshot() == p.model(p.covered[2])
    p.assert_all_files_committed_once()
    # a late notification for 1 finds nothing left to commit
    assert p.notify(1) == []
    assert len(p.completed()) == 2


def test_async_late_notification_does_not_commit_newer_buffers():
    p = Pipeline("async", parallelism=2)
    p.ingest(20)
    p.checkpoint(1)
    p.ingest(20)
    p.checkpoint(2)
    (result,) = p.notify(1)  # late: only buffer -1 is covered by checkpoint 1
    assert result.checkpoint_id == -1
    assert len(p.coordinator.pending_instants) == 1
    assert p.snapshot() == p.model(p.covered[1])


@pytest.mark.parametrize("mode", ["async", "blocking", "minibatch"])
@pytest.mark.parametrize("allow", [True, False])
def test_an_empty_instant_is_committed_if_allowed_else_dropped_and_left_pending(mode, allow):
    """An instant that got only empty last batches: committed empty, or (empty commits not
    allowed) dropped as Hudi 1.1's commitInstant does: its buffer reset, its heartbeat stopped,
    the instant left pending for failed-writes cleaning."""
    dropped: list[str] = []
    p = Pipeline(mode, parallelism=2, allow_empty_commit=allow)
    p.coordinator.committer.on_drop = dropped.append
    p.ingest(10)
    p.checkpoint(1)
    p.notify(1)
    empty = run(p.coordinator.request_instant(0, 1), p.clock)  # an instant, then no data
    if mode == "minibatch":
        p.coordinator.handle_event(WriteMetadataEvent(0, None, 1, (), False))
    p.checkpoint(2)
    results = p.notify(2)
    assert len(results) == (1 if allow else 0)
    if allow:
        assert results[0].files == () and results[0].records == 0
        assert results[0].instant.requested_time == empty
    writes = [i for i in p.completed() if i.action != "rollback"]
    assert len(writes) == 1 + allow
    assert p.coordinator.pending_instants == []
    pending = [i.requested_time for i in p.writer.timeline.load().pending()]
    assert pending == ([] if allow else [empty])
    assert dropped == ([] if allow else [empty])


class Rollbacks:
    """A :class:`models.write.rollback.RollbackListener` that keeps what it is told."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.done: list[tuple[str, Instant]] = []

    def rolling_back(self, instant_time: str) -> None:
        self.started.append(instant_time)

    def rolled_back(self, instant_time: str, rollback: Instant) -> None:
        self.done.append((instant_time, rollback))


def test_eager_cleaning_rolls_back_every_pending_instant_when_an_instant_starts():
    """``startCommit`` under EAGER (``CleanerUtils.rollbackFailedWrites``): a dropped empty
    instant, and any other pending write, is rolled back before the next instant is created."""
    p = Pipeline("blocking", parallelism=2, allow_empty_commit=False)
    p.ingest(10)
    p.checkpoint(1)
    p.notify(1)
    empty = run(p.coordinator.request_instant(0, 1), p.clock)
    p.checkpoint(2)
    p.notify(2)  # dropped, left pending
    listener = Rollbacks()
    p.coordinator.failed_writes_cleaning, p.coordinator.on_rollback = "EAGER", listener
    later = run(p.coordinator.request_instant(0, 2), p.clock)
    timeline = p.writer.timeline.load()
    assert [i.requested_time for i in timeline.pending()] == [later]
    assert listener.started == [empty] and [i for i, _ in listener.done] == [empty]
    assert timeline.get(empty) is None and listener.done[0][1].action == "rollback"


# --- blocking ------------------------------------------------------------------------------------


def test_blocking_task_waits_for_the_commit():
    p = Pipeline("blocking", parallelism=2)
    p.ingest(40)
    first = p.flush(0, last_batch=True)
    assert first is not None
    p.tasks[0].snapshot_state(1)
    # task 0 sent its last batch for checkpoint 1: no instant for id 1 until the commit
    assert run(p.coordinator.request_instant(0, 1), p.clock) is None
    later = route(p.source.batch(40, 80), 2, 2)  # offsets 40..80 reach task 0 first
    p.tasks[0].add(later[0])
    assert p.flush(0) is None  # its eager flush has to wait
    assert p.tasks[0].buffered_rows == later[0].num_rows > 0
    second = p.flush(1, last_batch=True)  # task 1 still carries -1: the pending instant
    assert second.instant == first.instant
    p.tasks[1].snapshot_state(1)
    p.tasks[1].add(later[1])
    p.offset = 80
    p.covered[1] = 40  # task 0 still buffers offsets 40..80
    assert run(p.coordinator.request_instant(1, 1), p.clock) is None
    assert p.coordinator.pending_instants == [first.instant]
    (result,) = p.notify(1)
    assert result.instant.requested_time == first.instant
    assert p.coordinator.pending_instants == []
    # the next request after the commit starts the next instant, and both tasks get it
    nxt = run(p.coordinator.request_instant(0, 1), p.clock)
    assert nxt is not None and nxt > first.instant
    timeline = p.writer.timeline.load()
    assert timeline.get(nxt).state is State.INFLIGHT
    assert run(p.coordinator.request_instant(1, 1), p.clock) == nxt
    assert p.snapshot() == p.model(40)
    p.ingest(20)
    _, _, events = p.checkpoint(2)
    assert {e.instant for e in events} == {nxt}
    p.notify(2)
    assert p.snapshot() == p.model(p.covered[2])


def test_blocking_late_notification_commits_only_the_ids_below_it():
    """Blocking mode commits by checkpoint id as async does (Hudi's ``commitInstants``), not
    "once every task sent a last batch": a late or repeated notification for 1 never commits
    what the tasks flushed after snapshotting 1, though each of them sent its last batch for it
    (the old one-instant model did, and a failure of checkpoint 2 then replayed it twice)."""
    p = Pipeline("blocking", parallelism=2, operation="insert")
    p.ingest(40)
    _, _, first = p.checkpoint(1)  # both tasks flush (id -1) into instant A
    a = first[0].instant
    p.ingest(40)
    # checkpoint 2's barrier reaches task 0 before the notification for 1: no instant yet
    assert p.flush(0, last_batch=True) is None
    assert p.coordinator.pending_instants == [a]
    (result,) = p.notify(1)
    assert result.instant.requested_time == a
    b = p.flush(0, last_batch=True)  # now instant B, for id 1
    assert b is not None and b.instant > a and b.checkpoint_id == 1
    assert p.flush(1, last_batch=True).instant == b.instant
    for task in p.tasks:
        task.snapshot_state(2)
    p.covered[2] = p.offset
    assert p.notify(1) == []  # B holds every task's last batch, but of checkpoint 2
    assert p.snapshot() == p.model(p.covered[1])
    (result,) = p.notify(2)
    assert result.instant.requested_time == b.instant
    assert p.snapshot() == p.model(p.covered[2])


# --- minibatch -----------------------------------------------------------------------------------


def test_minibatch_instant_spans_checkpoints_when_a_notification_is_lost():
    p = Pipeline("minibatch", parallelism=2)
    p.ingest(30)
    _, _, first = p.checkpoint(1)
    # notification for 1 lost: the instant stays open and the tasks keep writing into it
    p.ingest(30)
    _, _, second = p.checkpoint(2)
    instant = first[0].instant
    assert {e.instant for e in first + second} == {instant}
    assert p.snapshot() == []
    (result,) = p.notify(2)
    assert result.instant.requested_time == instant
    assert result.records == sum(e.records for e in first + second)
    assert p.snapshot() == p.model(p.covered[2])
    assert p.coordinator.pending_instants == []
    # the next request starts a new instant
    p.ingest(10)
    nxt = p.flush(0)
    assert nxt.instant > instant
    assert p.coordinator.pending_instants == [nxt.instant]


# --- failover ------------------------------------------------------------------------------------


def test_restore_recommits_pending_instants_and_bootstrap_commits_the_rest():
    p = Pipeline("async", parallelism=2)
    p.ingest(40)
    _, _, first = p.checkpoint(1)
    # notification for 1 lost; checkpoint 2 completes, the job crashes before its notification
    p.ingest(40)
    coordinator_state, task_states, second = p.checkpoint(2)
    # the coordinator snapshotted buffer -1 (complete, < 2); buffer 1 was still being filled
    assert [b.instant for b in coordinator_state.buffers] == [first[0].instant]
    assert p.snapshot() == []
    results = p.failover(coordinator_state, task_states, restored=2)
    assert instant_times(results) == [first[0].instant, second[0].instant]
    assert all(r.recommit for r in results)
    assert [r.checkpoint_id for r in results] == [-1, 1]
    assert p.snapshot() == p.model(p.covered[2])
    # and the job goes on from checkpoint 2
    p.ingest(40)
    p.checkpoint(3)
    p.notify(3)
    assert p.snapshot() == p.model(p.covered[3])
    assert len(p.completed()) == 3
    p.assert_all_files_committed_once()


@pytest.mark.parametrize("operation", ["upsert", "insert"])
def test_eager_flush_events_do_not_make_a_buffer_complete(operation):
    """Every task flushed eagerly for id 1 before checkpoint 2: all slots of buffer 1 are filled,
    but the last batches are still to come. Persisting it would re-commit it without them after a
    restore, and the re-sent last batches would then be dropped (instant already completed)."""
    p = Pipeline("async", parallelism=2, operation=operation)
    p.ingest(40)
    p.checkpoint(1)
    p.notify(1)
    p.ingest(40)
    eager = [p.flush(i) for i in range(2)]
    assert all(e.write_stats for e in eager)
    p.ingest(40)
    coordinator_state, task_states, events = p.checkpoint(2)
    assert all(e.write_stats for e in events)
    assert coordinator_state.buffers == ()
    results = p.failover(coordinator_state, task_states, restored=2)
    assert instant_times(results) == [eager[0].instant]
    assert results[0].records == sum(e.records for e in eager + events)
    p.assert_all_files_committed_once()
    assert p.snapshot() == p.model(p.covered[2])


def test_event_buffer_complete_needs_every_last_batch():
    p = Pipeline("async", parallelism=2)
    p.ingest(20)
    p.flush(0)
    p.flush(1)
    assert p.coordinator.snapshot_state(1).buffers == ()
    p.flush(0, last_batch=True)
    assert p.coordinator.snapshot_state(1).buffers == ()
    p.flush(1, last_batch=True)
    (buffer,) = p.coordinator.snapshot_state(1).buffers
    assert buffer.complete and buffer.checkpoint_id == -1
    assert p.coordinator.snapshot_state(-1).buffers == ()  # only ids below the checkpoint


@pytest.mark.parametrize("operation", ["upsert", "insert"])
def test_hudi_9570_crash_after_snapshot_before_notification(operation):
    """Data flushed for checkpoint 2 is committed exactly once after the restore."""
    p = Pipeline("async", parallelism=2, operation=operation)
    p.ingest(40)
    p.checkpoint(1)
    p.notify(1)
    p.ingest(40)
    coordinator_state, task_states, events = p.checkpoint(2)
    assert coordinator_state.buffers == ()  # nothing fully received when it snapshotted
    assert all(s.events for s in task_states)
    pending = events[0].instant
    results = p.failover(coordinator_state, task_states, restored=2)
    assert instant_times(results) == [pending]
    assert p.snapshot() == p.model(p.covered[2])
    # the source replays from checkpoint 2's offset; nothing is written twice
    p.ingest(40)
    p.checkpoint(3)
    p.notify(3)
    assert p.snapshot() == p.model(p.covered[3])
    offsets = [r["offset"] for r in p.snapshot()]
    if operation == "insert":
        assert offsets == sorted(set(offsets)) and len(offsets) == p.covered[3]
    p.assert_all_files_committed_once()


def test_hudi_9570_without_persisted_write_meta_loses_data():
    p = Pipeline("async", parallelism=2, operation="insert", persist_write_meta=False)
    p.ingest(40)
    p.checkpoint(1)
    p.notify(1)
    p.ingest(40)
    coordinator_state, task_states, events = p.checkpoint(2)
    assert all(s.events == () for s in task_states)
    assert p.failover(coordinator_state, task_states, restored=2) == []
    lost = events[0].instant
    assert not p.writer.timeline.load().is_completed(lost)
    p.ingest(40)
    p.checkpoint(3)
    p.notify(3)
    got = {r["offset"] for r in p.snapshot()}
    # checkpoint 3 covers [0, 120) but the records flushed for checkpoint 2 never got committed
    assert got == set(range(p.covered[3])) - set(range(p.covered[1], p.covered[2]))
    assert p.snapshot() != p.model(p.covered[3])
    orphans = p.data_files() - set(p.committed_files())
    assert orphans == {s.path for e in events for s in e.write_stats}


# --- finalizing a commit -------------------------------------------------------------------------


@pytest.mark.parametrize("operation", ["insert", "upsert"])
def test_commit_deletes_created_files_its_write_stats_do_not_name(operation):
    """Hudi's reconcileAgainstMarkers: a file with a CREATE marker that no event of the commit
    lists (a flush whose event never arrived) is deleted; the listed files stay. In 1.x every log
    file is created for one deltacommit, so stray logs (upsert) go as well as base files."""
    p = Pipeline("async", parallelism=2, operation=operation)
    p.ingest(40)
    p.checkpoint(1)
    p.notify(1)
    p.ingest(40)
    instant = run(p.coordinator.request_instant(0, 1), p.clock)
    stray = write_records(  # task 0 wrote files for the instant but its event got lost
        p.writer,
        Instant(instant, State.INFLIGHT, p.writer.default_action),
        p.tasks[0].take_buffer(),
        task_id=0,
        layout=p.layout,
        log_versions=p.log_versions[0],
    )
    assert stray and all(p.storage.exists(s.path) for s in stray)
    p.ingest(40)
    _, _, events = p.checkpoint(2)
    (result,) = p.notify(2)
    assert result.instant.requested_time == instant
    assert not any(p.storage.exists(s.path) for s in stray)
    assert all(p.storage.exists(s.path) for e in events for s in e.write_stats)
    p.assert_all_files_committed_once()


def test_commit_keeps_appended_log_files():
    """Appends to an existing log (APPEND markers, table version 6) are never reconciled away."""
    p = Pipeline("async", parallelism=2)
    p.ingest(40)
    instant = run(p.coordinator.request_instant(0, -1), p.clock)
    appended = ".00000000-0000-4000-8000-000000000000-0_20250101000000000.log.1_0-1-0"
    marker = f".hoodie/.temp/{instant}/part=p0/{appended}.marker.APPEND"
    p.storage.create_if_absent(marker, b"")
    p.storage.create_if_absent(f"part=p0/{appended}", b"#HUDI#")
    p.checkpoint(1)
    p.notify(1)
    assert p.storage.exists(f"part=p0/{appended}")


def test_a_buffer_no_task_sent_anything_to_commits_nothing():
    """Hudi's isEmptyDataWriteBuffer: an instant was started but no event arrived; unlike a buffer
    of empty events it is not committed even when empty commits are allowed."""
    p = Pipeline("async", parallelism=2, allow_empty_commit=True)
    instant = run(p.coordinator.request_instant(0, -1), p.clock)
    assert p.coordinator.buffers[-1].is_empty
    assert p.notify(1) == []
    assert p.coordinator.pending_instants == []
    assert not p.writer.timeline.load().is_completed(instant)


# --- known-bad variants --------------------------------------------------------------------------


def test_commit_scope_latest_only_drops_the_instant_whose_notification_was_lost():
    """ACK 1 lost, ACK 2 arrives: the real rule commits both buffers in checkpoint order; the
    variant commits only the newest and the first checkpoint's data is lost."""
    runs = {}
    for scope in ("all_below", "latest_only"):
        p = Pipeline("async", parallelism=2, commit_scope=scope)
        p.ingest(40)
        _, _, first = p.checkpoint(1)
        p.ingest(40)
        _, _, second = p.checkpoint(2)
        runs[scope] = (p, instant_times(p.notify(2)), first[0].instant, second[0].instant)
    p, committed, first, second = runs["all_below"]
    assert committed == [first, second]
    assert p.snapshot() == p.model(p.covered[2])
    p, committed, first, second = runs["latest_only"]
    assert committed == [second]
    assert p.coordinator.pending_instants == []  # dropped, never to be committed
    assert not p.writer.timeline.load().is_completed(first)
    got = {r["offset"] for r in p.snapshot()}
    assert got and not got & set(range(p.covered[1]))  # the first checkpoint's records are gone
    assert p.snapshot() != p.model(p.covered[2])


def test_commit_scope_latest_only_is_the_real_rule_when_no_notification_is_lost():
    p = Pipeline("async", parallelism=2, commit_scope="latest_only")
    for n in (1, 2, 3):
        p.ingest(30)
        p.checkpoint(n)
        assert len(p.notify(n)) == 1
        assert p.snapshot() == p.model(p.covered[n])


def _partial_buffer_failover(snapshot_partial_buffers: bool):
    """Checkpoint 2 starts while the tasks are filling buffer 1 (eager flushes only), completes,
    and the job manager crashes before its notification: a global failover from checkpoint 2."""
    p = Pipeline(
        "async",
        parallelism=2,
        operation="insert",
        snapshot_partial_buffers=snapshot_partial_buffers,
    )
    p.ingest(40)
    p.checkpoint(1)
    p.notify(1)
    p.ingest(40)
    eager = [p.flush(i) for i in range(2)]
    p.ingest(40)
    coordinator_state, task_states, last = p.checkpoint(2)
    results = p.failover(coordinator_state, task_states, restored=2)
    return p, coordinator_state, results, eager, last


def test_partial_buffers_are_not_checkpointed_and_failover_commits_them_whole():
    p, state, results, eager, last = _partial_buffer_failover(False)
    assert state.buffers == ()
    assert instant_times(results) == [eager[0].instant]
    assert results[0].records == sum(e.records for e in eager + last)
    assert p.snapshot() == p.model(p.covered[2])
    p.assert_all_files_committed_once()


def test_checkpointed_buffer_without_any_event_is_harmless():
    """An all-empty buffer in the coordinator's checkpoint commits nothing on restore (Hudi's
    isEmptyDataWriteBuffer); the tasks' re-sent events commit the instant whole."""
    p = Pipeline("async", parallelism=2, operation="insert", snapshot_partial_buffers=True)
    p.ingest(40)
    p.checkpoint(1)
    p.notify(1)
    p.ingest(40)
    instant = run(p.coordinator.request_instant(0, 1), p.clock)
    coordinator_state, task_states, last = p.checkpoint(2)
    (buffer,) = coordinator_state.buffers
    assert buffer.is_empty and buffer.instant == instant
    results = p.failover(coordinator_state, task_states, restored=2)
    assert instant_times(results) == [instant]
    assert results[0].records == sum(e.records for e in last)
    assert p.snapshot() == p.model(p.covered[2])


def test_restore_after_the_commit_commits_nothing_twice():
    p = Pipeline("async", parallelism=2, operation="insert")
    p.ingest(30)
    p.checkpoint(1)
    p.ingest(30)
    coordinator_state, task_states, _ = p.checkpoint(2)
    assert len(coordinator_state.buffers) == 1
    assert len(p.notify(2)) == 2  # committed, then the job fails for another reason
    assert p.failover(coordinator_state, task_states, restored=2) == []
    assert len(p.completed()) == 2
    assert p.snapshot() == p.model(p.covered[2])


def test_restore_without_state_and_fresh_bootstrap():
    p = Pipeline("async", parallelism=2)
    p.ingest(10)
    p.flush(0)  # data flushed, no checkpoint ever completed
    p.covered[-1] = 0
    assert p.failover(None, [None, None], restored=-1) == []
    assert p.completed() == []
    assert p.snapshot() == []


def test_a_bootstrap_event_is_filed_at_any_time():
    """Hudi 1.1 ``handleBootstrapEvent`` (note C25): a bootstrap outside a restore is filed under
    its checkpoint id; a fresh task sends none."""
    p = Pipeline("async", parallelism=2)
    assert p.tasks[0].restore(None, attempt=0, pending=lambda i: True) is None
    instant = run(p.coordinator.request_instant(0, 0), p.clock)
    resent = WriteMetadataEvent(0, instant, 0, [a_stat()], bootstrap=True)
    assert run(p.coordinator.handle_bootstrap(BootstrapEvent(0, 1, (resent,))), p.clock) == []
    assert p.coordinator.buffers[0].events[0] is not None and p.coordinator.bootstrapping


@pytest.mark.parametrize("eager", [False, True])
@pytest.mark.parametrize("operation", ["upsert", "insert"])
def test_minibatch_failover_commits_the_open_instant_with_resent_events(operation, eager):
    """Notification 1 lost, crash after checkpoint 2: the coordinator's state holds the open
    instant as received before checkpoint 2; the tasks' state holds what they wrote into it since
    checkpoint 1. One commit must list all of it, each file once."""
    p = Pipeline("minibatch", parallelism=2, operation=operation)
    p.ingest(40)
    _, _, first = p.checkpoint(1)
    p.ingest(40)
    if eager:  # these events are both in the coordinator's state and in the tasks' state
        assert all(p.flush(i).write_stats for i in range(2))
        p.ingest(40)
    coordinator_state, task_states, second = p.checkpoint(2)
    assert [b.instant for b in coordinator_state.buffers] == [first[0].instant]
    assert all(e.instant == first[0].instant and e.write_stats for e in second)
    results = p.failover(coordinator_state, task_states, restored=2)
    assert instant_times(results) == [first[0].instant]
    p.assert_all_files_committed_once()
    assert p.snapshot() == p.model(p.covered[2])


def test_minibatch_state_keeps_the_open_instant():
    p = Pipeline("minibatch", parallelism=2)
    p.ingest(30)
    p.checkpoint(1)
    state = p.coordinator.snapshot_state(2)
    assert len(state.buffers) == 1
    p.failover(state, [t.snapshot_state(2) for t in p.tasks], restored=1)
    assert p.snapshot() == p.model(p.covered[1])


# --- protocol errors -----------------------------------------------------------------------------


def a_stat() -> WriteStat:
    return WriteStat(file_id="fg-x", path="part=p0/x", partition_path="part=p0")


def test_unexpected_event_raises():
    p = Pipeline("async", parallelism=2)
    with pytest.raises(EventBufferError, match="unexpected"):
        p.coordinator.handle_event(WriteMetadataEvent(0, "20991231000000000", 0, [a_stat()]))
    p.ingest(20)
    p.flush(0)
    with pytest.raises(EventBufferError, match="unexpected"):
        p.coordinator.handle_event(WriteMetadataEvent(1, "20991231000000000", -1, [a_stat()]))
    with pytest.raises(CoordinatorError):
        p.coordinator.handle_event(WriteMetadataEvent(2, None, -1))  # no such task


def test_events_for_a_completed_instant():
    p = Pipeline("async", parallelism=2)
    p.ingest(20)
    _, _, events = p.checkpoint(1)
    p.notify(1)
    done = events[0].instant
    p.coordinator.handle_event(WriteMetadataEvent(0, done, 0))  # empty: ignored
    assert p.coordinator.pending_instants == []
    with pytest.raises(EventBufferError, match="unexpected event"):
        p.coordinator.handle_event(WriteMetadataEvent(0, done, 0, [a_stat()]))
    # a new coordinator started no instant: Hudi's checkState rejects any event with one
    p.start_job()
    for stats in ([], [a_stat()]):
        with pytest.raises(EventBufferError, match="Receive an unexpected event for instant"):
            p.coordinator.handle_event(WriteMetadataEvent(1, done, 0, stats))


# --- commit retries and the pre-commit hook ------------------------------------------------------

COMPLETED_FILE = re.compile(r"timeline/\d{17}_\d{17}\.\w+$")


class FlakyStorage(InMemoryStorage):
    """Fails the creation of completed instant files ``failures`` times with an I/O error."""

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures
        self.attempts = 0

    def create_if_absent(self, path: str, data: bytes) -> None:
        if COMPLETED_FILE.search(path):
            self.attempts += 1
            if self.failures > 0:
                self.failures -= 1
                raise OSError(f"injected failure creating {path}")
        super().create_if_absent(path, data)


def test_commit_is_retried_on_storage_errors():
    storage = FlakyStorage(failures=2)
    p = Pipeline("async", parallelism=2, storage=storage)
    p.ingest(30)
    _, _, events = p.checkpoint(1)
    (result,) = p.notify(1)
    assert storage.attempts == 3
    assert result.instant.requested_time == events[0].instant
    assert [i.requested_time for i in p.completed()] == [events[0].instant]
    assert not p.lock.held
    assert p.snapshot() == p.model(p.covered[1])


def test_commit_gives_up_after_the_retries():
    storage = FlakyStorage(failures=3)
    p = Pipeline("async", parallelism=2, storage=storage)
    p.ingest(30)
    p.checkpoint(1)
    with pytest.raises(CoordinatorError, match="failed 3 times"):
        p.notify(1)
    assert storage.attempts == 3
    assert p.completed() == []
    assert not p.lock.held


def test_precommit_hook_aborts_the_commit():
    seen = []

    class Conflict(Exception):
        pass

    def precommit(instant: Instant, stats: tuple[WriteStat, ...]) -> None:
        seen.append((instant, stats))
        raise Conflict("conflict with a concurrent writer")

    p = Pipeline("async", parallelism=2, precommit=precommit)
    p.ingest(30)
    _, _, events = p.checkpoint(1)
    before = set(p.storage.paths())
    with pytest.raises(Conflict):
        p.notify(1)
    assert set(p.storage.paths()) == before  # nothing written
    assert p.completed() == []
    assert not p.lock.held
    ((instant, stats),) = seen
    assert instant.requested_time == events[0].instant and instant.state is State.INFLIGHT
    assert sorted(s.path for s in stats) == sorted(s.path for e in events for s in e.write_stats)


def test_precommit_hook_sees_each_commit():
    seen = []
    p = Pipeline("async", parallelism=2, precommit=lambda i, s: seen.append(i.requested_time))
    p.ingest(30)
    _, _, events = p.checkpoint(1)
    p.notify(1)
    assert seen == [events[0].instant]
    assert len(p.completed()) == 1


def test_bad_arguments():
    p = Pipeline("async")
    with pytest.raises(ValueError):
        WriteCoordinator(p.writer, parallelism=2, mode="sync")
    with pytest.raises(ValueError, match="commit_scope"):
        WriteCoordinator(p.writer, parallelism=2, commit_scope="newest")
    with pytest.raises(ValueError):
        WriteCoordinator(p.writer, parallelism=0)
    with pytest.raises(CoordinatorError):
        run(p.coordinator.request_instant(5, -1), p.clock)


def test_records_helper_sanity():
    """The model helper itself: inserts keep every record, upserts one per key."""
    p = Pipeline("async", operation="insert")
    assert len(p.model(50)) == 50
    q = Pipeline("async")
    m = q.model(200)
    assert len(m) == len({r["key"] for r in m}) <= 25
    assert pa.Table.from_pylist(m, schema=SCHEMA).num_rows == len(m)
