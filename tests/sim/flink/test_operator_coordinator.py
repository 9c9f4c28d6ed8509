"""Tests for sim/flink/operator_coordinator.py: the coordinator process serves one message at a
time, answers each task through its own gateway, drops messages of an earlier attempt, commits
on a notification and runs the table services around its commits; the commit reporter records
what the commit path does by itself."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import pytest

from models.flink.coordinator import WriteCoordinator
from models.flink.event_buffers import CoordinatorState
from models.flink.write_events import WriteMetadataEvent
from models.timeline.instant import Instant, State
from models.txn.concurrency import ConcurrentWriteConflict
from sim.flink.operator_coordinator import CommitReporter, OperatorCoordinator
from sim.history import HistoryRecorder
from sim.messages import (
    BootstrapMessage,
    CheckpointComplete,
    EventMessage,
    InstantRequest,
    InstantResponse,
)
from sim.world import World
from tests.sim.flink.harness import JOB, RoleHarness
from tests.sim.test_world import make_scenario

ME = f"{JOB}/coordinator"


class FakeServices:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def heartbeat_stopped(self, instant: str) -> None:
        self.calls.append(("heartbeat_stopped", instant))

    def clean_after_bootstrap(self, owner, writer, own):
        self.calls.append(("clean_after_bootstrap", (owner, list(own))))
        yield from ()

    def archive(self, owner: str) -> None:
        self.calls.append(("archive", owner))


class FakeCompaction:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def committed(self, count: int) -> None:
        self.calls.append(("committed", count))

    def schedule(self, attempt, writer, *, owner):
        self.calls.append(("schedule", owner))
        yield from ()


class Served:
    """One coordinator process on a world's table (the world's jobs never start), with one task
    whose answers land in ``answers``."""

    def __init__(
        self,
        *,
        compaction: FakeCompaction | None = None,
        mode: str = "async",
        commit_ack_timeout_ms: int = 300_000,
        instant_request: str = "polled",
    ) -> None:
        # EAGER: the fake services keep no heartbeats the real write client could check
        world = World(
            make_scenario(jobs=({"writers": 1},), protocol={"failed_writes_cleaning": "EAGER"})
        )
        self.h = RoleHarness(env=world.env, history=world.history)
        clients = world.jobs[0].context.clients
        self.services = FakeServices()
        self.notified = 0
        self.role = OperatorCoordinator(
            self.h.attempt,
            lambda: WriteCoordinator(
                clients.coordinator_writer(ME),
                parallelism=1,
                mode=mode,
                instant_request=instant_request,
            ),
            services=self.services,
            compaction=compaction,
            on_notified=self._on_notified,
            commit_ack_timeout_ms=commit_ack_timeout_ms,
        )
        self.answers: list[InstantResponse] = []
        self.role.subtask_ready(0, self.h.gateway("jm->task-0", self.answers.append))
        self.process = self.h.env.process(self.role.run(None, "start"))

    def _on_notified(self) -> None:
        self.notified += 1

    def send(self, message: Any, run_ms: int = 2000) -> None:
        self.role.deliver(message)
        self.h.env.run(until=self.h.env.now + run_ms)

    def instant(self) -> str:
        self.send(BootstrapMessage(1, 0, None))
        self.send(InstantRequest(1, 0, -1))
        return self.answers[-1].instant


def test_an_instant_request_starts_an_instant_and_answers_through_the_tasks_gateway():
    served = Served()
    instant = served.instant()
    assert instant is not None and served.answers == [InstantResponse(1, instant)]
    (start,) = served.h.events("start_instant")
    assert (start.process, start.value) == (ME, {"instant": instant, "checkpoint": -1})
    # every task's bootstrap is in: the services clean failed writes if their policy says so
    assert served.services.calls[0] == ("clean_after_bootstrap", (ME, []))
    assert set(served.h.named) == {ME}  # the mailbox and the instant-request executor


def test_a_request_of_an_earlier_attempt_is_dropped_its_events_are_handled():
    """A coordinator that survives a failover keeps its mailbox: write events queued before are
    still filed (their buffers may be committed), requests whose sender is gone are not."""
    served = Served()
    instant = served.instant()
    # the job failed over (a task's region restarts): the coordinator's processes stop
    for process in [served.process, *served.h.attempt.processes]:
        process.interrupt("failover")
    served.h.env.run(until=served.h.env.now + 1)
    served.role.rebind(replace(served.h.attempt, epoch=2))
    served.h.env.process(served.role.run(None, "region"))
    served.role.subtask_ready(0, served.h.gateway("jm->task-0", served.answers.append))
    answered = len(served.answers)
    served.send(InstantRequest(1, 0, -1))
    assert len(served.answers) == answered
    served.send(EventMessage(1, WriteMetadataEvent(0, instant, -1, (), True, 0)))
    assert [e.value["instant"] for e in served.h.events("event")] == [instant]


def test_a_snapshot_request_is_answered_with_the_coordinators_state():
    served = Served()
    reply = served.role.checkpoint_coordinator(1)
    served.h.env.run(until=100)
    assert reply.triggered and isinstance(reply.value, CoordinatorState)
    assert [e.value["checkpoint"] for e in served.h.events("snapshot")] == [1]


def test_a_notification_commits_and_runs_the_table_services():
    compaction = FakeCompaction()
    served = Served(compaction=compaction)
    instant = served.instant()
    served.send(EventMessage(1, WriteMetadataEvent(0, instant, -1, (), True, 0)))
    served.send(CheckpointComplete(1, 1))
    (commit,) = served.h.events("commit")
    assert (commit.process, commit.value["instant"]) == (ME, instant)
    assert ("heartbeat_stopped", instant) in served.services.calls
    assert served.services.calls[-1] == ("archive", ME)
    assert compaction.calls[-2:] == [("committed", 1), ("schedule", ME)]
    assert served.notified == 1


@dataclass(frozen=True)
class Stat:
    num_writes: int
    num_deletes: int = 0


def test_the_commit_reporter_records_aborts_and_rollbacks():
    history = HistoryRecorder(lambda: 0)
    reporter = CommitReporter(history, ME)
    assert reporter.recording_aborts(None) is None
    mine = Instant("20260101000000100", State.INFLIGHT, "deltacommit")
    other = Instant("20260101000000050", State.COMPLETED, "deltacommit", "20260101000000200")

    def conflicting(instant, stats):
        raise ConcurrentWriteConflict(instant, other, [("p0", "fg-1")])

    check = reporter.recording_aborts(conflicting)
    with pytest.raises(ConcurrentWriteConflict):
        check(mine, (Stat(3), Stat(1, 1)))
    rollback = Instant("20260101000000500", State.REQUESTED, "rollback")
    reporter.rolled_back("20260101000000400", rollback)
    abort, rolled_back = history.events
    assert (abort.f, abort.value) == (
        "abort",
        {
            "instant": mine.requested_time,
            "conflict_with": other.requested_time,
            "file_groups": 1,
            "files": 2,
            "records": 5,
        },
    )
    assert (rolled_back.type, rolled_back.f, rolled_back.value) == (
        "ok",
        "rollback",
        {"instant": "20260101000000400", "rollback": "20260101000000500"},
    )
