"""Table services in the simulated world: heartbeats, failed-write cleaning, compaction, archiving,
and the OCC conflict check at commit.

The decisions are the real ones in ``models/`` (:mod:`models.write.heartbeat`, :mod:`models.write.rollback`,
:mod:`models.timeline.archiver`, :mod:`models.txn.concurrency`, :class:`models.write.writer.TableWriter`); this module
decides *when* they run, as Hudi's Flink pipeline does:

- Every job's coordinator keeps a heartbeat for each instant it has started and not committed,
  refreshed every ``heartbeat_interval_ms``; it stops at commit and simply stops being refreshed
  when the job fails over.
- Failed writes are cleaned ``EAGER`` (one job: after a restart, once every task's bootstrap
  event is in, every pending write instant the coordinator does not own is rolled back) or
  ``LAZY`` (several jobs: the table-services job rolls back instants whose heartbeat expired).
- Compaction (MERGE_ON_READ, the table-services job): scheduled by the coordinator after every
  ``compaction_every_commits`` commits, executed by a compactor process, committed by it; a
  compaction interrupted by a failover is resumed after the restart.
- Archiving runs after each commit of the table-services job.
- OCC (jobs with ``concurrency = "occ"``): the conflict check of :mod:`models.txn.concurrency` runs
  under the commit lock, told which instants are the job's own earlier ones.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any

from models.timeline import archiver
from models.timeline.instant import Instant
from models.txn import concurrency
from models.write import heartbeat, rollback
from models.write.writer import TableWriter
from sim.driver import drive

if TYPE_CHECKING:
    from sim.job import Job
    from sim.world import World


class TableServices:
    """The table-service side of one world."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.env = world.env
        self.history = world.history
        self.sim = world.scenario.sim
        self.policy = world.scenario.protocol.failed_writes_cleaning
        self._committed_by: dict[str, set[str]] = {}  # job -> instants that passed its OCC check

    def _now_ms(self) -> int:
        return self.world.storage._now()

    # --- heartbeats ----------------------------------------------------------------------------

    def heartbeat_started(self, instant: str) -> None:
        try:
            heartbeat.start(self.world.storage, instant, self._now_ms())
        except OSError as error:
            self.history.info(
                "world", "heartbeat_failed", {"instant": instant, "error": str(error)}
            )

    def heartbeat_stopped(self, instant: str) -> None:
        with contextlib.suppress(OSError):
            heartbeat.stop(self.world.storage, instant)

    def _refresh(self, job: Job) -> None:
        for instant in job.coordinator.pending_instants:
            with contextlib.suppress(OSError):  # a missed beat; enough and the instant looks dead
                heartbeat.refresh(self.world.storage, instant, self._now_ms())

    # --- failed writes -------------------------------------------------------------------------

    def after_bootstrap(self, job: Job, epoch: int) -> Generator[Any, Any, None]:
        """EAGER cleaning once a restarted job has re-committed what it could."""
        if self.policy != "EAGER":
            return
        timeline = self.world.table.timeline()
        own = set(job.coordinator.pending_instants)
        failed = heartbeat.instants_to_roll_back(
            timeline,
            self.world.storage,
            "EAGER",
            self._now_ms(),
            own_instants=own,
            interval_ms=self.sim.heartbeat_interval_ms,
            tolerable_misses=self.sim.heartbeat_tolerable_misses,
        )
        yield from self._roll_back(job, failed)

    def _roll_back(self, job: Job, failed: list[Instant]) -> Generator[Any, Any, None]:
        me = job.process_name("coordinator")
        writer = job.coordinator.writer
        for instant in failed:
            self.history.invoke(me, "rollback", {"instant": instant.requested_time})
            done = yield from drive(
                self.env,
                rollback.rollback(self.world.table, writer, instant, writer.time_generator),
                owner=me,
            )
            self.heartbeat_stopped(instant.requested_time)
            self.history.ok(
                me,
                "rollback",
                {"instant": instant.requested_time, "rollback": done.requested_time},
            )

    # --- the loop of the table-services job ----------------------------------------------------

    def loop(self, job: Job, epoch: int) -> Generator[Any, Any, None]:
        yield from job._guard(epoch, "table-services", self._loop_body(job, epoch))

    def _loop_body(self, job: Job, epoch: int) -> Generator[Any, Any, None]:
        yield from self._resume_compactions(job, epoch)
        while True:
            yield self.env.timeout(self.sim.heartbeat_interval_ms)
            for other in self.world.jobs:
                if not other.failing:
                    self._refresh(other)
            if self.policy == "LAZY":
                timeline = self.world.table.timeline()
                failed = heartbeat.instants_to_roll_back(
                    timeline,
                    self.world.storage,
                    "LAZY",
                    self._now_ms(),
                    own_instants=set(),
                    interval_ms=self.sim.heartbeat_interval_ms,
                    tolerable_misses=self.sim.heartbeat_tolerable_misses,
                )
                yield from self._roll_back(job, failed)

    # --- compaction and archiving --------------------------------------------------------------

    def after_commits(self, job: Job, epoch: int, results: list[Any]) -> Generator[Any, Any, None]:
        if not job.table_services or not results:
            return
        config = self.world.table.config
        me = job.process_name("coordinator")
        if (
            config.is_mor
            and not job.compacting
            and job.commits_since_compaction >= job.spec.compaction_every_commits
        ):
            scheduled = yield from drive(
                self.env, job.coordinator.writer.schedule_compaction(), owner=me
            )
            job.commits_since_compaction = 0
            if scheduled is not None:
                self.history.ok(me, "schedule_compaction", {"instant": scheduled.requested_time})
                job.compacting = True
                job.processes.append(
                    self.env.process(job._guard(epoch, "compactor", self._compact(job, scheduled)))
                )
        archived = archiver.archive_instants(
            self.world.table,
            max_active=self.sim.archive_max_active,
            min_active=self.sim.archive_min_active,
        )
        if archived:
            self.history.ok(me, "archive", {"instants": [i.requested_time for i in archived]})

    def _compactor_writer(self, job: Job) -> TableWriter:
        return TableWriter(
            self.world.table,
            self.world.time_generator(job.process_name("compactor")),
            view_options=self.world.view_options,
            stage_id=job.index + 1,
        )

    def _compact(self, job: Job, scheduled: Instant) -> Generator[Any, Any, None]:
        me = job.process_name("compactor")
        storage = self.world.storage
        self.history.invoke(me, "compaction", {"instant": scheduled.requested_time})
        mark = storage.usage()
        steps = self._compactor_writer(job).run_compaction(scheduled)
        try:
            done = yield from drive(self.env, steps, owner=me)
        finally:
            job.compacting = False
        yield self.env.timeout(storage.latency_since(mark))
        self.history.ok(
            me,
            "compaction",
            {"instant": done.requested_time, "completion": done.completion_time},
        )

    def _resume_compactions(self, job: Job, epoch: int) -> Generator[Any, Any, None]:
        """Execute compactions a failover interrupted (Hudi re-runs pending plans)."""
        timeline = self.world.table.timeline()
        for instant in timeline.pending().with_actions("compaction"):
            job.compacting = True
            yield from self._compact(job, instant)

    # --- OCC -----------------------------------------------------------------------------------

    def precommit_hook(self, job: Job) -> Callable[[Instant, tuple[Any, ...]], None] | None:
        """The OCC check under the commit lock (jobs with ``concurrency = "occ"``).

        The job's own instants that passed the check before this one are its predecessors in
        the coordinator's serial commit order (:mod:`models.txn.concurrency`: not concurrent writers
        where this instant only appended logs). They are kept per job for the whole run, across
        failovers: a restarted coordinator re-commits restored instants before anything newer,
        and telling its own commits from other writers' is what apache/hudi#19024 asks of the
        restarted Flink writer."""
        if job.spec.concurrency != "occ":
            return None
        table = self.world.table
        own = self._committed_by.setdefault(job.name, set())

        def check(instant: Instant, stats: tuple[Any, ...]) -> None:
            concurrency.ensure_no_conflict(
                table.timeline(),
                table,
                instant,
                concurrency.touched_file_groups(stats),
                predecessors=own,
                appended=concurrency.appended_file_groups(stats),
            )
            own.add(instant.requested_time)

        return check
