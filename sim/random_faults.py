"""The random faults of a run (the ``[faults]`` rates), as Poisson processes of simulated time:
the half of :class:`sim.nemesis.Nemesis` that decides when a random fault happens and whom it
hits. Timed kinds fire at once; the anchored kinds (``write_error``, ``restore_crash``,
``taskmanager_pause``) are armed on their target and fire at its next flush, restore or instant.

Each rate draws from its own named stream (``crash:writer``, ``crash:coordinator``,
``nemesis/clock_jump``, ``nemesis/rescale``, ``nemesis/pause``, ``nemesis/pause:writer``,
``nemesis/write_error``, ``nemesis/restore_crash``, ``nemesis/taskmanager_pause``), so adding a
rate never moves another's draws.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any

from faults import fault_kind
from faults.base import NemesisPort, named_targets
from scenarios.schema import fault_targets

if TYPE_CHECKING:
    import simpy

    from scenarios.faults import FaultsSpec
    from sim.rng import Rng
    from sim.world import World

MS_PER_HOUR = 3_600_000


class RandomFaults(NemesisPort):
    """The random fault processes of one world (a base of :class:`sim.nemesis.Nemesis`, which
    provides the port the kinds act through). Armed faults wait in :attr:`armed`: per target,
    the options of each fault armed on it and not fired yet, oldest first."""

    world: World
    env: simpy.Environment
    faults: FaultsSpec
    jobs_by_name: dict[str, Any]
    armed: dict[tuple[str, str], list[dict[str, Any]]]

    @property
    def active(self) -> bool:
        """Faults fire until the run drains."""
        return not self.world.draining

    def start_random(self) -> None:
        """Start a process for each random rate that is on."""
        faults = self.faults
        processes = (
            (faults.writer_crash_per_hour, lambda r: self._random_crashes("writer", r)),
            (faults.coordinator_crash_per_hour, lambda r: self._random_crashes("coordinator", r)),
            (
                faults.clock_jump_per_hour if faults.clock_jump_ms > 0 else 0,
                self._random_clock_jumps,
            ),
            (faults.rescale_per_hour, self._random_rescales),
            (faults.pause_per_hour, self._random_pauses),
            (faults.writer_pause_per_hour, self._random_writer_pauses),
            (faults.write_error_per_hour, lambda r: self._random_task_faults("write_error", r)),
            (faults.restore_crash_per_hour, lambda r: self._random_task_faults("restore_crash", r)),
            (faults.taskmanager_pause_per_hour, self._random_taskmanager_pauses),
        )
        for per_hour, process in processes:
            if per_hour > 0:
                self.env.process(process(per_hour))

    def take_armed(self, kind: str, target: str) -> dict[str, Any] | None:
        """The options of the oldest random fault of ``kind`` armed on ``target`` (used up), or
        None."""
        waiting = self.armed.get((kind, target))
        return waiting.pop(0) if waiting else None

    def _arm(self, kind: str, target: str, options: dict[str, Any]) -> None:
        self.armed.setdefault((kind, target), []).append(options)

    def _random_task(self, rng: Rng) -> str:
        """A random job's random write task, of its parallelism now."""
        jobs = list(self.jobs_by_name.values())
        job = jobs[rng.randint(0, len(jobs) - 1)]
        return f"{job.name}/task-{rng.randint(0, job.parallelism - 1)}"

    def _poisson(
        self, rng: Rng, per_hour: float, fire_one: Callable[[Rng], None]
    ) -> Generator[Any, Any, None]:
        """Call ``fire_one`` as a Poisson process of ``per_hour`` events until the run drains;
        each call draws its target from ``rng`` after the wait."""
        rate_per_ms = per_hour / MS_PER_HOUR
        while True:
            yield self.env.timeout(max(1, int(rng.expovariate(rate_per_ms))))
            if not self.active:
                return
            fire_one(rng)

    def _stream(self, name: str) -> Rng:
        return self.world.rng.child("nemesis").child(name)

    def _random_crashes(self, kind: str, per_hour: float) -> Generator[Any, Any, None]:
        """Crash a random job's writer or coordinator."""
        jobs = list(self.jobs_by_name.values())

        def crash_one(rng: Rng) -> None:
            job = jobs[rng.randint(0, len(jobs) - 1)]
            target = (
                f"{job.name}/task-{rng.randint(0, job.parallelism - 1)}"
                if kind == "writer"
                else f"{job.name}/coordinator"
            )
            fault_kind("crash").fire(self, target, {}, None)

        return self._poisson(self.world.rng.child(f"crash:{kind}"), per_hour, crash_one)

    def _random_clock_jumps(self, per_hour: float) -> Generator[Any, Any, None]:
        """Step a random instant-time clock by a non-zero amount within +-clock_jump_ms."""
        targets = fault_targets(self.world.scenario, "clock_jump")
        bound = self.faults.clock_jump_ms

        def jump_one(rng: Rng) -> None:
            target = rng.choice(targets)
            delta_ms = rng.randint(1, bound) * rng.choice((-1, 1))
            fault_kind("clock_jump").fire(self, target, {"delta_ms": delta_ms}, None)

        return self._poisson(self._stream("clock_jump"), per_hour, jump_one)

    def _random_rescales(self, per_hour: float) -> Generator[Any, Any, None]:
        """Rescale a random job to a random parallelism in [1, rescale_max_writers]."""
        jobs = list(self.jobs_by_name)

        def rescale_one(rng: Rng) -> None:
            target = jobs[rng.randint(0, len(jobs) - 1)]
            writers = rng.randint(1, self.faults.rescale_max_writers)
            fault_kind("rescale").fire(self, target, {"writers": writers}, None)

        return self._poisson(self._stream("rescale"), per_hour, rescale_one)

    def _random_pauses(self, per_hour: float) -> Generator[Any, Any, None]:
        """Pause a random coordinator or compactor for a random time in [1, pause_max_ms]."""
        targets = named_targets(fault_kind("pause"), self.world.scenario)

        def pause_one(rng: Rng) -> None:
            target = rng.choice(targets)
            duration_ms = rng.randint(1, self.faults.pause_max_ms)
            fault_kind("pause").fire(self, target, {"duration_ms": duration_ms}, None)

        return self._poisson(self._stream("pause"), per_hour, pause_one)

    def _random_writer_pauses(self, per_hour: float) -> Generator[Any, Any, None]:
        """Pause a random job's random write task (of its parallelism now) for a random time in
        [1, pause_max_ms]."""

        def pause_one(rng: Rng) -> None:
            target = self._random_task(rng)
            duration_ms = rng.randint(1, self.faults.pause_max_ms)
            fault_kind("pause").fire(self, target, {"duration_ms": duration_ms}, None)

        return self._poisson(self._stream("pause:writer"), per_hour, pause_one)

    def _random_task_faults(self, kind: str, per_hour: float) -> Generator[Any, Any, None]:
        """Arm a fault of ``kind`` (``write_error``: its next flush with records fails its first
        record; ``restore_crash``: it fails at its next restore) on a random job's random write
        task (of its parallelism now)."""

        def arm_one(rng: Rng) -> None:
            self._arm(kind, self._random_task(rng), {})

        return self._poisson(self._stream(kind), per_hour, arm_one)

    def _random_taskmanager_pauses(self, per_hour: float) -> Generator[Any, Any, None]:
        """Arm a TaskManager pause of a random length in [1, pause_max_ms] on a random job."""
        jobs = list(self.jobs_by_name)

        def arm_one(rng: Rng) -> None:
            target = jobs[rng.randint(0, len(jobs) - 1)]
            duration_ms = rng.randint(1, self.faults.pause_max_ms)
            self._arm("taskmanager_pause", target, {"duration_ms": duration_ms})

        return self._poisson(self._stream("taskmanager_pause"), per_hour, arm_one)


__all__ = ["RandomFaults"]
