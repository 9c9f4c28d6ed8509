"""Table services in the simulated world: heartbeats, failed-write cleaning, archiving, the OCC
conflict check at commit, and the table-services job's service process.

The decisions are the real ones in ``models/`` (:mod:`models.write.heartbeat`,
:mod:`models.write.rollback`, :mod:`models.timeline.archiver`, :mod:`models.txn.concurrency`);
this module decides *when* they run, as Hudi's Flink pipeline does:

- Under LAZY cleaning every job's coordinator keeps a heartbeat for each instant it has started
  and not committed (Hudi's ``HoodieHeartbeatClient``, started by ``startCommit`` only when the
  policy is LAZY), refreshed every ``heartbeat_interval_ms`` by a timer of its own write client
  (a thread of the coordinator's process: a pause of the coordinator stops it, and it stops
  beating while the job fails over); a recommit starts it again (``recommitInstant``); it stops
  at commit. Before a commit takes the table lock the coordinator's write client refuses an
  instant whose heartbeat expired (``HeartbeatUtils#abortIfHeartbeatExpired``): a cleaner may
  already have rolled it back. Under EAGER there are no heartbeats.
- Failed writes are cleaned ``EAGER`` (one job: a blocking coordinator's write client rolls
  back every pending write instant when it starts one, ``models.flink.coordinator``; a
  non-blocking job of the ``1.0`` preset, once after a restart when every task's bootstrap
  event is in, every pending write instant the coordinator does not own) or ``LAZY`` (several
  jobs: the table-services job's clean operator rolls back instants whose heartbeat expired,
  when it cleans: :mod:`sim.flink.clean_function`).
- Archiving runs after each commit of the table-services job; compaction is
  :mod:`sim.flink.compactor`'s.
- OCC (jobs with ``concurrency = "occ"``): the conflict check of :mod:`models.txn.concurrency`
  runs under the commit lock, told which instants are the job's own earlier ones.

One :class:`TableServices` serves every job of a run; it never sees the jobs, only the
``live_instants`` each registers (:meth:`TableServices.register_writer`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

import simpy

from models.table_errors import HoodieException
from models.timeline import archiver
from models.timeline.instant import Instant
from models.txn import concurrency
from models.view.table import HudiTable
from models.write import heartbeat, rollback
from models.write.heartbeat import HeartbeatClient
from models.write.writer import TableWriter
from scenarios.tables import SimSpec
from sim.driver import drive
from sim.flink.clean_function import ROLE as CLEAN_ROLE
from sim.flink.clean_function import CleanFunction
from sim.flink.compactor import Compactor
from sim.flink.operator_coordinator import PrecommitCheck
from sim.flink.runtime import Attempt
from sim.history import HistoryRecorder
from sim.pauses import sit_out_pause
from sim.storage import SimStorage


class HeartbeatExpiredError(HoodieException, RuntimeError):
    """A commit refused because the instant's heartbeat expired (Hudi's ``HoodieException``
    from ``abortIfHeartbeatExpired``): the job fails over."""


class CoordinatorClient(Protocol):
    """The coordinator whose write client the clean operator cleans failed writes with."""

    @property
    def me(self) -> str:
        """Its name in the history (and as a lock owner)."""
        ...

    @property
    def writer(self) -> TableWriter:
        """Its write client now."""
        ...


class TableServices:
    """The table-service side of one run.

    Receives the simulated environment and history, the table and its storage, ``now_ms`` (true
    time as epoch ms: what heartbeats record), the ``[sim]`` knobs (heartbeat interval and
    misses, archive window) and the failed-writes cleaning policy (``EAGER`` or ``LAZY``)."""

    def __init__(
        self,
        *,
        env: simpy.Environment,
        history: HistoryRecorder,
        table: HudiTable,
        storage: SimStorage,
        now_ms: Callable[[], int],
        sim: SimSpec,
        policy: str,
    ) -> None:
        self.env = env
        self.history = history
        self.table = table
        self.storage = storage
        self.now_ms = now_ms
        self.sim = sim
        self.policy = policy
        self._writers: list[tuple[str, Callable[[], Iterable[str]]]] = []
        self._last_beat_ms: dict[str, int] = {}  # the write clients' in-memory last beats
        self._stopped: set[str] = set()  # timers that cancelled themselves after a pause

    def register_writer(self, owner: str, live_instants: Callable[[], Iterable[str]]) -> None:
        """A job's coordinator ``owner`` (its process name): under LAZY, a heartbeat timer of its
        own refreshes ``live_instants()`` (none while the job fails over), once
        :meth:`start_heartbeat_timers` ran."""
        self._writers.append((owner, live_instants))

    def start_heartbeat_timers(self) -> None:
        """Start the registered writers' timers (the run starts; never ending processes, so a
        world that is only inspected never starts them)."""
        if self.policy == "LAZY":
            for owner, live_instants in self._writers:
                self.env.process(self._heartbeat_timer(owner, live_instants))

    def _heartbeat_timer(
        self, owner: str, live_instants: Callable[[], Iterable[str]]
    ) -> Generator[Any, Any, None]:
        """The write client's timer (``HoodieHeartbeatClient``, ``scheduleAtFixedRate``): every
        interval it rewrites each live instant's heartbeat; it beats on the coordinator's
        process, so a pause of the coordinator misses beats until it ends."""
        while True:
            yield self.env.timeout(self.sim.heartbeat_interval_ms)
            yield from sit_out_pause(self.env, owner)
            for instant in live_instants():
                self._beat(instant)

    def _beat(self, instant: str) -> None:
        """One beat of ``instant``'s timer. A beat later than the expiry after the previous one
        (the process was paused) stops the timer for good and leaves the heartbeat expired:
        a LAZY cleaner may already be rolling the instant back (``HoodieHeartbeatClient``'s
        timer task, which cancels itself then); a restart (:meth:`heartbeat_started`) revives it."""
        now = self.now_ms()
        if instant in self._stopped:
            return
        last = self._last_beat_ms.get(instant)
        expiry = self.sim.heartbeat_interval_ms * self.sim.heartbeat_tolerable_misses
        if last is not None and now - last > expiry:
            self._stopped.add(instant)
            return
        self._last_beat_ms[instant] = now
        with contextlib.suppress(OSError):  # a missed beat; enough and it looks dead
            heartbeat.refresh(self.storage, instant, now)

    # --- heartbeats ----------------------------------------------------------------------------

    def heartbeat_started(self, instant: str) -> None:
        """Start ``instant``'s heartbeat under LAZY. The first beat is written at once and a
        failed write fails the caller, so the job fails over (``HoodieHeartbeatClient#start``
        calls ``updateHeartbeat``, which throws ``HoodieHeartbeatException`` on an
        ``IOException``; ``startCommit``, which starts it before the requested file, and
        ``recommitInstant`` fail with it). The failure is recorded as ``heartbeat_failed``."""
        if self.policy != "LAZY":
            return
        self._stopped.discard(instant)
        self._last_beat_ms[instant] = self.now_ms()
        try:
            heartbeat.start(self.storage, instant, self.now_ms())
        except OSError as error:
            self.history.info(
                "world", "heartbeat_failed", {"instant": instant, "error": str(error)}
            )
            raise

    def heartbeat_stopped(self, instant: str) -> None:
        """Stop ``instant``'s heartbeat (committed or rolled back)."""
        with contextlib.suppress(OSError):
            heartbeat.stop(self.storage, instant)

    def client_heartbeat(self) -> HeartbeatClient | None:
        """The coordinators' write clients' heartbeat client (None under EAGER: no heartbeats)."""
        if self.policy != "LAZY":
            return None
        return _ClientHeartbeat(self)

    def abort_if_heartbeat_expired(self, instant: str) -> None:
        """Under LAZY, refuse to commit ``instant`` when its heartbeat expired (Hudi's
        ``HeartbeatUtils#abortIfHeartbeatExpired`` in ``BaseHoodieWriteClient#commitStats``,
        before the table lock): :class:`HeartbeatExpiredError`, a job failure."""
        if self.policy != "LAZY":
            return
        expired = heartbeat.is_expired(
            self.storage,
            instant,
            self.now_ms(),
            self.sim.heartbeat_interval_ms,
            self.sim.heartbeat_tolerable_misses,
        )
        if expired:
            last = heartbeat.heartbeat_ms(self.storage, instant)
            raise HeartbeatExpiredError(
                f"Heartbeat for instant {instant} has expired, last heartbeat {last}"
            )

    # --- failed writes -------------------------------------------------------------------------

    def clean_after_bootstrap(
        self, owner: str, writer: TableWriter, own: Iterable[str]
    ) -> Generator[Any, Any, None]:
        """EAGER cleaning once a restarted job has re-committed what it could: roll back, as
        ``owner`` with ``writer``, every failed write not in ``own``."""
        if self.policy != "EAGER":
            return
        failed = self._failed_writes("EAGER", set(own))
        yield from self._roll_back(owner, writer, failed)

    def clean_lazily(
        self, owner: str, writer: TableWriter, *, lock_owner: str | None = None
    ) -> Generator[Any, Any, None]:
        """LAZY cleaning: roll back, as ``owner`` with ``writer``, every write instant whose
        heartbeat expired. ``lock_owner`` is who takes the table lock (default ``owner``): the
        clean operator cleans with the coordinator's write client but is a process of its own,
        so it must not look like the coordinator to the lock."""
        failed = self._failed_writes("LAZY", set())
        yield from self._roll_back(owner, writer, failed, lock_owner=lock_owner)

    def _failed_writes(self, policy: str, own: set[str]) -> list[Instant]:
        """The write instants ``policy`` rolls back now (:mod:`models.write.heartbeat`)."""
        return heartbeat.instants_to_roll_back(
            self.table.timeline(),
            self.storage,
            policy,
            self.now_ms(),
            own_instants=own,
            interval_ms=self.sim.heartbeat_interval_ms,
            tolerable_misses=self.sim.heartbeat_tolerable_misses,
        )

    def _roll_back(
        self,
        owner: str,
        writer: TableWriter,
        failed: list[Instant],
        *,
        lock_owner: str | None = None,
    ) -> Generator[Any, Any, None]:
        for instant in failed:
            self.history.invoke(owner, "rollback", {"instant": instant.requested_time})
            done = yield from drive(
                self.env,
                rollback.rollback(self.table, writer, instant, writer.time_generator),
                owner=lock_owner or owner,
            )
            self.heartbeat_stopped(instant.requested_time)
            self.history.ok(
                owner,
                "rollback",
                {"instant": instant.requested_time, "rollback": done.requested_time},
            )

    # --- archiving -----------------------------------------------------------------------------

    def archive(self, owner: str) -> None:
        """Archive completed instants beyond ``[sim] archive_max_active`` (recorded as
        ``owner``'s)."""
        archived = archiver.archive_instants(
            self.table,
            max_active=self.sim.archive_max_active,
            min_active=self.sim.archive_min_active,
        )
        if archived:
            self.history.ok(owner, "archive", {"instants": [i.requested_time for i in archived]})

    # --- the table-services job's processes ---------------------------------------------------

    def resume_compactions(
        self, attempt: Attempt, compactor: Compactor
    ) -> Generator[Any, Any, None]:
        """The body of ``<job>/table-services``: resume interrupted compactions."""
        yield from compactor.resume(attempt)

    def clean_function(
        self, attempt: Attempt, coordinator: CoordinatorClient
    ) -> CleanFunction | None:
        """The attempt's clean operator (:mod:`sim.flink.clean_function`), under LAZY: each clean
        rolls back failed writes as the ``coordinator``, with its current write client, and takes
        the table lock as a process of its own (Hudi's cleaner runs apart from the coordinator's
        executor). None under EAGER, where a clean has nothing to roll back
        (``CleanerUtils#rollbackFailedWrites`` runs for ``CLEAN_ACTION`` only under LAZY)."""
        if self.policy != "LAZY":
            return None

        def clean() -> Generator[Any, Any, None]:
            yield from self.clean_lazily(
                coordinator.me, coordinator.writer, lock_owner=attempt.process_name(CLEAN_ROLE)
            )

        return CleanFunction(attempt, clean)

    # --- OCC -----------------------------------------------------------------------------------

    def occ_check(self, concurrency_mode: str) -> PrecommitCheck | None:
        """The OCC check under the commit lock for one job (None unless ``occ``).

        The job's own instants that passed the check before this one are its predecessors in
        the coordinator's serial commit order (:mod:`models.txn.concurrency`: not concurrent
        writers where this instant only appended logs). The check keeps them for the whole run,
        across failovers (take one check per job, once): a restarted coordinator re-commits
        restored instants before anything newer, and telling its own commits from other
        writers' is what apache/hudi#19024 asks of the restarted Flink writer. Every job writes
        through the bucket index, so conflicts are found by bucket, as the Flink sink's
        ``OptionsResolver#getConflictResolutionStrategy`` chooses for it."""
        if concurrency_mode != "occ":
            return None
        return concurrency.precommit_check(self.table, by_bucket=True)


@dataclass(frozen=True)
class _ClientHeartbeat:
    """:class:`models.write.heartbeat.HeartbeatClient` over the run's table services."""

    services: TableServices

    def start(self, instant_time: str) -> None:
        self.services.heartbeat_started(instant_time)

    def abort_if_expired(self, instant_time: str) -> None:
        self.services.abort_if_heartbeat_expired(instant_time)

    def stop(self, instant_time: str) -> None:
        self.services.heartbeat_stopped(instant_time)


__all__ = ["HeartbeatExpiredError", "TableServices"]
