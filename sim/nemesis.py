"""The nemesis: every fault of a run, the random ones (``[faults]`` rates) and the scheduled ones
(``[[faults.schedule]]``), in one place.

Random faults find bugs; scheduled faults *reproduce* them. A counterexample is only useful if a
person can read it ("the ACK of checkpoint 3 was lost, then task-1 crashed at 12.4 s") and
replay it exactly, and ``testbed explore`` can only shrink a failure if every fault is an explicit
entry it can delete. So each schedule entry is a small rule that fires once. What a kind does is
its module in ``faults/``; when it fires is its hook, kept here:

- timed kinds (``crash``, ``clock_jump``, ``pause``, ``rescale``) fire at ``at_s`` exactly (a
  simpy process walks the schedule).
- notification kinds (``lose_ack``, ``delay_ack``, ``duplicate_ack``, applied in that order)
  hit the first checkpoint-complete notification the job sends at or after ``at_s`` (with
  ``checkpoint = N``: the one for checkpoint N); each entry hits one notification, so two
  ``lose_ack`` entries lose two notifications in a row. A lost notification uses up only the
  ``lose_ack`` entry.
- the checkpoint kind ``fail_checkpoint`` fails the first checkpoint triggered at or after
  ``at_s`` that gets all its task ACKs (a checkpoint that times out on its own does not use the
  entry up).
- the storage-write kind ``storage_failure`` fails the first storage write at or after ``at_s``
  made by the target process (or by any process of the target job).
- the restore kind ``restore_crash`` fails the target write task at its first restore at or
  after ``at_s``, before its bootstrap event; the instant kind ``taskmanager_pause`` pauses
  every write task of the target job from the first instant its coordinator starts at or after
  ``at_s``.
- the flush kind ``write_error`` fails the first records of the first flush with records the
  target write task starts at or after ``at_s``. Processes are told apart by
  simpy's ``active_process``, which :meth:`Nemesis.name_process` maps to its history name.

Faults stop when the run drains (``duration_s``): an entry that has not fired by then never does.
Every fault is a history event of process ``nemesis``; a scheduled one carries ``"schedule": i``,
its index in ``[[faults.schedule]]``, so a violation can be traced back to the entry behind it.

Randomness: the random faults (:mod:`sim.random_faults`) draw from their own named streams;
scheduled faults draw nothing, so adding or removing an entry never moves a random draw.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

import simpy

from faults import fault_kind, kinds_with_hook
from faults.base import NotificationFate
from scenarios.schema import ScheduledFault
from sim.flink.runtime import task_index
from sim.pauses import PausableEnvironment
from sim.random_faults import RandomFaults
from sim.storage import SimStorage, StorageWriteError

if TYPE_CHECKING:
    from sim.world import World

NOTIFICATION = "CheckpointComplete"
"""How a checkpoint-complete notification is described in fault events (as the channel does)."""


def at_ms(entry: ScheduledFault) -> int:
    """The entry's time in whole simulated milliseconds."""
    return round(entry.at_s * 1000)


class Nemesis(RandomFaults):
    """The faults of one :class:`sim.world.World`; the world and its jobs call the hooks. Each
    kind's own rule is its module in ``faults/``; this class is the :class:`faults.base.NemesisPort`
    they act through and decides *when* they fire (their :data:`faults.base.Hook`)."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.env = world.env
        self.history = world.history
        self.faults = world.scenario.faults
        self.jobs_by_name: dict[str, Any] = {}
        self._names: WeakKeyDictionary[simpy.Process, str] = WeakKeyDictionary()
        # entries not fired yet, per kind, in schedule order: (index, entry)
        self._pending: dict[str, list[tuple[int, ScheduledFault]]] = {}
        for index, entry in enumerate(self.faults.schedule):
            self._pending.setdefault(entry.kind, []).append((index, entry))
        self.armed: dict[tuple[str, str], list[dict[str, Any]]] = {}

    # --- processes ----------------------------------------------------------------------------

    def start(self, jobs: list[Any]) -> None:
        """Start the fault processes (call once, after the jobs started)."""
        self.jobs_by_name = {job.name: job for job in jobs}
        faults = self.faults
        self.start_random()
        timed_kinds = {kind.name for kind in kinds_with_hook("timed")}
        timed = [
            (at_ms(entry), index, entry)
            for index, entry in enumerate(faults.schedule)
            if entry.kind in timed_kinds
        ]
        if timed:
            self.env.process(self._timed(sorted(timed, key=lambda item: item[:2])))

    def _timed(self, entries: list[tuple[int, int, ScheduledFault]]) -> Generator[Any, Any, None]:
        """Fire the scheduled timed kinds at their times, in schedule order on ties."""
        for when_ms, index, entry in entries:
            if when_ms > self.env.now:
                yield self.env.timeout(when_ms - self.env.now)
            if not self.active:
                return
            fault_kind(entry.kind).fire(self, entry.target, entry.options(), index)

    # --- the port the kinds act through (faults.base.NemesisPort) -------------------------------

    def record(self, event: str, value: dict[str, Any], index: int | None) -> None:
        """A ``nemesis`` history event; a scheduled fault's carries its ``schedule`` index."""
        if index is not None:
            value = {**value, "schedule": index}
        self.history.nemesis(event, value)

    def _job_of(self, target: str) -> Any:
        return self.jobs_by_name[target.split("/", 1)[0]]

    def job_restarting(self, target: str) -> bool:
        return bool(self._job_of(target).failing)

    def crash(self, target: str, how: str = "crashed") -> None:
        """Fail ``target``'s job over as ``target`` failing (the cause: "<target> <how>")."""
        job = self._job_of(target)
        role = target.split("/", 1)[1] if "/" in target else ""
        cause = f"{target} {how}"
        if role == "coordinator":
            job.fail(job.epoch, cause, path="jobmanager")
        else:
            job.fail(job.epoch, cause, failed_task=task_index(role))

    def rescale(self, target: str, writers: int) -> None:
        self._job_of(target).rescale(writers)

    def pause(self, target: str, duration_ms: int) -> None:
        if not isinstance(self.env, PausableEnvironment):
            raise TypeError("pausing a process needs the world's PausableEnvironment")
        self.env.pause(target, duration_ms)

    def jump_clock(self, target: str, delta_ms: int) -> int:
        clock = self.world.clock(target)
        clock.jump(delta_ms)
        return clock.skew_ms()

    def _take(self, kind: str, matches: Callable[[ScheduledFault], bool]) -> int | None:
        """Use up the first pending entry of ``kind`` that is due and ``matches``; its index."""
        pending = self._pending.get(kind, [])
        now = self.env.now
        for position, (index, entry) in enumerate(pending):
            if at_ms(entry) <= now and matches(entry):
                del pending[position]
                return index
        return None

    # --- hooks ----------------------------------------------------------------------------------

    def name_process(self, name: str) -> None:
        """Call from inside a simpy process: the process is ``name`` in the history (for
        ``storage_failure`` targets)."""
        process = self.env.active_process
        if process is not None:
            self._names[process] = name

    def current_process(self) -> str | None:
        """History name of the running simpy process, if it told :meth:`name_process`."""
        process = self.env.active_process
        return None if process is None else self._names.get(process)

    def fail_checkpoint(
        self, job: str, checkpoint_id: int, triggered_ms: int, *, randomly: bool
    ) -> bool:
        """Whether checkpoint ``checkpoint_id`` of ``job`` (all task ACKs in) fails; records the
        fault. ``randomly``: the ``checkpoint_failure`` draw said so."""

        def matches(entry: ScheduledFault) -> bool:
            return (
                entry.target == job
                and at_ms(entry) <= triggered_ms
                and entry.checkpoint in (None, checkpoint_id)
            )

        for kind in kinds_with_hook("checkpoint"):
            index = self._take(kind.name, matches) if self.active else None
            if index is not None or randomly:
                self.record(kind.event, {"job": job, "checkpoint": checkpoint_id}, index)
                return True
        return False

    def notification_fate(self, channel: str, job: str, checkpoint_id: int) -> NotificationFate:
        """What happens to the notification for ``checkpoint_id`` that ``job`` sends now; records
        the scheduled faults (random loss and duplication are the channel's own)."""
        if not self.active:
            return NotificationFate()

        def matches(entry: ScheduledFault) -> bool:
            return entry.target == job and entry.checkpoint in (None, checkpoint_id)

        what = {"channel": channel, "message": NOTIFICATION, "checkpoint": checkpoint_id}
        fate = NotificationFate()
        for kind in kinds_with_hook("notification"):
            index = self._take(kind.name, matches)
            if index is None:
                continue
            fate, more = kind.shape(fate, self.faults.schedule[index].options())
            self.record(kind.event, {**what, **more}, index)
            if fate.copies == 0:  # lost: nothing left to delay or duplicate
                break
        return fate

    def record_errors(self, process: str) -> int:
        """Before the write task ``process`` writes a flush with records: how many of its first
        records fail (the ``flush`` kinds' entries due for it, and the random ones armed on
        it); records each as a fault event."""
        if not self.active:
            return 0
        failed = 0
        for kind in kinds_with_hook("flush"):
            index = self._take(kind.name, lambda e: e.target == process)
            if index is not None:
                records = int(self.faults.schedule[index].option("records") or 1)
                self.record(kind.event, {"process": process, "records": records}, index)
                failed += records
        armed = 0
        while self.take_armed("write_error", process) is not None:
            armed += 1
        if armed:
            self.record(
                fault_kind("write_error").event, {"process": process, "records": armed}, None
            )
            failed += armed
        return failed

    def restore_fails(self, process: str) -> bool:
        """As the write task ``process`` restores, before its bootstrap event: whether a
        ``restore`` kind's entry due for it, or a random one armed on it, fails it now (recorded,
        and the task failed over)."""
        if not self.active:
            return False
        for kind in kinds_with_hook("restore"):
            index = self._take(kind.name, lambda e: e.target == process)
            if index is not None or self.take_armed(kind.name, process) is not None:
                self.record(kind.event, {"process": process}, index)
                self.crash(process, "crashed at restore")
                return True
        return False

    def instant_started(self, job: str) -> None:
        """The coordinator of ``job`` started an instant: an ``instant`` kind's entry due for
        the job, or a random one armed on it, pauses every write task of the job (recorded)."""
        if not self.active:
            return
        for kind in kinds_with_hook("instant"):
            index = self._take(kind.name, lambda e: e.target == job)
            options = (
                self.faults.schedule[index].options()
                if index is not None
                else self.take_armed(kind.name, job)
            )
            if options is None:
                continue
            duration_ms = int(options["duration_ms"])
            self.record(kind.event, {"job": job, "duration_ms": duration_ms}, index)
            for task in range(self.jobs_by_name[job].parallelism):
                self.pause(f"{job}/task-{task}", duration_ms)

    def storage_write(self, storage: SimStorage, path: str) -> None:
        """Before a storage write: raise :class:`StorageWriteError` if a scheduled failure is due
        for the process writing."""
        if not (self.active and storage.failures_enabled):
            return
        kinds = [kind for kind in kinds_with_hook("storage_write") if self._pending.get(kind.name)]
        process = self.current_process() if kinds else None
        if process is None:
            return
        targets = (process, process.split("/", 1)[0])  # the process, or its whole job
        for kind in kinds:
            index = self._take(kind.name, lambda e: e.target in targets)
            if index is None:
                continue
            storage.write_failures += 1
            self.record(kind.event, {"path": path, "process": process}, index)
            raise StorageWriteError(f"injected write failure: {path}")


class NemesisStorage(SimStorage):
    """:class:`SimStorage` whose writes can also fail by schedule (``storage_failure``).

    The random failure draw comes first and always happens, so a schedule never shifts the
    random stream of storage failures.
    """

    def __init__(self, nemesis: Nemesis, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.nemesis = nemesis

    def _maybe_fail(self, path: str) -> None:
        super()._maybe_fail(path)
        self.nemesis.storage_write(self, path)


__all__ = ["Nemesis", "NemesisStorage", "NotificationFate", "at_ms"]
