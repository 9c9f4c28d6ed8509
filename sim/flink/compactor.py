"""Compaction in the table-services job: Hudi's Flink compaction pipeline.

Hudi's ``CompactionPlanOperator`` schedules a plan, ``CompactOperator`` executes it and
``CompactionCommitSink`` commits it; here the coordinator schedules a plan after every
``compaction_every_commits`` commits of its job (MERGE_ON_READ only; one compaction at a time) and
a ``<job>/compactor`` process executes and commits it. A compaction a failover interrupted is
still pending on the timeline; the next attempt's table-services process resumes it first (Hudi
re-runs pending plans). The decisions are :class:`models.write.writer.TableWriter`'s
(``schedule_compaction``, ``run_compaction``); this module decides when they run.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

from models.timeline.instant import Instant
from models.view.table import HudiTable
from models.write.writer import TableWriter
from sim.driver import drive
from sim.flink.runtime import Attempt
from sim.history import HistoryRecorder
from sim.storage import SimStorage


class Compactor:
    """The compaction schedule and executor of one job, kept across its attempts.

    Receives the table, the storage whose counters price the compaction's I/O, ``new_writer``
    (a fresh write client with the compactor's own instant-time generator, per compaction), the
    history with the compactor's process name, and the schedule's period in commits."""

    def __init__(
        self,
        *,
        history: HistoryRecorder,
        table: HudiTable,
        storage: SimStorage,
        new_writer: Callable[[], TableWriter],
        process: str,
        every_commits: int,
    ) -> None:
        self.history = history
        self.table = table
        self.storage = storage
        self.new_writer = new_writer
        self.process = process
        self.every_commits = every_commits
        self.compacting = False
        self.commits_since_compaction = 0

    def committed(self, count: int) -> None:
        """``count`` more instants committed by the job's coordinator."""
        self.commits_since_compaction += count

    def schedule(
        self, attempt: Attempt, writer: TableWriter, *, owner: str
    ) -> Generator[Any, Any, None]:
        """After commits: when due, schedule a compaction with the coordinator's ``writer`` (as
        ``owner``) and start a compactor process in ``attempt`` to execute it. A commit the
        coordinator finished after its tasks failed over (``attempt`` no longer runs) leaves the
        schedule to the next attempt's notifications, whose compactor can execute it."""
        if not attempt.is_running() or not (
            self.table.config.is_mor
            and not self.compacting
            and self.commits_since_compaction >= self.every_commits
        ):
            return
        scheduled = yield from drive(attempt.env, writer.schedule_compaction(), owner=owner)
        self.commits_since_compaction = 0
        if scheduled is not None:
            self.history.ok(owner, "schedule_compaction", {"instant": scheduled.requested_time})
            self.compacting = True
            attempt.spawn("compactor", self.compact(attempt, scheduled))

    def compact(self, attempt: Attempt, scheduled: Instant) -> Generator[Any, Any, None]:
        """Execute and commit the compaction ``scheduled`` (Hudi's ``CompactOperator`` and
        ``CompactionCommitSink``)."""
        me, storage = self.process, self.storage
        self.history.invoke(me, "compaction", {"instant": scheduled.requested_time})
        marks = [storage.own_usage()]  # its own I/O: the commit waits for the lock between

        def written_ms() -> int:  # the base files' I/O, charged before the commit
            marks.append(storage.own_usage())
            return storage.own_latency_since(marks[0])

        steps = self.new_writer().run_compaction(scheduled, written_ms)
        try:
            done = yield from drive(attempt.env, steps, owner=me)
            commit_ms = storage.own_latency_since(marks[-1])
        finally:
            self.compacting = False
            storage.forget_own()
        yield attempt.env.timeout(commit_ms)  # the commit's own I/O
        self.history.ok(
            me,
            "compaction",
            {"instant": done.requested_time, "completion": done.completion_time},
        )

    def resume(self, attempt: Attempt) -> Generator[Any, Any, None]:
        """Execute the compactions still pending on the timeline (a failover interrupted them)."""
        timeline = self.table.timeline()
        for instant in timeline.pending().with_actions("compaction"):
            self.compacting = True
            yield from self.compact(attempt, instant)


__all__ = ["Compactor"]
