"""The Hudi write coordinator (``StreamWriteOperatorCoordinator``) as a pure state machine.

It runs on Flink's job manager, one per job, single-threaded (Hudi's ``NonThrownExecutor``): the
simulator hands it one message at a time. Three modes (docs/protocol.md section 6):

``async`` (Hudi 1.1)
    A buffer per checkpoint id: ``checkpoint_id -> (instant, slot per task)``. An instant request
    for id ``k`` returns the instant of buffer ``k``, creating it (TrueTime, ``requested`` and
    ``inflight`` files) if needed. ``notify_checkpoint_complete(n)`` commits, serially and in
    checkpoint order, **every** buffer with id ``< n`` and drops them (Flink's subsume contract: a
    lost notification for ``n - 1`` is covered by ``n``). Writers never wait for a commit.
``blocking`` (COPY_ON_WRITE upserts; before 1.1 every job)
    The same buffers and the same notification rule, plus Hudi's *commit guard*
    (``EventBuffers.awaitAllInstantsToCompleteIfNecessary``, on when
    ``OptionsResolver.isBlockingInstantGeneration``): a request for an id that has no buffer yet
    gets no instant (``None``: the task waits and asks again) while any pending buffer has received
    an event (``EventBuffers.nonEmpty``). So an instant holding data is committed before the next
    one starts, and a task that flushed its last batch for checkpoint ``n`` waits until the
    notification for ``n`` committed it. Correct, but writers stall between their checkpoint
    flush and the commit. The notification only commits buffers with id ``< n``: records a task
    flushed after snapshotting ``n`` (id ``n``) are never committed by it, however late it comes
    (``tests/models/test_coordinator_stateful.py``: a late notification never commits part of a
    pending checkpoint).
``minibatch`` (docs/protocol.md section 6.5)
    One instant at a time that tasks keep writing into across checkpoints; a notification commits
    whatever has arrived so far and a new instant starts on the next request. After a failover
    the source replays data that an earlier commit already contained: at-least-once, duplicates
    for inserts, still correct for upserts (the design's stated semantics), but never a loss. So
    a notification that finds a flush into the open instant still under way (a task was handed
    the instant and has sent no event since) commits nothing: committing then would complete the
    instant without the files being written, a completed later checkpoint would cover those
    records, and their event would arrive for a committed instant (the job fails over, and the
    restore cannot commit them: lost). The design allows it: "some checkpoint notifications may
    be skipped" and the instant spans one more checkpoint (the next notification commits it).

An instant that ends up with nothing to commit (no event at all, Hudi's
``isEmptyDataWriteBuffer``; or only empty write statuses while empty commits are not allowed) is
not committed. Hudi 1.1's ``commitInstant`` then drops the buffer (``eventBuffers.reset``) and
stops the instant's heartbeat, leaving the requested and inflight files to failed-writes cleaning:
``EAGER`` (the default, which Flink keeps only for blocking generation) rolls it back at the next
``startCommit`` (``rollbackFailedWrites``), ``LAZY`` (forced for async generation by
``FlinkWriteClients``) once the stopped heartbeat has expired. Here the coordinator rolls it back
itself, right when it drops it: the same end state without depending on a cleaner (a single
job's simulation may run none), and safe because no task can still write into it (every event
for a checkpoint id below ``n`` reaches the coordinator before the task's ACK that completes
``n``). Left inflight, it would be a pending instant that no one ever commits, blocking
archiving and, in blocking mode, showing two open instants.

State and failover (the order matters): the coordinator snapshots first for checkpoint ``i``
(:meth:`snapshot_state` keeps the buffers with id ``< i`` in which every task's last batch
arrived: a buffer still being filled is covered by the tasks' own state instead); on restore it
re-commits every restored instant not yet completed, then collects one :class:`BootstrapEvent`
per task and, once all arrived, commits the re-sent events of instants still pending whose data
the restored checkpoint covered (minibatch: the restored open instant is committed then, together
with the events the tasks re-send for it).

Every commit *finalizes the write* as Hudi's write client does (``HoodieTable.finalizeWrite`` ->
``reconcileAgainstMarkers``, done by :meth:`TableWriter.commit`): a data file the instant's markers
announce as created but no write status of the commit names is deleted, so files left out of a
commit's metadata are gone, not silently visible.

OCC: a commit that loses its conflict check (:class:`~models.txn.concurrency.ConcurrentWriteConflict`)
raises :class:`CommitConflictError` and the job fails over, as Hudi's does
(``StreamWriteOperatorCoordinator.commitInstant`` throws ``HoodieWriteConflictException`` on its
``NonThrownExecutor``, whose hook calls ``context.failJob``). The instant stays pending with its
buffer; the restarted job recommits the same instant, which conflicts again for as long as the
commit it conflicted with stands (apache/hudi#19046): no retry under a new instant exists in
Hudi's Flink sink.

Known-bad variants (``[protocol]`` switches; docs/protocol.md section 6):

``commit_scope = "latest_only"``
    On the notification for ``n`` commit only the newest buffered instant below ``n`` and drop the
    older ones. It breaks Flink's subsume contract: when the notification for ``n - 1`` was lost,
    the instant it should have committed is never committed and the data its completed checkpoint
    covered is lost (the real rule, ``all_below``, commits every buffer below ``n`` in order).
``snapshot_partial_buffers = True`` (apache/hudi#19215)
    :meth:`snapshot_state` also keeps buffers that are still being filled. What the issue and its
    fix (apache/hudi#19237) show: Hudi 1.1's ``checkpointCoordinator`` serialized the whole
    ``EventBuffers`` map, including the entry of the instant the tasks were still writing (its
    slots null, or holding only eager-flush events whose ``lastBatch`` is false); on a global
    failover (same job graph, coordinator reset to the checkpoint) ``restoreEvents`` re-committed
    that restored entry, and the instant was then *completed* with only the statuses the entry held;
    the tasks' complete events for it (from their own state, written after the coordinator's
    snapshot) are then ignored as belonging to a committed instant, so the files of the last batch
    are orphaned: data the completed checkpoint covered is lost. The fix serializes only fully
    received buffers (``EventBuffers.getAllCompletedEvents``) and has the tasks re-send their state
    on a global failover too. Here the tasks always re-send (the fixed task side), so the variant
    is the snapshot side alone: a restored buffer with no event at all commits nothing (Hudi's
    ``isEmptyDataWriteBuffer``) and the re-sent events commit it whole, while a restored buffer
    holding eager-flush events is committed half, and finalizing that commit deletes the files of
    the missing last batches.

Functions that wait (time generation, commits under the table lock) return
:data:`models.ports.Steps`. Storage errors during a commit are retried (Hudi retries commits);
protocol errors raise :class:`CoordinatorError`, which fails the job (a Flink failover).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from models.flink.event_buffers import CoordinatorState, EventBuffer
from models.flink.write_events import BootstrapEvent, WriteMetadataEvent
from models.format.commit_metadata import WriteStat
from models.ports import Steps
from models.table_errors import HoodieException
from models.timeline.instant import Instant, State
from models.txn.concurrency import ConcurrentWriteConflict
from models.write.rollback import rollback
from models.write.writer import TableWriter

COORDINATOR_MODES = ("async", "blocking", "minibatch")
COMMIT_SCOPES = ("all_below", "latest_only")
COMMIT_RETRIES = 3
"""Attempts at a commit that fails with a storage error before the job fails over."""


class CoordinatorError(HoodieException, RuntimeError):
    """A protocol violation the coordinator cannot recover from: the job fails over."""


class CommitConflictError(CoordinatorError):
    """A commit lost its OCC conflict check (Hudi's ``HoodieWriteConflictException``, "Cannot
    resolve conflicts for overlapping writes"): the job fails over and recommits the instant."""


@dataclass(frozen=True)
class CommitResult:
    """One committed instant, for the history."""

    instant: Instant
    checkpoint_id: int
    records: int
    files: tuple[str, ...]
    recommit: bool = False

    def summary(self) -> dict[str, object]:
        return {
            "instant": self.instant.requested_time,
            "completion": self.instant.completion_time,
            "checkpoint": self.checkpoint_id,
            "records": self.records,
            "files": list(self.files),
            "recommit": self.recommit,
        }


class WriteCoordinator:
    """One job's write coordinator over a :class:`TableWriter` (its own time generator)."""

    def __init__(
        self,
        writer: TableWriter,
        *,
        parallelism: int,
        mode: str = "async",
        operation_type: str = "UPSERT",
        allow_empty_commit: bool = True,
        precommit: Callable[[Instant, tuple[WriteStat, ...]], None] | None = None,
        commit_scope: str = "all_below",
        snapshot_partial_buffers: bool = False,
        on_rollback: Callable[[str, Instant], None] | None = None,
    ) -> None:
        """``precommit(instant, stats)`` runs under the table lock right before the completed
        file is created (OCC conflict checks); raising aborts the commit. ``commit_scope`` and
        ``snapshot_partial_buffers`` are the known-bad variants of the module docstring.
        ``on_rollback(instant_time, rollback)`` runs after the coordinator rolled back an instant
        it dropped with nothing to commit (for the history)."""
        if mode not in COORDINATOR_MODES:
            raise ValueError(f"mode must be one of {COORDINATOR_MODES}, not {mode!r}")
        if commit_scope not in COMMIT_SCOPES:
            raise ValueError(f"commit_scope must be one of {COMMIT_SCOPES}, not {commit_scope!r}")
        if parallelism < 1:
            raise ValueError("parallelism must be >= 1")
        self.writer = writer
        self.parallelism = parallelism
        self.mode = mode
        self.operation_type = operation_type
        self.allow_empty_commit = allow_empty_commit
        self.precommit = precommit
        self.commit_scope = commit_scope
        self.snapshot_partial_buffers = snapshot_partial_buffers
        self.on_rollback = on_rollback
        self.buffers: dict[int, EventBuffer] = {}
        self._writing: set[int] = set()  # minibatch: tasks handed the open instant, no event since
        self._restored_checkpoint: int | None = None
        self._bootstraps: dict[int, BootstrapEvent] = {}
        self._restored_open: dict[str, EventBuffer] = {}  # restored, committed after bootstrap
        self._completed: set[str] = set()  # instants this coordinator committed

    # --- queries -----------------------------------------------------------------------------------

    @property
    def pending_instants(self) -> list[str]:
        """Instants with a buffer (created, not yet committed), in checkpoint order."""
        return [self.buffers[k].instant for k in sorted(self.buffers)]

    @property
    def bootstrapping(self) -> bool:
        """True after a restore until every task's bootstrap event arrived."""
        return self._restored_checkpoint is not None

    def _current(self) -> EventBuffer | None:
        return self.buffers[max(self.buffers)] if self.buffers else None

    # --- instants ----------------------------------------------------------------------------------

    def request_instant(self, task_id: int, checkpoint_id: int) -> Steps[str | None]:
        """The instant ``task_id`` must write its next flush into; None means wait (blocking).

        Hudi's ``handleInstantRequest``: the buffer of ``checkpoint_id`` if there is one, else a
        new instant; in blocking mode only once no pending buffer has received an event (the
        commit guard). Minibatch: the open instant, and the task counts as writing into it until
        its next event arrives."""
        self._check_task(task_id)
        if self.mode == "minibatch":
            current = self._current()
            if current is None:
                current = yield from self._start_instant(checkpoint_id)
            self._writing.add(task_id)
            return current.instant
        buffer = self.buffers.get(checkpoint_id)
        if buffer is None:
            if self.mode == "blocking" and any(b.has_events for b in self.buffers.values()):
                return None  # the commit guard: wait until the pending instant is committed
            buffer = yield from self._start_instant(checkpoint_id)
        return buffer.instant

    def _start_instant(self, checkpoint_id: int) -> Steps[EventBuffer]:
        instant = yield from self.writer.start_commit()
        buffer = EventBuffer(checkpoint_id, instant.requested_time, (None,) * self.parallelism)
        self.buffers[checkpoint_id] = buffer
        return buffer

    # --- events ------------------------------------------------------------------------------------

    def handle_event(self, event: WriteMetadataEvent) -> None:
        """Record a task's write metadata in the buffer of its instant."""
        self._check_task(event.task_id)
        self._writing.discard(event.task_id)
        key = self._buffer_key(event)
        if key is None:
            return
        self.buffers[key] = self.buffers[key].with_event(event)

    def _buffer_key(self, event: WriteMetadataEvent) -> int | None:
        if event.instant is None:  # an empty last batch: it joins the buffer of its id, if any
            if self.mode != "minibatch":
                return event.checkpoint_id if event.checkpoint_id in self.buffers else None
            current = self._current()
            return None if current is None else current.checkpoint_id
        for key in sorted(self.buffers):
            if self.buffers[key].instant == event.instant:
                return key
        if event.instant in self._completed or self._is_completed(event.instant):
            if event.is_empty:
                return None
            raise CoordinatorError(
                f"write metadata from task {event.task_id} for instant {event.instant}, which is "
                "already committed: its files would never be committed"
            )
        raise CoordinatorError(
            f"unexpected event from task {event.task_id} for instant {event.instant}: "
            f"the coordinator has {self.pending_instants or 'no pending instants'}"
        )

    # --- checkpoints -------------------------------------------------------------------------------

    def snapshot_state(self, checkpoint_id: int) -> CoordinatorState:
        """``checkpointCoordinator(i)``: persist the fully received buffers with id < i (async
        and blocking alike; minibatch: the current buffer as received so far; variant
        ``snapshot_partial_buffers``: every buffer with id < i, received or not)."""
        if self.mode == "minibatch":
            kept = tuple(self.buffers[k] for k in sorted(self.buffers))
        else:
            kept = tuple(
                self.buffers[k]
                for k in sorted(self.buffers)
                if k < checkpoint_id and (self.buffers[k].complete or self.snapshot_partial_buffers)
            )
        return CoordinatorState(checkpoint_id, kept)

    def notify_checkpoint_complete(self, checkpoint_id: int) -> Steps[list[CommitResult]]:
        """Commit what checkpoint ``checkpoint_id`` covers, serially in checkpoint order (Hudi's
        ``commitInstants``: every buffer with id < ``checkpoint_id``; the ids are the last
        checkpoint a task snapshotted, so ``<``, not ``<=``). Minibatch: the open instant with
        whatever it received, unless a flush into it is still under way."""
        results: list[CommitResult] = []
        if self.mode == "minibatch":
            current = self._current()
            if current is None or self._writing:
                return results  # skipped: the next notification commits the instant
            self.buffers.clear()
            result = yield from self._commit(current)
            if result is not None:
                results.append(result)
            return results
        covered = [key for key in sorted(self.buffers) if key < checkpoint_id]
        if self.commit_scope == "latest_only":
            for key in covered[:-1]:  # their notification was lost: dropped, never committed
                del self.buffers[key]
            covered = covered[-1:]
        for key in covered:
            result = yield from self._commit(self.buffers[key])  # a failed commit keeps it
            del self.buffers[key]
            if result is not None:
                results.append(result)
        return results

    # --- failover ----------------------------------------------------------------------------------

    def restore(self, state: CoordinatorState | None) -> Steps[list[CommitResult]]:
        """``resetToCheckpoint``: reload the buffers and re-commit every restored instant that is
        not completed; then wait for the tasks' bootstrap events. (Minibatch: the restored
        instant was still open, the tasks' state holds its later events; it is committed with
        them in :meth:`handle_bootstrap`, as is a restored buffer with nothing to commit yet.)"""
        self.buffers.clear()
        self._writing.clear()
        self._bootstraps.clear()
        self._restored_open.clear()
        self._restored_checkpoint = -1 if state is None else state.checkpoint_id
        results: list[CommitResult] = []
        if state is None:
            return results
        for buffer in state.buffers:
            if self._is_completed(buffer.instant):
                continue
            if self.mode == "minibatch" or self._nothing_to_commit(buffer):
                # minibatch: still open, the tasks re-send its later events; otherwise only the
                # re-sent events can fill it (variant snapshot_partial_buffers): both wait for
                # the bootstrap, which commits them or, still empty, rolls them back
                self._restored_open[buffer.instant] = buffer
                continue
            result = yield from self._commit(buffer, recommit=True)
            if result is not None:
                results.append(result)
        return results

    def handle_bootstrap(self, event: BootstrapEvent) -> Steps[list[CommitResult]]:
        """Collect one bootstrap event per task; when all are in, re-commit the re-sent events of
        instants still pending (the restored checkpoint covered them)."""
        self._check_task(event.task_id)
        if self._restored_checkpoint is None:
            raise CoordinatorError(f"bootstrap event from task {event.task_id} outside a restart")
        self._bootstraps[event.task_id] = event
        if len(self._bootstraps) < self.parallelism:
            return []
        by_instant: dict[str, EventBuffer] = dict(self._restored_open)
        for task_id in sorted(self._bootstraps):
            for resent in self._bootstraps[task_id].events:
                if resent.instant is None or self._is_completed(resent.instant):
                    continue
                buffer = by_instant.get(resent.instant) or EventBuffer(
                    resent.checkpoint_id, resent.instant, (None,) * self.parallelism
                )
                prior = buffer.events[resent.task_id]
                if prior is not None:  # restored too: keep only the files it lacks
                    known = {s.path for s in prior.write_stats}
                    new = tuple(s for s in resent.write_stats if s.path not in known)
                    resent = replace(resent, write_stats=new, records=resent.records if new else 0)
                by_instant[resent.instant] = buffer.with_event(resent)
        self._bootstraps.clear()
        self._restored_open.clear()
        self._restored_checkpoint = None
        results: list[CommitResult] = []
        for buffer in sorted(by_instant.values(), key=lambda b: (b.checkpoint_id, b.instant)):
            result = yield from self._commit(buffer, recommit=True)
            if result is not None:
                results.append(result)
        return results

    # --- commits -----------------------------------------------------------------------------------

    def _commit(self, buffer: EventBuffer, *, recommit: bool = False) -> Steps[CommitResult | None]:
        stats = buffer.write_stats
        if self._nothing_to_commit(buffer):
            yield from self._abandon(buffer.instant)
            return None
        inflight = Instant(buffer.instant, State.INFLIGHT, self.writer.default_action)
        precommit = None
        if self.precommit is not None:
            hook = self.precommit

            def precommit() -> None:
                hook(inflight, stats)

        try:
            for attempt in range(COMMIT_RETRIES):
                try:
                    done = yield from self.writer.commit(
                        inflight, stats, self.operation_type, precommit=precommit
                    )
                    break
                except OSError:
                    if attempt == COMMIT_RETRIES - 1:
                        raise CoordinatorError(
                            f"commit of {buffer.instant} failed {COMMIT_RETRIES} times"
                        ) from None
        except ConcurrentWriteConflict as conflict:
            raise CommitConflictError(
                f"Cannot resolve conflicts for overlapping writes: {conflict}"
            ) from conflict
        self._completed.add(buffer.instant)
        return CommitResult(
            done,
            buffer.checkpoint_id,
            buffer.records,
            tuple(s.path for s in stats),
            recommit,
        )

    def _nothing_to_commit(self, buffer: EventBuffer) -> bool:
        """No event at all, or only empty write statuses while empty commits are not allowed."""
        return buffer.is_empty or (not buffer.write_stats and not self.allow_empty_commit)

    def _abandon(self, instant_time: str) -> Steps[None]:
        """Roll back an instant dropped with nothing to commit (see the module docstring): what
        Hudi's failed-writes cleaning does to it later, done at once."""
        known = self.writer.timeline.load().get(instant_time) is not None
        if not known or self._is_completed(instant_time):
            return  # already cleaned (or committed) by someone else
        failed = Instant(instant_time, State.INFLIGHT, self.writer.default_action)
        done = yield from rollback(
            self.writer.table, self.writer, failed, self.writer.time_generator
        )
        if self.on_rollback is not None:
            self.on_rollback(instant_time, done)

    def _is_completed(self, instant_time: str) -> bool:
        if instant_time in self._completed:
            return True
        return self.writer.timeline.load().is_completed(instant_time)

    def _check_task(self, task_id: int) -> None:
        if not 0 <= task_id < self.parallelism:
            raise CoordinatorError(f"task id {task_id} outside parallelism {self.parallelism}")
