"""The job's checkpoints: Flink's ``CheckpointCoordinator`` on the job manager.

One checkpoint at a time, every ``checkpoint_interval_s``. Flink's order: the operator
coordinator's snapshot first (``OperatorCoordinatorCheckpoints``), then the source's offset and the
barriers into every write task, then the tasks' ACKs, with ``checkpoint_timeout_s`` from the
trigger for all of it. A checkpoint that times out, or that a task declines, fails the job over
(Flink's default of zero tolerable checkpoint failures). A completed checkpoint is stored
(:class:`CheckpointStore`, which outlives the attempt) and ``notifyCheckpointComplete`` goes to
the operator coordinator over a lossy, reordering channel: best effort, as in Flink.

Faults it fires: a random ``checkpoint_failure`` (drawn for every checkpoint, from a stream of its
own per attempt), a random extra notification delay up to ``ack_delay_ms``, and the nemesis's
scheduled ones (:class:`CheckpointFaults`); none while the run drains.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import simpy

from models.flink.event_buffers import CoordinatorState
from models.flink.write_task import TaskState
from sim.flink.runtime import Attempt
from sim.messages import CheckpointComplete, CompletedCheckpoint, TaskAck
from sim.network import Channel
from sim.rng import Rng


@dataclass
class CheckpointStore:
    """What Flink keeps of a job's checkpoints across its attempts: the id counter
    (``CheckpointIDCounter``: ids keep increasing across restarts) and the latest completed
    checkpoint (``CompletedCheckpointStore``), which a restart restores."""

    next_id: int = 1
    latest: CompletedCheckpoint | None = None

    def new_id(self) -> int:
        """The id of the next checkpoint triggered."""
        checkpoint_id = self.next_id
        self.next_id += 1
        return checkpoint_id


class PendingAcks:
    """The task ACKs of the pending checkpoint of one attempt (the acknowledgements of Flink's
    ``PendingCheckpoint``); an ACK for another attempt or checkpoint is ignored."""

    def __init__(self, attempt: Attempt, parallelism: int) -> None:
        self.attempt = attempt
        self.parallelism = parallelism
        self.checkpoint_id: int | None = None
        self.states: dict[int, TaskState] = {}
        self.done: simpy.Event | None = None

    def expect(self, checkpoint_id: int) -> simpy.Event:
        """Collect the ACKs of ``checkpoint_id``; the event succeeds when every task's is in."""
        self.states, self.checkpoint_id = {}, checkpoint_id
        self.done = self.attempt.env.event()
        return self.done

    def acknowledge(self, message: TaskAck) -> None:
        """Delivery of a task's ACK."""
        if (
            not self.attempt.is_current(message.epoch)
            or message.checkpoint_id != self.checkpoint_id
        ):
            return
        self.states[message.task_id] = message.state
        done = self.done
        if len(self.states) == self.parallelism and done is not None and not done.triggered:
            done.succeed()

    def task_states(self) -> tuple[TaskState, ...]:
        """Every task's state, in task order (all ACKs in)."""
        return tuple(self.states[i] for i in range(self.parallelism))


class CoordinatorCheckpointing(Protocol):
    """The operator coordinator as the checkpoint coordinator reaches it."""

    def checkpoint_coordinator(self, checkpoint_id: int) -> simpy.Event:
        """Snapshot the coordinator's state; the event succeeds with it."""
        ...

    def deliver(self, message: Any) -> None:
        """Deliver a message (here: a checkpoint-complete notification)."""
        ...


class BarrierTarget(Protocol):
    """A write task as the checkpoint coordinator reaches it."""

    def inject_barrier(self, checkpoint_id: int) -> None:
        """The barrier of ``checkpoint_id`` reaches the task."""
        ...


class SourceOffset(Protocol):
    """The source as the checkpoint coordinator reads it: the offset the barriers follow."""

    @property
    def offset(self) -> int:
        """The next offset the source reads."""
        ...


class DeliveryFate(Protocol):
    """What the nemesis does to one notification: copies sent (0: lost) and extra delay."""

    @property
    def copies(self) -> int: ...

    @property
    def extra_delay_ms(self) -> int: ...


class CheckpointFaults(Protocol):
    """The scheduled checkpoint faults the checkpoint coordinator fires (the nemesis's hooks)."""

    def fail_checkpoint(
        self, job: str, checkpoint_id: int, triggered_ms: int, *, randomly: bool
    ) -> bool:
        """Whether the checkpoint (all ACKs in) is declined; records the fault."""
        ...

    def notification_fate(self, channel: str, job: str, checkpoint_id: int) -> DeliveryFate:
        """What happens to the notification for ``checkpoint_id`` sent now."""
        ...


@dataclass(frozen=True)
class CheckpointSettings:
    """The job's checkpoint configuration and the fault rates that hit its checkpoints."""

    interval_ms: int
    timeout_ms: int
    checkpoint_failure: float
    """Probability that a checkpoint is declined (``[faults] checkpoint_failure``)."""
    ack_delay_ms: int
    """Bound of a notification's random extra delay (``[faults] ack_delay_ms``)."""


class CheckpointCoordinator:
    """The process ``<job>/checkpoint`` of one attempt.

    Receives the job's :class:`CheckpointStore` and the source's offset, the attempt's ACK
    collector, the operator coordinator and the write tasks it checkpoints, the notification
    channel, the faults it may fire with their random stream, and ``draining`` (faults stop).
    ``on_complete`` hears of every completed checkpoint (the tasks' ``notifyCheckpointComplete``:
    the state index's assigner subtasks and the clean operator act on it); ``on_aligned`` hears
    of every checkpoint whose barrier got through all the write tasks (every ACK in): the
    ``snapshotState`` of the clean operator downstream of them."""

    def __init__(
        self,
        attempt: Attempt,
        store: CheckpointStore,
        acks: PendingAcks,
        *,
        settings: CheckpointSettings,
        coordinator: CoordinatorCheckpointing,
        tasks: Sequence[BarrierTarget],
        position: SourceOffset,
        notify_channel: Channel,
        faults: CheckpointFaults,
        fault_rng: Rng,
        draining: Callable[[], bool],
        on_complete: Sequence[Callable[[int], None]] = (),
        on_aligned: Sequence[Callable[[int], None]] = (),
    ) -> None:
        self.attempt = attempt
        self.on_complete = tuple(on_complete)
        self.on_aligned = tuple(on_aligned)
        self.store = store
        self.acks = acks
        self.settings = settings
        self.coordinator = coordinator
        self.tasks = tuple(tasks)
        self.position = position
        self.notify_channel = notify_channel
        self.faults = faults
        self.fault_rng = fault_rng
        self.draining = draining
        self.me = attempt.process_name("checkpoint")

    def run(self) -> Generator[Any, Any, None]:
        """The process body: a checkpoint every interval until one fails or the attempt ends."""
        yield from self.attempt.run("checkpoint", self._loop())

    def _loop(self) -> Generator[Any, Any, None]:
        env = self.attempt.env
        while True:
            yield env.timeout(self.settings.interval_ms)
            checkpoint_id = self.store.new_id()
            declined = (
                self.fault_rng.bernoulli(self.settings.checkpoint_failure) and not self.draining()
            )
            completed = yield from self._checkpoint(checkpoint_id, declined)
            if not completed:
                return
            self._notify(checkpoint_id)

    def _checkpoint(self, checkpoint_id: int, declined: bool) -> Generator[Any, Any, bool]:
        """Trigger, snapshot, barriers, ACKs; True when the checkpoint completed."""
        env, timeout_ms = self.attempt.env, self.settings.timeout_ms
        triggered_ms = int(env.now)
        self.attempt.history.invoke(self.me, "checkpoint", {"checkpoint": checkpoint_id})
        deadline = env.now + timeout_ms
        reply = self.coordinator.checkpoint_coordinator(checkpoint_id)
        yield reply | env.timeout(timeout_ms)
        if not reply.triggered:
            return self._failed(checkpoint_id, "coordinator snapshot timed out")
        coordinator_state: CoordinatorState = reply.value
        offset = self.position.offset
        all_acked = self.acks.expect(checkpoint_id)
        for task in self.tasks:
            task.inject_barrier(checkpoint_id)
        yield all_acked | env.timeout(max(0, deadline - env.now))
        if not all_acked.triggered:
            return self._failed(checkpoint_id, "timed out waiting for task ACKs")
        for listener in self.on_aligned:
            listener(checkpoint_id)
        job = self.attempt.job
        if self.faults.fail_checkpoint(job, checkpoint_id, triggered_ms, randomly=declined):
            return self._failed(checkpoint_id, "declined by a task")
        self.store.latest = CompletedCheckpoint(
            checkpoint_id, offset, coordinator_state, self.acks.task_states()
        )
        self.attempt.history.ok(
            self.me, "checkpoint", {"checkpoint": checkpoint_id, "source_offset": offset}
        )
        for listener in self.on_complete:
            listener(checkpoint_id)
        return True

    def _notify(self, checkpoint_id: int) -> None:
        """Send ``notifyCheckpointComplete`` to the operator coordinator, as the faults say.

        One send per notification whatever the schedule does to it, so the channel's random
        draws (delay, loss, duplicate) stay with their notification and a schedule entry never
        moves a random fault: a scheduled loss is sent and silently discarded (the nemesis
        recorded it), a scheduled duplicate is delivered twice, back to back, as a random
        duplicate is."""
        delay = 0
        if self.settings.ack_delay_ms and not self.draining():
            delay = self.fault_rng.randint(0, self.settings.ack_delay_ms)
        channel = self.notify_channel
        fate = self.faults.notification_fate(channel.name, self.attempt.job, checkpoint_id)
        on_fault = channel.on_fault
        if fate.copies == 0:
            channel.on_fault = None  # no random fault on a notification already lost
        try:
            channel.send(
                CheckpointComplete(self.attempt.epoch, checkpoint_id),
                self.coordinator.deliver if fate.copies == 1 else self._copies(fate.copies),
                extra_delay_ms=delay + fate.extra_delay_ms,
            )
        finally:
            channel.on_fault = on_fault

    def _copies(self, copies: int) -> Callable[[Any], None]:
        """Deliver a notification ``copies`` times (0: a scheduled loss)."""

        def deliver(message: Any) -> None:
            for _ in range(copies):
                self.coordinator.deliver(message)

        return deliver

    def _failed(self, checkpoint_id: int, why: str) -> bool:
        self.attempt.history.fail(self.me, "checkpoint", {"checkpoint": checkpoint_id, "why": why})
        self.attempt.fail(f"checkpoint {checkpoint_id} failed: {why}")
        return False


__all__ = [
    "BarrierTarget",
    "CheckpointCoordinator",
    "CheckpointFaults",
    "CheckpointSettings",
    "CheckpointStore",
    "CoordinatorCheckpointing",
    "DeliveryFate",
    "PendingAcks",
    "SourceOffset",
]
