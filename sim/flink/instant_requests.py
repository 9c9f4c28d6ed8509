"""The operator coordinator's instant-request executor (Hudi 1.1's ``instantRequestExecutor``, a
single-thread ``NonThrownExecutor``): it answers the write tasks' instant requests apart from
the events and commits of the coordinator's mailbox, contending with them only on the locks the
write client takes (TrueTime's, the table's).

``handleInstantRequest``: the instant of the request's checkpoint id, or a new one. In blocking
mode the commit guard holds a new instant back while a pending instant has an event
(:meth:`models.flink.coordinator.WriteCoordinator.guarded`); how the request then waits is
``[protocol] instant_request`` (docs/protocol.md section 6.4):

- ``polled`` (apache/hudi#19960): answered "not yet" at once; the task asks again. After
  ``write.commit.ack.timeout`` of holding an instant back the job fails.
- ``blocked`` (Hudi 1.1.0): the request waits on ``CommitGuard.blockFor`` in this one thread for
  one signal (any buffer's reset, ``CommitGuard.unblock``), then starts the instant without
  looking again; every other request queues behind it. After ``write.commit.ack.timeout`` the
  job fails; a task failover does not end the wait (the coordinator and its thread live on).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import simpy

from models.flink.coordinator import CoordinatorError
from sim.driver import drive
from sim.messages import InstantRequest, InstantResponse
from sim.pauses import THREAD_MARK, sit_out_pause

if TYPE_CHECKING:
    from sim.flink.operator_coordinator import OperatorCoordinator


class InstantRequestExecutor:
    """The instant-request thread of ``holder`` (its coordinator, attempt, gateways, services)."""

    def __init__(self, holder: OperatorCoordinator, commit_ack_timeout_ms: int) -> None:
        self.holder = holder
        self.commit_ack_timeout_ms = commit_ack_timeout_ms
        self.queue = simpy.Store(holder.attempt.env)
        self._guard: simpy.Event | None = None  # the blocked request's CommitGuard condition
        self._blocked_since: float | None = None  # kept across task failovers
        self._refused_since: dict[int, float] = {}  # polled: checkpoint id -> first "not yet"
        holder.coordinator.buffers.on_reset = self._unblock

    def new_attempt(self) -> None:
        """A new attempt of the job: a polled guard's wait starts anew."""
        self._refused_since.clear()

    def serve(self) -> Generator[Any, Any, None]:
        """The thread's loop for one attempt: one request at a time, in arrival order; a request
        of an earlier attempt has no sender left and is dropped."""
        attempt = self.holder.attempt
        while True:
            with self.queue.get() as get:
                message = yield get
            yield from sit_out_pause(attempt.env, self.holder.me)
            if message.epoch == attempt.epoch:
                yield from self.handle(message)

    def handle(self, message: InstantRequest) -> Generator[Any, Any, None]:
        """Answer one request (the mini-batch mode calls this from the mailbox)."""
        holder = self.holder
        coordinator, env = holder.coordinator, holder.attempt.env
        owner = f"{holder.me}{THREAD_MARK}instant-request"
        before = set(coordinator.pending_instants)
        instant = yield from drive(
            env, coordinator.request_instant(message.task_id, message.checkpoint_id), owner=owner
        )
        guard_wait_ms = 0
        if instant is None and coordinator.instant_request == "blocked":
            started = env.now
            yield from self._block_for(",".join(coordinator.pending_instants))
            guard_wait_ms = int(env.now - started)
            instant = yield from drive(
                env, coordinator.start_after_guard(message.checkpoint_id), owner=owner
            )
        elif instant is None:
            self._held_back(message.checkpoint_id)
        else:
            self._refused_since.pop(message.checkpoint_id, None)
        if instant is not None and instant not in before:
            holder.attempt.history.ok(
                holder.me,
                "start_instant",
                {"instant": instant, "checkpoint": message.checkpoint_id},
            )
            holder.on_instant_started()
        response = InstantResponse(holder.attempt.epoch, instant, guard_wait_ms)
        holder.subtasks[message.task_id].send(response)

    def _block_for(self, pending: str) -> Generator[Any, Any, None]:
        """``CommitGuard.blockFor``: wait for one signal, however many instants are still pending
        then, at most what is left of ``commit_ack_timeout_ms`` (an interrupt keeps the wait)."""
        env = self.holder.attempt.env
        if self._blocked_since is None:
            self._blocked_since = env.now
        left_ms = self._blocked_since + self.commit_ack_timeout_ms - env.now
        signal = self._guard = env.event()
        try:
            yield signal | env.timeout(max(left_ms, 0))
        finally:
            self._guard = None
        self._blocked_since = None
        if not signal.triggered:
            raise CoordinatorError(
                f"Timeout({self.commit_ack_timeout_ms}ms) while waiting for instants [{pending}] "
                "to commit"
            )

    def _held_back(self, checkpoint_id: int) -> None:
        """Polled: after ``commit_ack_timeout_ms`` of holding the instant back the job fails, as
        the guarded creation does in Hudi (``CommitGuard.blockFor`` apart from the RPC)."""
        now = self.holder.attempt.env.now
        since = self._refused_since.setdefault(checkpoint_id, now)
        if now - since >= self.commit_ack_timeout_ms:
            self._refused_since.clear()
            pending = ",".join(self.holder.coordinator.pending_instants)
            raise CoordinatorError(
                f"Timeout({self.commit_ack_timeout_ms}ms) while waiting for instants [{pending}] "
                "to commit"
            )

    def _unblock(self) -> None:
        """``CommitGuard.unblock`` (a buffer was reset): wake the waiting request, if any."""
        if self._guard is not None and not self._guard.triggered:
            self._guard.succeed()


__all__ = ["InstantRequestExecutor"]
