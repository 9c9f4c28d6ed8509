"""``restore_crash``: a write task fails as it restores, right before it sends its bootstrap
event (``AbstractStreamWriteFunction#initializeState`` ends with ``sendBootstrapEvent``): its
TaskManager is lost while the job redeploys, or the restore itself throws. Flink fails the task
over as any task failure (its region, or the whole job under ``failover = "full"``), so the
tasks come back once more, with the next attempt number.

It hits the first restore of the target write task that starts at or after ``at_s``: the first
start after a failover, a rescale or the job's own start. A crash at a fixed time almost never
lands in the few milliseconds between a restart and its bootstrap event; anchoring the fault to
the restore (FoundationDB's BUGGIFY: a fault placed at the protocol step where it hurts) puts
every entry there, wherever ``at_s`` falls.

``restore_crash_per_hour`` arms random ones: each arms one write task of a random job (of its
parallelism then), which fails at its next restore; each is recorded when it fires and replays
as an entry at that time."""

from __future__ import annotations

from typing import Any

from faults.base import (
    FaultKind,
    Mark,
    Targets,
    Wanted,
    per_hour,
)


class RestoreCrash(FaultKind):
    def targets(self, scenario: Any, job: Any) -> Targets:
        return Targets(writers=job.writers)

    def wanted(self, scenario: Any) -> list[Wanted]:
        tasks = [f"{job.name}/task-{i}" for job in scenario.jobs for i in range(job.writers)]
        return per_hour(scenario, tasks, scenario.faults.restore_crash_per_hour)


KIND = RestoreCrash(
    name="restore_crash",
    event_target="process",
    summary="the target write task fails at its next restore, before its bootstrap event",
    hook="restore",
    event="restore_crash",
    mark=Mark("P", "#000000", "crash at restore"),
    rates=("restore_crash_per_hour",),
)
