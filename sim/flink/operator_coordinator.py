"""The job's operator coordinator: Hudi's ``StreamWriteOperatorCoordinator`` on Flink's job manager.

The decisions are :class:`models.flink.coordinator.WriteCoordinator`'s; this process is Flink's
``OperatorCoordinatorHolder`` around it: one mailbox, one message at a time (Hudi's
``NonThrownExecutor``). Instant requests go to an executor of their own (Hudi 1.1's
``instantRequestExecutor``, :mod:`sim.flink.instant_requests`), everything else to the mailbox
(``NonThrownExecutor`` "meta-event-handle"). It outlives a task (region) failover and a global
failover with its write coordinator and mailbox (Flink keeps the coordinator object; a global
failover resets it to the checkpoint, ``resetToCheckpoint``); a JobManager failover or a rescale
builds a new one, reset and started. Each attempt runs its process anew, which first does what the restart path asks
(:data:`RESTART_STEPS`), then serves:

- instant requests from the write tasks (``handleInstantRequest``; a new instant starts its
  heartbeat), answered through each task's gateway (``executionAttemptReady`` registers it);
- write-metadata and bootstrap events (``handleEventFromOperator``); once every task's bootstrap
  is in, failed writes are cleaned ``EAGER`` when that is the policy;
- the checkpoint coordinator's snapshot requests (``checkpointCoordinator``);
- checkpoint-complete notifications (``notifyCheckpointComplete``): commit, stop the committed
  instants' heartbeats, and in the table-services job schedule compaction and archive.

:class:`CommitReporter` turns what the commit path does without asking (an OCC abort, the rollback
of a dropped instant) into history events of the coordinator.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable
from typing import Any, Protocol

import simpy

from models.flink.coordinator import CommitResult, WriteCoordinator
from models.flink.event_buffers import CoordinatorState, EventBufferError
from models.timeline.instant import Instant
from models.txn.concurrency import ConcurrentWriteConflict
from models.write.writer import TableWriter
from sim.driver import drive
from sim.flink.instant_requests import InstantRequestExecutor
from sim.flink.runtime import Attempt, Gateway
from sim.history import HistoryRecorder
from sim.messages import (
    BootstrapMessage,
    CheckpointComplete,
    EventMessage,
    InstantRequest,
    SnapshotRequest,
)
from sim.pauses import sit_out_pause

RESTART_STEPS = {
    "start": "a new coordinator: reset to the checkpoint, then start (recommits what it restored)",
    "region": "a task failover: nothing (Hudi's subtaskFailed and subtaskReset are no-ops)",
    "global": "a global failover: resetToCheckpoint on the running coordinator",
}
"""What the coordinator's process does first, per restart path."""

STALE_KINDS = (InstantRequest, SnapshotRequest)
"""Messages of an earlier attempt dropped from a surviving mailbox: their sender is gone."""

PrecommitCheck = Callable[[Instant, tuple[Any, ...]], None]
"""A check run under the commit lock right before an instant completes; raising aborts it."""


class CoordinatorServices(Protocol):
    """The table services the coordinator's write client runs (heartbeats, failed writes)."""

    def heartbeat_stopped(self, instant: str) -> None:
        """``instant`` completed or was rolled back."""
        ...

    def clean_after_bootstrap(
        self, owner: str, writer: TableWriter, own: Iterable[str]
    ) -> Generator[Any, Any, None]:
        """Every task's bootstrap is in: roll back failed writes not in ``own`` (EAGER)."""
        ...

    def archive(self, owner: str) -> None:
        """Archive completed instants beyond the active timeline's window."""
        ...


class CompactionScheduler(Protocol):
    """The table-services job's compaction schedule, fed by the coordinator's commits."""

    def committed(self, count: int) -> None:
        """``count`` more instants committed."""
        ...

    def schedule(
        self, attempt: Attempt, writer: TableWriter, *, owner: str
    ) -> Generator[Any, Any, None]:
        """After commits: schedule a compaction when due and start its compactor."""
        ...


class CommitReporter:
    """Records what the write coordinator's commit path does by itself, for one job and across
    its attempts: OCC aborts and rollbacks of dropped instants.

    An abort fails the job over (the restart recommits the same instant), and aborts and their
    wasted writes are what OCC costs compared with NBCC (``reports/metrics.py``)."""

    def __init__(self, history: HistoryRecorder, owner: str) -> None:
        self.history = history
        self.owner = owner

    def recording_aborts(self, check: PrecommitCheck | None) -> PrecommitCheck | None:
        """``check`` (None without OCC), recording each commit it aborts as an ``abort`` event;
        ``records`` counts the rows the aborted instant's files hold (for a copy-on-write
        merge, the whole rewritten file)."""
        if check is None:
            return None

        def precommit(instant: Instant, stats: tuple[Any, ...]) -> None:
            try:
                check(instant, stats)
            except ConcurrentWriteConflict as conflict:
                self.history.info(
                    self.owner,
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

    def rolling_back(self, instant: str) -> None:
        """The coordinator's write client rolls back a failed write as it starts an instant
        (EAGER): recorded as the failed-writes cleaning's rollbacks are."""
        self.history.invoke(self.owner, "rollback", {"instant": instant})

    def rolled_back(self, instant: str, rollback: Instant) -> None:
        """The rollback :meth:`rolling_back` announced is complete."""
        self.history.ok(
            self.owner, "rollback", {"instant": instant, "rollback": rollback.requested_time}
        )

    def dropped(self, instant: str) -> None:
        """The coordinator dropped an instant with nothing to commit (see
        ``models/flink/commits.py``): it stays pending until failed-writes cleaning rolls it back."""
        self.history.info(self.owner, "drop_instant", {"instant": instant})


class OperatorCoordinator:
    """The process ``<job>/coordinator`` of one attempt: Flink's ``OperatorCoordinatorHolder``.

    Receives ``provider``, which creates the write coordinator it drives (Flink's
    ``OperatorCoordinator.Provider``: the holder, its mailbox and the tasks' gateways stay when the
    coordinator inside is recreated, as ``RecreateOnResetOperatorCoordinator`` does on a reset),
    the write client's table services, the compaction schedule (table-services job only) and
    ``on_notified``, called after each handled notification (the job checks whether it has
    drained), and ``on_instant_started``, called after each instant it starts (the nemesis's
    ``taskmanager_pause`` hook). Tasks reach it through :meth:`deliver`; it reaches each task
    through the gateway registered by :meth:`subtask_ready`."""

    def __init__(
        self,
        attempt: Attempt,
        provider: Callable[[], WriteCoordinator],
        *,
        services: CoordinatorServices,
        compaction: CompactionScheduler | None,
        on_notified: Callable[[], None],
        commit_ack_timeout_ms: int = 300_000,
        on_instant_started: Callable[[], None] = lambda: None,
    ) -> None:
        self.attempt = attempt
        self.provider = provider
        self.coordinator = provider()
        self.services = services
        self.compaction = compaction
        self.on_notified = on_notified
        self.on_instant_started = on_instant_started
        self.mailbox = simpy.Store(attempt.env)
        self.subtasks: dict[int, Gateway] = {}
        self.requests = InstantRequestExecutor(self, commit_ack_timeout_ms)
        self.me = attempt.process_name("coordinator")
        self._reported: set[int] = set()  # tasks whose bootstrap message arrived this attempt
        self._in_flight: simpy.Process | None = None  # the mailbox action running, if any
        self.restored = attempt.env.event()  # this attempt's restart step is done
        self.reported = attempt.env.event()  # every task of this attempt is up, its event handled

    def rebind(self, attempt: Attempt) -> None:
        """Serve the job's next attempt (the coordinator survived a task or global failover)."""
        self.attempt = attempt
        self.subtasks.clear()
        self.restored = attempt.env.event()
        self.reported = attempt.env.event()

    @property
    def writer(self) -> TableWriter:
        """The write client of the coordinator (it starts, commits and rolls back instants)."""
        return self.coordinator.writer

    # --- what the other roles call ----------------------------------------------------------

    def subtask_ready(self, task_id: int, gateway: Gateway) -> None:
        """Task ``task_id`` is running and reachable through ``gateway`` (Flink's
        ``OperatorCoordinator#executionAttemptReady``)."""
        self.subtasks[task_id] = gateway

    def deliver(self, message: Any) -> None:
        """A message from a channel: an instant request to the instant-request executor, any
        other to the mailbox (a channel of a failed attempt delivers nothing). The mini-batch
        mode (a design proposal) serves its requests from the mailbox: it hands out the open
        instant, which must not be the one a notification is committing."""
        own_executor = isinstance(message, InstantRequest) and self.coordinator.mode != "minibatch"
        (self.requests.queue if own_executor else self.mailbox).put(message)

    def holds_task_events(self) -> bool:
        """Whether a task's write metadata or bootstrap event waits in the mailbox (received
        but not handled yet: the coordinator is busy, e.g. committing)."""
        return any(isinstance(m, (EventMessage, BootstrapMessage)) for m in self.mailbox.items)

    def checkpoint_coordinator(self, checkpoint_id: int) -> simpy.Event:
        """Ask for a snapshot of the coordinator's state for ``checkpoint_id``; the event
        succeeds with it (Flink's ``OperatorCoordinator#checkpointCoordinator``)."""
        reply = self.attempt.env.event()
        self.mailbox.put(SnapshotRequest(self.attempt.epoch, checkpoint_id, reply))
        return reply

    # --- the process ------------------------------------------------------------------------

    def run(self, state: CoordinatorState | None, step: str) -> Generator[Any, Any, None]:
        """The process body of this attempt: the restart ``step`` (:data:`RESTART_STEPS`) with
        the checkpointed ``state`` (None: no completed checkpoint), then the mailbox, with the
        instant-request executor started beside it."""
        if step not in RESTART_STEPS:
            raise ValueError(f"step must be one of {sorted(RESTART_STEPS)}, not {step!r}")
        yield from self.attempt.run("coordinator", self._serve(state, step))

    def _serve(self, state: CoordinatorState | None, step: str) -> Generator[Any, Any, None]:
        epoch, coordinator = self.attempt.epoch, self.coordinator
        if self._in_flight is not None and self._in_flight.is_alive:
            yield self._in_flight  # the action the previous attempt left running ends first
        self._reported.clear()
        self.requests.new_attempt()
        yield from self._finish(self._restore(state, step))
        self.restored.succeed()
        self.attempt.start(self.attempt.run("coordinator", self.requests.serve()))
        while True:
            with self.mailbox.get() as get:  # an interrupt withdraws the request: the mailbox
                message = yield get  # outlives this process and must not feed a dead one
            yield from self._sit_out_pause_holding(message)
            if message.epoch != epoch and isinstance(message, STALE_KINDS):
                continue
            if isinstance(message, InstantRequest):
                yield from self._finish(self.requests.handle(message))
            elif isinstance(message, EventMessage):
                coordinator.handle_event(message.event)
                self.attempt.history.info(self.me, "event", message.event.summary())
            elif isinstance(message, BootstrapMessage):
                yield from self._finish(self._bootstrap(message))
            elif isinstance(message, SnapshotRequest):
                self._snapshot(message)
            elif isinstance(message, CheckpointComplete):
                yield from self._finish(self._notified(message.checkpoint_id))

    def _restore(self, state: CoordinatorState | None, step: str) -> Generator[Any, Any, None]:
        """The restart ``step`` with the checkpointed ``state`` (:data:`RESTART_STEPS`)."""
        coordinator, history, me = self.coordinator, self.attempt.history, self.me
        history.invoke(
            me, "restore", {"checkpoint": state.checkpoint_id if state else None, "path": step}
        )
        restore = {"start": coordinator.restore, "global": coordinator.reset_to_checkpoint}
        results = []
        if step == "global":
            self._handle_received_events()
        if step in restore:
            results = yield from drive(self.attempt.env, restore[step](state), owner=me)
        self._record_commits(results)
        history.ok(me, "restore", {"recommitted": [r.instant.requested_time for r in results]})

    def _finish(self, action: Generator[Any, Any, None]) -> Generator[Any, Any, None]:
        """Run one mailbox action to its end, even when the attempt fails over meanwhile.

        A task's (region) or a global failover leaves Flink's coordinator alone: its executor
        thread goes on with the action it runs (Hudi's ``subtaskFailed`` and ``subtaskReset`` do
        nothing, ``resetToCheckpoint`` is queued behind it). So the action is a process of its
        own, which the failover does not interrupt and the next attempt's process waits for; a
        JobManager failover or a rescale ends it with the coordinator (:meth:`abandon`)."""
        self._in_flight = self.attempt.env.process(self.attempt.run("coordinator", action))
        yield self._in_flight

    def abandon(self) -> None:
        """The coordinator is gone (a JobManager failover, a rescale): so is its action."""
        if self._in_flight is not None and self._in_flight.is_alive:
            self._in_flight.interrupt("failover")

    def _sit_out_pause_holding(self, message: Any) -> Generator[Any, Any, None]:
        """Sit out a pause of the job manager with ``message`` taken from the mailbox. A failover
        that ends this attempt meanwhile (a task's region restarting) does not end Flink's
        coordinator, whose paused thread resumes with the message in hand: it goes back to the
        head of the mailbox, for the next attempt's process to take first."""
        try:
            yield from sit_out_pause(self.attempt.env, self.me)
        except simpy.Interrupt:
            self.mailbox.items.insert(0, message)
            raise

    def _handle_received_events(self) -> None:
        """Before a global failover's reset: the write tasks' events already received run first.

        Hudi hands each event to its ``NonThrownExecutor``, which keeps its queue when an action
        fails (the exception hook fails the job and the next action runs), and Flink resets the
        coordinator (``resetToCheckpoint``) only later, after the failover's restart delay; so
        events queued behind the failed action join their live buffers before the reset, whose
        recommit then covers them. One that cannot be filed is logged, as the hook would; the
        job is already failing over."""
        received = [m for m in self.mailbox.items if isinstance(m, EventMessage)]
        for message in received:
            self.mailbox.items.remove(message)
            try:
                self.coordinator.handle_event(message.event)
            except EventBufferError as error:
                self.attempt.history.info(self.me, "event_dropped", {"error": str(error)})
                continue
            self.attempt.history.info(self.me, "event", message.event.summary())

    def _snapshot(self, message: SnapshotRequest) -> None:
        snapshot = self.coordinator.snapshot_state(message.checkpoint_id)
        self.attempt.history.info(
            self.me,
            "snapshot",
            {
                "checkpoint": message.checkpoint_id,
                "instants": [b.instant for b in snapshot.buffers],
            },
        )
        message.reply.succeed(snapshot)

    def _bootstrap(self, message: BootstrapMessage) -> Generator[Any, Any, None]:
        """A task is up: its bootstrap event, if it sent one, goes to the write coordinator;
        once every task of this attempt is up, failed writes are cleaned, when the policy is
        EAGER and the write client does not clean them at each new instant itself (non-blocking
        generation under the ``1.0`` preset)."""
        coordinator, event = self.coordinator, message.event
        if event is not None:
            self.attempt.history.info(
                self.me,
                "bootstrap",
                {
                    "task": event.task_id,
                    "checkpoint": event.checkpoint_id,
                    "events": [e.summary() for e in event.events],
                },
            )
            results = yield from drive(
                self.attempt.env, coordinator.handle_bootstrap(event), owner=self.me
            )
            self._record_commits(results)
        if message.epoch != self.attempt.epoch:
            return
        self._reported.add(message.task_id)
        if len(self._reported) == coordinator.parallelism and not self.reported.triggered:
            self.reported.succeed()
        if (
            len(self._reported) == coordinator.parallelism
            and not coordinator.bootstrapping
            and coordinator.failed_writes_cleaning != "EAGER"
        ):
            yield from self.services.clean_after_bootstrap(
                self.me, coordinator.writer, coordinator.pending_instants
            )

    def _notified(self, checkpoint_id: int) -> Generator[Any, Any, None]:
        self.attempt.history.info(self.me, "notify", {"checkpoint": checkpoint_id})
        results = yield from drive(
            self.attempt.env,
            self.coordinator.notify_checkpoint_complete(checkpoint_id),
            owner=self.me,
        )
        self._record_commits(results)
        if self.compaction is not None and results:
            yield from self.compaction.schedule(
                self.attempt, self.coordinator.writer, owner=self.me
            )
            self.services.archive(self.me)
        self.on_notified()

    def _record_commits(self, results: list[CommitResult]) -> None:
        for result in results:
            self.attempt.history.ok(self.me, "commit", result.summary())
            self.services.heartbeat_stopped(result.instant.requested_time)
        if self.compaction is not None:
            self.compaction.committed(len(results))


__all__ = [
    "CommitReporter",
    "CompactionScheduler",
    "CoordinatorServices",
    "OperatorCoordinator",
    "PrecommitCheck",
]
