"""Tests for sim/flink/compactor.py: a compaction is scheduled on MERGE_ON_READ only, one at a
time, after enough commits; its compactor runs as a process of the attempt; compactions left
pending by a failover are resumed; the schedule survives a failed compaction."""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import pytest

from sim.flink.compactor import Compactor
from sim.storage import StorageWriteError
from tests.sim.flink.harness import JOB, RoleHarness

ME = f"{JOB}/coordinator"


@dataclass(frozen=True)
class Done:
    requested_time: str
    completion_time: str


def steps(value: Any = None, error: BaseException | None = None):
    """Protocol steps that wait for nothing and return ``value`` (or raise ``error``)."""
    if error is not None:
        raise error
    return value
    yield


class FakeWriter:
    def __init__(self, scheduled: str | None = "c1", error: BaseException | None = None):
        self.scheduled, self.error = scheduled, error
        self.compacted: list[str] = []
        self.write_ms: list[int] = []

    def schedule_compaction(self):
        return steps(
            None if self.scheduled is None else SimpleNamespace(requested_time=self.scheduled)
        )

    def run_compaction(self, scheduled, write_time_ms=None):
        self.compacted.append(scheduled.requested_time)
        self.write_ms.append(write_time_ms())  # the base files' I/O, charged before the commit
        return steps(Done(scheduled.requested_time, "c9"), self.error)


class FakeStorage:
    """Every stretch of the compactor's own I/O takes 5 ms."""

    def own_usage(self):
        return (0, 0)

    def own_latency_since(self, mark):
        return 5

    def forget_own(self):
        pass


def table(is_mor: bool = True, pending: tuple[str, ...] = ()):
    instants = [SimpleNamespace(requested_time=p) for p in pending]
    timeline = SimpleNamespace(pending=lambda: SimpleNamespace(with_actions=lambda a: instants))
    return SimpleNamespace(config=SimpleNamespace(is_mor=is_mor), timeline=lambda: timeline)


def compactor(h: RoleHarness, writer: FakeWriter, **kwargs: Any) -> Compactor:
    return Compactor(
        history=h.history,
        table=kwargs.get("table", table()),
        storage=FakeStorage(),
        new_writer=lambda: writer,
        process=f"{JOB}/compactor",
        every_commits=2,
    )


def schedule(h: RoleHarness, c: Compactor, writer: FakeWriter) -> None:
    """The coordinator's notification handling, a process of the running attempt."""
    h.attempt.start(c.schedule(h.attempt, writer, owner=ME))
    h.env.run()


def test_a_compaction_is_scheduled_after_enough_commits_and_runs_in_its_own_process():
    h, writer = RoleHarness(), FakeWriter()
    c = compactor(h, writer)
    c.committed(1)
    schedule(h, c, writer)
    assert h.events() == [] and c.commits_since_compaction == 1
    c.committed(1)
    schedule(h, c, writer)
    assert c.commits_since_compaction == 0 and not c.compacting
    assert len(h.attempt.processes) == 3 and h.named == [f"{JOB}/compactor"]
    assert [(e.process, e.type, e.f) for e in h.events()] == [
        (ME, "ok", "schedule_compaction"),
        (f"{JOB}/compactor", "invoke", "compaction"),
        (f"{JOB}/compactor", "ok", "compaction"),
    ]
    assert h.events()[-1].value == {"instant": "c1", "completion": "c9"}
    assert writer.write_ms == [5]  # the storage's price of the base files, before the commit


def test_no_compaction_on_copy_on_write_or_while_one_runs():
    h, writer = RoleHarness(), FakeWriter()
    c = compactor(h, writer, table=table(is_mor=False))
    c.committed(5)
    schedule(h, c, writer)
    assert h.events() == []
    c = compactor(h, writer)
    c.committed(5)
    c.compacting = True
    schedule(h, c, writer)
    assert h.events() == [] and c.commits_since_compaction == 5


def test_nothing_to_compact_resets_the_count():
    h, writer = RoleHarness(), FakeWriter(scheduled=None)
    c = compactor(h, writer)
    c.committed(2)
    schedule(h, c, writer)
    assert h.events() == [] and c.commits_since_compaction == 0 and not c.compacting


def test_a_commit_finished_after_a_failover_leaves_the_schedule_to_the_next_attempt():
    """The coordinator finishing a commit after its tasks failed over (no process of the attempt
    alive) schedules nothing: the next attempt's compactor would not know of it."""
    h, writer = RoleHarness(), FakeWriter()
    c = compactor(h, writer)
    c.committed(2)
    h.env.process(c.schedule(h.attempt, writer, owner=ME))
    h.env.run()
    assert h.events() == [] and c.commits_since_compaction == 2 and not c.compacting


def test_pending_compactions_are_resumed_in_order():
    h, writer = RoleHarness(), FakeWriter()
    c = compactor(h, writer, table=table(pending=("a", "b")))
    h.env.process(c.resume(h.attempt))
    h.env.run()
    assert writer.compacted == ["a", "b"] and not c.compacting


def test_a_failed_compaction_frees_the_schedule():
    h, writer = RoleHarness(), FakeWriter(error=StorageWriteError("injected"))
    c = compactor(h, writer)
    c.compacting = True

    def run():
        yield from c.compact(h.attempt, SimpleNamespace(requested_time="c1"))

    h.env.process(run())
    with pytest.raises(StorageWriteError):
        h.env.run()
    assert not c.compacting
