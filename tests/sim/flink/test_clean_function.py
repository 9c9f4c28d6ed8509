"""Tests for sim/flink/clean_function.py: when the clean operator of the table-services job
cleans (Hudi's ``CleanFunction``: open, snapshotState, notifyCheckpointComplete), and that a failed
clean is logged, not a job failure."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from sim.flink.clean_function import ROLE, CleanFunction
from sim.storage import StorageWriteError
from tests.sim.flink.harness import JOB, RoleHarness

CLEAN_MS = 100


class Cleans:
    """A fake ``writeClient.clean()`` taking ``CLEAN_MS``; records when each clean started."""

    def __init__(self, h: RoleHarness, *, error: BaseException | None = None) -> None:
        self.h = h
        self.error = error
        self.started_ms: list[int] = []
        self.finished_ms: list[int] = []

    def __call__(self) -> Generator[Any, Any, None]:
        self.started_ms.append(int(self.h.env.now))
        yield self.h.env.timeout(CLEAN_MS)
        if self.error is not None:
            raise self.error
        self.finished_ms.append(int(self.h.env.now))


def at(h: RoleHarness, time_ms: int, action: Any, *args: Any) -> None:
    def body() -> Generator[Any, Any, None]:
        yield h.env.timeout(time_ms - h.env.now)
        action(*args)

    h.env.process(body())


def test_open_cleans_once_and_clears_its_mark_when_done():
    h = RoleHarness()
    cleans = Cleans(h)
    function = CleanFunction(h.attempt, cleans)
    function.open()
    assert function.is_cleaning
    h.env.run()
    assert cleans.started_ms == [0] and cleans.finished_ms == [CLEAN_MS]
    assert not function.is_cleaning
    assert h.named == [f"{JOB}/{ROLE}"]


def test_a_barrier_during_the_open_clean_starts_no_second_clean():
    h = RoleHarness()
    cleans = Cleans(h)
    function = CleanFunction(h.attempt, cleans)
    function.open()
    at(h, 50, function.snapshot_state, 1)
    at(h, 200, function.snapshot_state, 2)
    h.env.run()
    assert cleans.started_ms == [0, 200]


def test_a_checkpoint_clean_keeps_its_mark_until_a_checkpoint_completes():
    h = RoleHarness()
    cleans = Cleans(h)
    function = CleanFunction(h.attempt, cleans)
    at(h, 1000, function.snapshot_state, 1)
    at(h, 2000, function.snapshot_state, 2)  # the clean of 1 is done, but no notification yet
    at(h, 2500, function.notify_checkpoint_complete, 2)
    at(h, 3000, function.snapshot_state, 3)
    h.env.run()
    assert cleans.started_ms == [1000, 3000]
    assert function.is_cleaning


def test_a_notification_during_a_clean_waits_for_it_before_clearing_the_mark():
    h = RoleHarness()
    cleans = Cleans(h)
    function = CleanFunction(h.attempt, cleans)
    at(h, 1000, function.snapshot_state, 1)
    at(h, 1050, function.notify_checkpoint_complete, 1)
    at(h, 1080, function.snapshot_state, 2)  # still cleaning: skipped
    at(h, 1150, function.snapshot_state, 3)  # clean done and waited for: a new one
    h.env.run()
    assert cleans.started_ms == [1000, 1150]


def test_a_failed_clean_is_logged_and_fails_no_job():
    h = RoleHarness()
    cleans = Cleans(h, error=StorageWriteError("injected write failure: rollback"))
    function = CleanFunction(h.attempt, cleans)
    function.open()
    h.env.run()
    (event,) = h.events("clean_failed")
    assert (event.process, event.type) == (f"{JOB}/{ROLE}", "info")
    assert event.value == {"error": "StorageWriteError: injected write failure: rollback"}
    assert h.control.failures == []
    assert not function.is_cleaning


def test_a_failover_ends_a_running_clean():
    h = RoleHarness()
    cleans = Cleans(h)
    function = CleanFunction(h.attempt, cleans)
    function.open()

    def failover() -> Generator[Any, Any, None]:
        yield h.env.timeout(10)
        for process in h.attempt.processes:
            process.interrupt("failover")

    h.env.process(failover())
    h.env.run()
    assert not any(p.is_alive for p in h.attempt.processes)
    assert cleans.started_ms == [0] and cleans.finished_ms == []
    assert h.control.failures == [] and h.events() == []
