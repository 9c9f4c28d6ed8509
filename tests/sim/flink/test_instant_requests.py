"""Tests for sim/flink/instant_requests.py: the coordinator's instant-request thread answers at
once or, under the blocking mode's commit guard, polled ("not yet", the job failing after
write.commit.ack.timeout) or blocked (Hudi 1.1: one request holds the thread until a reset
signals it, every other request queued behind it)."""

from __future__ import annotations

from dataclasses import replace

from models.flink.write_events import WriteMetadataEvent
from sim.messages import CheckpointComplete, EventMessage, InstantRequest
from tests.sim.flink.test_operator_coordinator import Served


def test_the_commit_guard_fails_the_job_once_its_wait_times_out():
    """Blocking mode: a request for the next checkpoint is refused while the previous instant
    holds events; after ``write.commit.ack.timeout`` of refusals the coordinator fails the job
    with Hudi's ``CommitGuard`` message."""
    served = Served(mode="blocking", commit_ack_timeout_ms=1000)
    instant = served.instant()
    served.send(EventMessage(1, WriteMetadataEvent(0, instant, -1, (), True, 0)))
    for _ in range(2):  # refused at t and t + 600 ms: the job still runs
        served.send(InstantRequest(1, 0, 0), run_ms=600)
        assert served.answers[-1].instant is None and served.h.control.failures == []
    served.send(InstantRequest(1, 0, 0), run_ms=600)  # t + 1200 ms
    (failure,) = served.h.control.failures
    assert f"Timeout(1000ms) while waiting for instants [{instant}] to commit" in failure[1]
    assert served.h.control.failed_tasks == [None]  # the whole job, not a task's region


def blocked_behind_a_pending_instant(commit_ack_timeout_ms: int = 300_000) -> tuple[Served, str]:
    """Blocking mode, Hudi 1.1's thread: the instant for checkpoint -1 holds an event and a
    request for checkpoint 0 waits on the guard."""
    served = Served(
        mode="blocking", instant_request="blocked", commit_ack_timeout_ms=commit_ack_timeout_ms
    )
    instant = served.instant()
    served.send(EventMessage(1, WriteMetadataEvent(0, instant, -1, (), True, 0)))
    served.send(InstantRequest(1, 0, 0))
    return served, instant


def test_a_blocked_request_holds_the_thread_until_a_commit_signals_it():
    served, instant = blocked_behind_a_pending_instant()
    answered = len(served.answers)
    served.send(InstantRequest(1, 0, -1))  # an existing instant, queued behind the guard
    assert len(served.answers) == answered
    served.send(CheckpointComplete(1, 0))  # commits checkpoint -1's instant: the reset signals
    first, second = served.answers[answered:]
    assert first.instant is not None and first.instant != instant
    assert first.guard_wait_ms >= 2000  # waited from the request to the commit
    assert second.instant is not None and second.guard_wait_ms == 0


def test_a_blocked_request_fails_the_job_after_the_timeout_across_a_task_failover():
    """The coordinator and its thread outlive a task failover: the wait goes on, and the job
    fails when the first request's ``write.commit.ack.timeout`` is up."""
    served, instant = blocked_behind_a_pending_instant(commit_ack_timeout_ms=5000)
    for process in [served.process, *served.h.attempt.processes]:
        process.interrupt("failover")  # 2 s into the wait
    served.h.env.run(until=served.h.env.now + 1)
    served.role.rebind(replace(served.h.attempt, epoch=2))
    served.h.env.process(served.role.run(None, "region"))
    served.role.subtask_ready(0, served.h.gateway("jm->task-0", served.answers.append))
    served.send(InstantRequest(2, 0, 0), run_ms=2500)
    assert served.h.control.failures == []
    served.send(InstantRequest(2, 0, 0), run_ms=1000)  # 5.5 s after the first request
    (failure,) = served.h.control.failures
    assert f"Timeout(5000ms) while waiting for instants [{instant}] to commit" in failure[1]
