"""Tests for sim/flink/checkpoint_coordinator.py: a checkpoint snapshots the coordinator first,
then the source offset and the barriers; it completes when every task ACKed in time and no fault
declined it, is stored across attempts, and its notification goes out as the faults say."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sim.flink.checkpoint_coordinator import (
    CheckpointCoordinator,
    CheckpointSettings,
    CheckpointStore,
    PendingAcks,
)
from sim.flink.source import SourcePosition
from sim.messages import CheckpointComplete, TaskAck
from tests.sim.flink.harness import JOB, RoleHarness

INTERVAL_MS = 1000


@dataclass(frozen=True)
class Fate:
    copies: int = 1
    extra_delay_ms: int = 0


class FakeCoordinator:
    def __init__(self, h: RoleHarness, *, answers: bool = True) -> None:
        self.h, self.answers = h, answers
        self.delivered: list[tuple[int, Any]] = []

    def checkpoint_coordinator(self, checkpoint_id: int):
        reply = self.h.env.event()
        if self.answers:
            reply.succeed(f"state-{checkpoint_id}")
        return reply

    def deliver(self, message: Any) -> None:
        self.delivered.append((int(self.h.env.now), message))


class FakeTask:
    """ACKs each barrier at once (or never), with its task id as state."""

    def __init__(self, h: RoleHarness, task_id: int, acks: PendingAcks, *, acks_barriers=True):
        self.h, self.task_id, self.acks, self.acks_barriers = h, task_id, acks, acks_barriers
        self.barriers: list[int] = []

    def inject_barrier(self, checkpoint_id: int) -> None:
        self.barriers.append(checkpoint_id)
        if self.acks_barriers:
            self.acks.acknowledge(
                TaskAck(self.h.attempt.epoch, self.task_id, checkpoint_id, self.task_id)
            )


class FakeFaults:
    def __init__(self, *, declines: bool = False, fate: Fate = Fate()) -> None:
        self.declines, self.fate = declines, fate
        self.asked: list[tuple[str, int]] = []

    def fail_checkpoint(self, job, checkpoint_id, triggered_ms, *, randomly):
        self.asked.append(("fail_checkpoint", checkpoint_id))
        return self.declines or randomly

    def notification_fate(self, channel, job, checkpoint_id):
        self.asked.append(("notification_fate", checkpoint_id))
        return self.fate


def checkpoints(
    h: RoleHarness,
    *,
    store: CheckpointStore | None = None,
    coordinator: FakeCoordinator | None = None,
    faults: FakeFaults | None = None,
    acking: tuple[bool, ...] = (True, True),
    position: SourcePosition | None = None,
    aligned: list[int] | None = None,
    completed: list[int] | None = None,
):
    acks = PendingAcks(h.attempt, len(acking))
    tasks = [FakeTask(h, i, acks, acks_barriers=a) for i, a in enumerate(acking)]
    coordinator = coordinator or FakeCoordinator(h)
    role = CheckpointCoordinator(
        h.attempt,
        store or CheckpointStore(),
        acks,
        settings=CheckpointSettings(
            interval_ms=INTERVAL_MS, timeout_ms=500, checkpoint_failure=0.0, ack_delay_ms=0
        ),
        coordinator=coordinator,
        tasks=tasks,
        position=position or SourcePosition(offset=42),
        notify_channel=h.channel(f"{JOB}/notify", fifo=False),
        faults=faults or FakeFaults(),
        fault_rng=h.rng.child("faults"),
        draining=lambda: False,
        on_complete=[completed.append] if completed is not None else (),
        on_aligned=[aligned.append] if aligned is not None else (),
    )
    h.env.process(role.run())
    return role, coordinator, tasks


def test_a_checkpoint_completes_is_stored_and_notified():
    h, store = RoleHarness(), CheckpointStore()
    _, coordinator, tasks = checkpoints(h, store=store)
    h.env.run(until=2 * INTERVAL_MS + 100)
    assert [t.barriers for t in tasks] == [[1, 2], [1, 2]]
    latest = store.latest
    assert latest is not None
    assert (latest.checkpoint_id, latest.source_offset) == (2, 42)
    assert (latest.coordinator, latest.tasks) == ("state-2", (0, 1))
    notified = [m.checkpoint_id for _, m in coordinator.delivered]
    assert notified == [1, 2]
    assert all(isinstance(m, CheckpointComplete) for _, m in coordinator.delivered)
    assert [(e.type, e.value["checkpoint"]) for e in h.events("checkpoint")] == [
        ("invoke", 1),
        ("ok", 1),
        ("invoke", 2),
        ("ok", 2),
    ]
    assert h.control.failures == []


def test_checkpoint_ids_keep_increasing_across_attempts():
    store = CheckpointStore()
    first = RoleHarness()
    checkpoints(first, store=store)
    first.env.run(until=3 * INTERVAL_MS + 100)
    second = RoleHarness(epoch=2)
    checkpoints(second, store=store)
    second.env.run(until=INTERVAL_MS + 100)
    assert store.latest is not None and store.latest.checkpoint_id == 4


def test_a_missing_snapshot_or_ack_times_out_and_fails_the_attempt():
    h = RoleHarness()
    checkpoints(h, coordinator=FakeCoordinator(h, answers=False))
    h.env.run(until=3 * INTERVAL_MS)
    assert h.control.failures == [(1, "checkpoint 1 failed: coordinator snapshot timed out")]
    (failed,) = [e for e in h.events("checkpoint") if e.type == "fail"]
    assert failed.time == INTERVAL_MS + 500

    h = RoleHarness()
    checkpoints(h, acking=(True, False))
    h.env.run(until=3 * INTERVAL_MS)
    assert h.control.failures == [(1, "checkpoint 1 failed: timed out waiting for task ACKs")]


def test_a_declined_checkpoint_fails_the_attempt_and_is_not_stored():
    h, store = RoleHarness(), CheckpointStore()
    faults = FakeFaults(declines=True)
    _, coordinator, _ = checkpoints(h, store=store, faults=faults)
    h.env.run(until=3 * INTERVAL_MS)
    assert store.latest is None and coordinator.delivered == []
    assert h.control.failures == [(1, "checkpoint 1 failed: declined by a task")]
    assert faults.asked == [("fail_checkpoint", 1)]


def test_the_operators_after_the_tasks_hear_of_every_aligned_and_every_completed_checkpoint():
    h, aligned, completed = RoleHarness(), [], []
    checkpoints(h, aligned=aligned, completed=completed)
    h.env.run(until=2 * INTERVAL_MS + 100)
    assert (aligned, completed) == ([1, 2], [1, 2])

    h, aligned, completed = RoleHarness(), [], []
    checkpoints(h, faults=FakeFaults(declines=True), aligned=aligned, completed=completed)
    h.env.run(until=3 * INTERVAL_MS)
    assert (aligned, completed) == ([1], [])  # the barrier got through; the checkpoint failed

    h, aligned, completed = RoleHarness(), [], []
    checkpoints(h, acking=(True, False), aligned=aligned, completed=completed)
    h.env.run(until=3 * INTERVAL_MS)
    assert (aligned, completed) == ([], [])  # a task never passed the barrier on


def test_the_notification_goes_out_as_the_faults_say():
    for fate, expected in ((Fate(copies=0), 0), (Fate(copies=2), 2), (Fate(1, 300), 1)):
        h = RoleHarness()
        _, coordinator, _ = checkpoints(h, faults=FakeFaults(fate=fate))
        h.env.run(until=INTERVAL_MS + 400)
        assert len(coordinator.delivered) == expected, fate
        if fate.extra_delay_ms:
            ((at, _),) = coordinator.delivered
            assert at >= INTERVAL_MS + 300


def test_pending_acks_take_only_the_current_attempts_acks_of_the_pending_checkpoint():
    h = RoleHarness(epoch=2)
    acks = PendingAcks(h.attempt, 2)
    done = acks.expect(5)
    acks.acknowledge(TaskAck(1, 0, 5, "old attempt"))
    acks.acknowledge(TaskAck(2, 0, 4, "old checkpoint"))
    acks.acknowledge(TaskAck(2, 1, 5, "b"))
    assert not done.triggered
    acks.acknowledge(TaskAck(2, 0, 5, "a"))
    assert done.triggered and acks.task_states() == ("a", "b")
