"""The nemesis: every fault of a run, the random ones (``[faults]`` rates) and the scheduled ones
(``[[faults.schedule]]``), in one place.

Random faults find bugs; scheduled faults *reproduce* them. A counterexample is only useful if a
person can read it ("the ACK of checkpoint 3 was lost, then task-1 crashed at 12.4 s") and
replay it exactly, and ``testbed explore`` can only shrink a failure if every fault is an explicit
entry it can delete. So each schedule entry is a small rule that fires once:

- ``crash`` and ``clock_jump`` fire at ``at_s`` exactly (a simpy process walks the schedule).
- ``lose_ack``, ``delay_ack``, ``duplicate_ack`` hit the first checkpoint-complete notification
  the job sends at or after ``at_s`` (with ``checkpoint = N``: the one for checkpoint N); each
  entry hits one notification, so two ``lose_ack`` entries lose two notifications in a row. A
  lost notification uses up only the ``lose_ack`` entry.
- ``fail_checkpoint`` fails the first checkpoint triggered at or after ``at_s`` that gets all its
  task ACKs (a checkpoint that times out on its own does not use the entry up).
- ``storage_failure`` fails the first storage write at or after ``at_s`` made by the target
  process (or by any process of the target job). Processes are told apart by simpy's
  ``active_process``, which :meth:`Nemesis.name_process` maps to its history name.

Faults stop when the run drains (``duration_s``): an entry that has not fired by then never does.
Every fault is a history event of process ``nemesis``; a scheduled one carries ``"schedule": i``,
its index in ``[[faults.schedule]]``, so a violation can be traced back to the entry behind it.

Randomness: the random faults draw from their own named streams (the crash streams are those the
world used before this module existed, so old seeds replay the same crashes); scheduled faults
draw nothing, so adding or removing an entry never moves a random draw.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

import simpy

from scenarios.schema import ScheduledFault, fault_targets
from sim.storage import SimStorage, StorageWriteError

if TYPE_CHECKING:
    from sim.world import World

MS_PER_HOUR = 3_600_000
NOTIFICATION = "CheckpointComplete"
"""How a checkpoint-complete notification is described in fault events (as the channel does)."""


def at_ms(entry: ScheduledFault) -> int:
    """The entry's time in whole simulated milliseconds."""
    return round(entry.at_s * 1000)


@dataclass(frozen=True)
class NotificationFate:
    """What the nemesis does to one checkpoint-complete notification: ``copies`` to send (0 when
    lost, 2 when duplicated) and the extra delay of each."""

    copies: int = 1
    extra_delay_ms: int = 0


class Nemesis:
    """The faults of one :class:`sim.world.World`; the world and its jobs call the hooks."""

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

    # --- processes ----------------------------------------------------------------------------

    def start(self, jobs: list[Any]) -> None:
        """Start the fault processes (call once, after the jobs started)."""
        self.jobs_by_name = {job.name: job for job in jobs}
        faults = self.faults
        if faults.writer_crash_per_hour > 0:
            self.env.process(self._random_crashes("writer", faults.writer_crash_per_hour))
        if faults.coordinator_crash_per_hour > 0:
            self.env.process(self._random_crashes("coordinator", faults.coordinator_crash_per_hour))
        if faults.clock_jump_per_hour > 0 and faults.clock_jump_ms > 0:
            self.env.process(self._random_clock_jumps(faults.clock_jump_per_hour))
        timed = [
            (at_ms(entry), index, entry)
            for index, entry in enumerate(faults.schedule)
            if entry.kind in ("crash", "clock_jump")
        ]
        if timed:
            self.env.process(self._timed(sorted(timed, key=lambda item: item[:2])))

    @property
    def active(self) -> bool:
        """Faults fire until the run drains."""
        return not self.world.draining

    def _random_crashes(self, kind: str, per_hour: float) -> Generator[Any, Any, None]:
        """Crash a random job's writer or coordinator as a Poisson process."""
        rng = self.world.rng.child(f"crash:{kind}")
        jobs = list(self.jobs_by_name.values())
        rate_per_ms = per_hour / MS_PER_HOUR
        while True:
            yield self.env.timeout(max(1, int(rng.expovariate(rate_per_ms))))
            if not self.active:
                return
            job = jobs[rng.randint(0, len(jobs) - 1)]
            target = (
                f"{job.name}/task-{rng.randint(0, job.parallelism - 1)}"
                if kind == "writer"
                else f"{job.name}/coordinator"
            )
            self._crash(target, None)

    def _random_clock_jumps(self, per_hour: float) -> Generator[Any, Any, None]:
        """Step a random instant-time clock by a non-zero amount within +-clock_jump_ms."""
        rng = self.world.rng.child("nemesis").child("clock_jump")
        targets = fault_targets(self.world.scenario, "clock_jump")
        bound = self.faults.clock_jump_ms
        rate_per_ms = per_hour / MS_PER_HOUR
        while True:
            yield self.env.timeout(max(1, int(rng.expovariate(rate_per_ms))))
            if not self.active:
                return
            target = rng.choice(targets)
            delta_ms = rng.randint(1, bound) * rng.choice((-1, 1))
            self._clock_jump(target, delta_ms, None)

    def _timed(self, entries: list[tuple[int, int, ScheduledFault]]) -> Generator[Any, Any, None]:
        """Fire the scheduled crashes and clock jumps at their times, in schedule order on ties."""
        for when_ms, index, entry in entries:
            if when_ms > self.env.now:
                yield self.env.timeout(when_ms - self.env.now)
            if not self.active:
                return
            if entry.kind == "crash":
                self._crash(entry.target, index)
            else:
                assert entry.delta_ms is not None  # the schema requires it for clock_jump
                self._clock_jump(entry.target, entry.delta_ms, index)

    # --- the faults -----------------------------------------------------------------------------

    def _record(self, f: str, value: dict[str, Any], index: int | None) -> None:
        if index is not None:
            value = {**value, "schedule": index}
        self.history.nemesis(f, value)

    def _crash(self, target: str, index: int | None) -> None:
        job = self.jobs_by_name[target.split("/", 1)[0]]
        value: dict[str, Any] = {"process": target}
        if job.failing:  # already down and restarting: this crash changes nothing
            value["job_restarting"] = True
        self._record("crash", value, index)
        job.fail(job.epoch, f"{target} crashed")

    def _clock_jump(self, target: str, delta_ms: int, index: int | None) -> None:
        clock = self.world.clock(target)
        clock.jump(delta_ms)
        self._record(
            "clock_jump",
            {"process": target, "delta_ms": delta_ms, "skew_ms": clock.skew_ms()},
            index,
        )

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
        index = None
        if self.active:
            index = self._take(
                "fail_checkpoint",
                lambda e: (
                    e.target == job
                    and at_ms(e) <= triggered_ms
                    and e.checkpoint in (None, checkpoint_id)
                ),
            )
        if index is None and not randomly:
            return False
        self._record("checkpoint_failure", {"job": job, "checkpoint": checkpoint_id}, index)
        return True

    def notification_fate(self, channel: str, job: str, checkpoint_id: int) -> NotificationFate:
        """What happens to the notification for ``checkpoint_id`` that ``job`` sends now; records
        the scheduled faults (random loss and duplication are the channel's own)."""
        if not self.active:
            return NotificationFate()

        def matches(entry: ScheduledFault) -> bool:
            return entry.target == job and entry.checkpoint in (None, checkpoint_id)

        what = {"channel": channel, "message": NOTIFICATION, "checkpoint": checkpoint_id}
        lost = self._take("lose_ack", matches)
        if lost is not None:
            self._record("drop", what, lost)
            return NotificationFate(copies=0)
        delayed = self._take("delay_ack", matches)
        extra_delay_ms = 0
        if delayed is not None:
            extra_delay_ms = self.world.scenario.faults.schedule[delayed].delay_ms or 0
            self._record("delay", {**what, "delay_ms": extra_delay_ms}, delayed)
        duplicated = self._take("duplicate_ack", matches)
        if duplicated is not None:
            self._record("duplicate", what, duplicated)
        return NotificationFate(2 if duplicated is not None else 1, extra_delay_ms)

    def storage_write(self, storage: SimStorage, path: str) -> None:
        """Before a storage write: raise :class:`StorageWriteError` if a scheduled failure is due
        for the process writing."""
        if not (self.active and storage.failures_enabled and self._pending.get("storage_failure")):
            return
        process = self.current_process()
        if process is None:
            return
        job = process.split("/", 1)[0]
        index = self._take("storage_failure", lambda e: e.target in (process, job))
        if index is None:
            return
        storage.write_failures += 1
        self._record("storage_write_failure", {"path": path, "process": process}, index)
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
