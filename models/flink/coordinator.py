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
    The same, plus Hudi's *commit guard* (``EventBuffers.awaitAllInstantsToCompleteIfNecessary``,
    on when ``OptionsResolver.isBlockingInstantGeneration``): a request for an id without a
    buffer gets no instant (``None``) while any pending buffer has an event
    (``EventBuffers.nonEmpty``); how the request then waits is the simulator's
    (``[protocol] instant_request``; Hudi 1.1 waits for one reset's signal and starts the
    instant without looking again, :meth:`WriteCoordinator.start_after_guard`). Under EAGER
    failed-writes cleaning each new instant first rolls back every pending write instant
    (``startCommit`` -> ``rollbackFailedWrites``). A notification for ``n`` never commits what a
    task flushed after snapshotting ``n`` (``tests/models/flink/test_coordinator_stateful.py``).
``minibatch`` (docs/protocol.md section 6.5)
    One instant at a time that tasks keep writing into across checkpoints; a notification commits
    whatever has arrived, unless a flush into the open instant is still under way (then the next
    one does: committing would complete the instant without those files). At-least-once.

An instant that ends up with nothing to commit (no event at all, Hudi's
``isEmptyDataWriteBuffer``; or only empty write statuses while empty commits are not allowed) is
not committed. Hudi 1.1's ``commitInstant`` then drops the buffer and stops the instant's
heartbeat, leaving the instant pending, with its files, to failed-writes cleaning: under EAGER the
write client's next ``startCommit`` rolls it back, under LAZY the next clean (its heartbeat file
is gone, so it counts as expired at once).

State and failover (Hudi 1.1 ``StreamWriteOperatorCoordinator``; docs/protocol.md section 6.6):
:meth:`snapshot_state` keeps the complete buffers below the checkpoint. A task (region) failover
keeps this object untouched (the tasks' empty bootstraps clear their slots,
:meth:`handle_bootstrap`); a global failover calls :meth:`reset_to_checkpoint` on it; a
JobManager failover or a rescale makes a new object, reset then started (:meth:`start`), and the
tasks re-send their restored events as bootstrap events (a buffer full of them is re-committed
at once, otherwise at a later notification: a *deferred* recommit). A restored buffer whose
instant is already completed is dropped, never committed twice.

Commits go through :class:`~models.flink.commits.InstantCommitter` (finalizing the write, the
OCC check: a conflict fails the job over and the restart recommits the same instant,
apache/hudi#19046).

Known-bad variants: the ``[protocol]`` switches ``commit_scope`` (``latest_only`` breaks Flink's
subsume contract), ``snapshot_partial_buffers`` (apache/hudi#19215), ``reset_recommit`` (Hudi
1.1: a reset commits nothing) and ``checkpoint_deferred_recommits`` (apache/hudi#19922); each is
described in docs/protocol.md section 6.6 and has a catalog scenario (docs/scenarios.md).

Functions that wait (time generation, commits under the table lock) return
:data:`models.ports.Steps`. Storage errors during a commit are retried (Hudi retries commits);
protocol errors raise :class:`CoordinatorError`, which fails the job (a Flink failover).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from models.flink.commits import (
    COMMIT_RETRIES,
    CommitConflictError,
    CommitResult,
    CoordinatorError,
    InstantCommitter,
)
from models.flink.event_buffers import CoordinatorState, EventBuffer, EventBufferError, EventBuffers
from models.flink.minibatch import MinibatchRestore
from models.flink.write_events import BootstrapEvent, WriteMetadataEvent
from models.format.commit_metadata import WriteStat
from models.ports import Steps
from models.timeline.instant import Instant
from models.txn.write_config import SINGLE_WRITER, validate_write_config
from models.write.rollback import RollbackListener, rollback_failed_writes
from models.write.writer import TableWriter

COORDINATOR_MODES = ("async", "blocking", "minibatch")
COMMIT_SCOPES = ("all_below", "latest_only")
RESET_RECOMMITS = ("immediate", "next_notification")
INSTANT_REQUESTS = ("polled", "blocked")


@dataclass(frozen=True)
class RestoreRules:
    """The restore switches of the module docstring (defaults: the latest rules)."""

    snapshot_partial_buffers: bool = False
    reset_recommit: str = "immediate"
    checkpoint_deferred_recommits: bool = True

    def __post_init__(self) -> None:
        if self.reset_recommit not in RESET_RECOMMITS:
            raise ValueError(f"reset_recommit must be one of {RESET_RECOMMITS}")


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
        restore_rules: RestoreRules | None = None,
        on_drop: Callable[[str], None] | None = None,
        concurrency_mode: str = SINGLE_WRITER,
        failed_writes_cleaning: str = "LAZY",
        on_rollback: RollbackListener | None = None,
        instant_request: str = "polled",
        write_ignore_failed: bool = False,
    ) -> None:
        """``precommit(instant, stats)`` runs under the table lock before the completed file is
        created (OCC); raising aborts the commit. ``on_drop(instant_time)``: an instant dropped
        with nothing to commit. ``failed_writes_cleaning``: the write client's policy (EAGER: a
        new instant first rolls back every pending write instant, told to ``on_rollback``).
        ``instant_request``: how a held-back request waits (the simulator's part).
        ``write_ignore_failed``: Hudi's ``write.ignore.failed`` (commit an instant whose write
        statuses hold error records instead of rolling it back and failing the job). The write
        client's config is validated as Hudi does (``validate_write_config``)."""
        validate_write_config(writer.table.config, concurrency_mode)
        if mode not in COORDINATOR_MODES:
            raise ValueError(f"mode must be one of {COORDINATOR_MODES}, not {mode!r}")
        if commit_scope not in COMMIT_SCOPES:
            raise ValueError(f"commit_scope must be one of {COMMIT_SCOPES}, not {commit_scope!r}")
        if parallelism < 1:
            raise ValueError("parallelism must be >= 1")
        self.writer = writer
        self.parallelism = parallelism
        self.mode = mode
        self.commit_scope = commit_scope
        self.rules = restore_rules or RestoreRules()
        self.committer = InstantCommitter(
            writer,
            operation_type=operation_type,
            allow_empty_commit=allow_empty_commit,
            precommit=precommit,
            on_drop=on_drop,
            ignore_failed=write_ignore_failed,
            on_rollback=on_rollback,
        )
        if instant_request not in INSTANT_REQUESTS:
            raise ValueError(f"instant_request must be one of {INSTANT_REQUESTS}")
        self.failed_writes_cleaning = failed_writes_cleaning
        self.instant_request = instant_request
        self.on_rollback = on_rollback
        self.buffers = EventBuffers()
        self.instant: str | None = None  # Hudi's field ``instant``: the newest one started here
        self.started = False
        self._writing: set[int] = set()  # minibatch: tasks handed the open instant, no event since
        self._minibatch = MinibatchRestore(parallelism)

    # --- queries -----------------------------------------------------------------------------------

    @property
    def pending_instants(self) -> list[str]:
        """Instants with a buffer (created, not yet committed), in checkpoint order."""
        return [b.instant for b in self.buffers.values()]

    @property
    def bootstrapping(self) -> bool:
        """A restored instant waits for its recommit (some buffer holds re-sent events; in
        minibatch mode: some task's bootstrap event has not arrived yet)."""
        if self.mode == "minibatch":
            return self._minibatch.active
        return any(b.has_bootstrap for b in self.buffers.values())

    def _current(self) -> EventBuffer | None:
        buffers = self.buffers.values()
        return buffers[-1] if buffers else None

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
            if self.guarded(checkpoint_id):
                return None
            buffer = yield from self._start_instant(checkpoint_id)
        return buffer.instant

    def guarded(self, checkpoint_id: int) -> bool:
        """Blocking mode's commit guard holds a new instant (for ``checkpoint_id``) back: a
        pending buffer has an event (``EventBuffers.nonEmpty``)."""
        del checkpoint_id  # Hudi's guard looks at every pending buffer
        return self.mode == "blocking" and any(b.has_events for b in self.buffers.values())

    def start_after_guard(self, checkpoint_id: int) -> Steps[str]:
        """``handleInstantRequest`` after ``CommitGuard.blockFor`` returned: the instant for
        ``checkpoint_id`` is started, the guard's condition not checked again."""
        buffer = yield from self._start_instant(checkpoint_id)
        return buffer.instant

    def _start_instant(self, checkpoint_id: int) -> Steps[EventBuffer]:
        if self.failed_writes_cleaning == "EAGER":
            yield from rollback_failed_writes(self.writer, self.on_rollback)
        instant = yield from self.writer.start_commit()
        buffer = EventBuffer(checkpoint_id, instant.requested_time, (None,) * self.parallelism)
        self.buffers.put(buffer)
        self.instant = instant.requested_time
        return buffer

    # --- events ------------------------------------------------------------------------------------

    def handle_event(self, event: WriteMetadataEvent) -> None:
        """File a task's write metadata (Hudi's ``handleWriteMetaEvent``): an event for an
        instant newer than any this coordinator started, or for a checkpoint id without a
        buffer, is rejected (:class:`EventBufferError`: the job fails over)."""
        self._check_task(event.task_id)
        self._writing.discard(event.task_id)
        if self.mode == "minibatch":
            current = self._current()
            if current is not None and event.instant in (None, current.instant):
                self.buffers.put(current.with_event(event))
                return
        elif event.instant is None:  # an empty last batch: it joins the buffer of its id, if any
            buffer = self.buffers.get(event.checkpoint_id)
            if buffer is not None:
                self.buffers.put(buffer.with_event(event))
            return
        else:
            if event.instant > (self.instant or ""):
                raise EventBufferError(
                    f"Receive an unexpected event for instant {event.instant} from task "
                    f"{event.task_id}"
                )
            buffer = self.buffers.get(event.checkpoint_id)
            if buffer is not None:
                self.buffers.put(buffer.with_event(event))
                return
        if event.instant is None or (event.is_empty and self._is_completed(event.instant)):
            return
        raise EventBufferError(
            f"unexpected event from task {event.task_id} for instant {event.instant} "
            f"(checkpoint {event.checkpoint_id}): the coordinator has "
            f"{self.pending_instants or 'no pending instants'}"
        )

    # --- checkpoints -------------------------------------------------------------------------------

    def snapshot_state(self, checkpoint_id: int) -> CoordinatorState:
        """``checkpointCoordinator(i)``: persist the complete buffers with id < i (minibatch: the
        current buffer as received so far). Variants: ``snapshot_partial_buffers`` also keeps
        buffers of empty or last-batch slots (Hudi 1.1), ``checkpoint_deferred_recommits`` also
        buffers waiting for a deferred recommit."""
        if self.mode == "minibatch":
            return CoordinatorState(checkpoint_id, tuple(self.buffers.values()))
        rules = self.rules
        kept = tuple(
            b
            for b in self.buffers.values()
            if b.checkpoint_id < checkpoint_id
            and (
                b.complete
                or (rules.snapshot_partial_buffers and b.last_batches_only)
                or (rules.checkpoint_deferred_recommits and b.has_bootstrap)
            )
        )
        return CoordinatorState(checkpoint_id, kept)

    def notify_checkpoint_complete(self, checkpoint_id: int) -> Steps[list[CommitResult]]:
        """Commit what checkpoint ``checkpoint_id`` covers, serially in checkpoint order (Hudi's
        ``commitInstants``: every buffer with id < ``checkpoint_id``, complete or not; the ids are
        the last checkpoint a task snapshotted, so ``<``, not ``<=``). Minibatch: the open
        instant with whatever it received, unless a flush into it is still under way."""
        results: list[CommitResult] = []
        if self.mode == "minibatch":
            current = self._current()
            if current is None or self._writing:
                return results  # skipped: the next notification commits the instant
            result = yield from self._commit(current)
            self.buffers.clear()
            results.extend([result] if result is not None else [])
            return results
        covered = [key for key in self.buffers.checkpoint_ids() if key < checkpoint_id]
        if self.commit_scope == "latest_only":
            for key in covered[:-1]:  # their notification was lost: dropped, never committed
                self.buffers.reset(key)
            covered = covered[-1:]
        for key in covered:
            buffer = self.buffers.get(key)
            assert buffer is not None
            result = yield from self._commit(buffer, recommit=buffer.has_bootstrap)
            results.extend([result] if result is not None else [])
        return results

    # --- failover ----------------------------------------------------------------------------------

    def reset_to_checkpoint(self, state: CoordinatorState | None) -> Steps[list[CommitResult]]:
        """``resetToCheckpoint``: put the restored buffers over the live ones. A started
        coordinator (a global failover) re-commits at once every buffer the checkpoint covers
        (``reset_recommit = "immediate"``: id below the checkpoint's, restored or live; Flink's
        contract: a reset to a checkpoint confirms it complete) or leaves them to the next
        notification (Hudi 1.1); a new one in :meth:`start`.
        Minibatch: the restore of :mod:`models.flink.minibatch`."""
        results: list[CommitResult] = []
        if self.mode == "minibatch":
            self.buffers.clear()
            self._writing.clear()
            restored = [] if state is None else list(state.buffers)
            self._minibatch.begin(state, [b for b in restored if not self._is_completed(b.instant)])
            return results
        for buffer in state.buffers if state is not None else ():
            self.buffers.put(buffer)
        if self.started and self.rules.reset_recommit == "immediate" and state is not None:
            covered = [k for k in self.buffers.checkpoint_ids() if k < state.checkpoint_id]
            results = yield from self._recommit(covered)
        return results

    def start(self) -> Steps[list[CommitResult]]:
        """``start()``: if a restored buffer holds an event, re-commit every buffer in checkpoint
        order (Hudi's ``restoreEvents``)."""
        self.started = True
        results: list[CommitResult] = []
        if any(b.has_events for b in self.buffers.values()):
            results = yield from self._recommit(self.buffers.checkpoint_ids())
        return results

    def restore(self, state: CoordinatorState | None) -> Steps[list[CommitResult]]:
        """:meth:`reset_to_checkpoint`, then :meth:`start` if this object was not started."""
        results = yield from self.reset_to_checkpoint(state)
        if not self.started:
            results += yield from self.start()
        return results

    def handle_bootstrap(self, event: BootstrapEvent) -> Steps[list[CommitResult]]:
        """Hudi's ``handleBootstrapEvent``: a task restarted at attempt > 0 clears its slots at
        and after its restored checkpoint (an empty bootstrap); re-sent events are filed under
        their checkpoint ids, and a buffer whose every slot holds one is re-committed now
        (otherwise a later notification commits it)."""
        self._check_task(event.task_id)
        if self.mode == "minibatch":
            if not self._minibatch.active:
                raise CoordinatorError(
                    f"bootstrap event from task {event.task_id} outside a restart"
                )
            buffers = self._minibatch.add(event, self._is_completed)
            results: list[CommitResult] = []
            for buffer in buffers or ():
                result = yield from self._commit(buffer, recommit=True)
                results.extend([result] if result is not None else [])
            return results
        if event.clears:
            self.buffers.clean_legacy_events(event)
        ready: list[int] = []
        for resent in event.events:
            if resent.instant is None or self._is_completed(resent.instant):
                continue
            buffer = self.buffers.add_bootstrap(resent, self.parallelism)
            if buffer.all_bootstrap:
                ready.append(buffer.checkpoint_id)
        results = yield from self._recommit(ready)
        return results

    def _recommit(self, keys: list[int]) -> Steps[list[CommitResult]]:
        """Hudi's ``recommitInstant`` for the buffers of ``keys``, in order: an instant already
        completed is dropped, any other committed (or dropped with nothing to commit)."""
        results: list[CommitResult] = []
        for key in keys:
            buffer = self.buffers.get(key)
            if buffer is None:
                continue
            result = yield from self._commit(buffer, recommit=True)
            results.extend([result] if result is not None else [])
        return results

    # --- commits -----------------------------------------------------------------------------------

    def _commit(self, buffer: EventBuffer, *, recommit: bool = False) -> Steps[CommitResult | None]:
        """Commit ``buffer`` and drop it (Hudi's ``commitInstant``); a failed commit raises and
        keeps it, for the restart to recommit."""
        result = yield from self.committer.commit(buffer, recommit=recommit)
        self.buffers.reset(buffer.checkpoint_id)
        return result

    def _is_completed(self, instant_time: str) -> bool:
        return self.committer.is_completed(instant_time)

    def _check_task(self, task_id: int) -> None:
        if not 0 <= task_id < self.parallelism:
            raise CoordinatorError(f"task id {task_id} outside parallelism {self.parallelism}")


__all__ = [
    "COMMIT_RETRIES",
    "COORDINATOR_MODES",
    "CommitConflictError",
    "CommitResult",
    "CoordinatorError",
    "RestoreRules",
    "WriteCoordinator",
]
