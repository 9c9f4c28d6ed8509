"""``crash``: a write task or the job manager's coordinator crashes. Flink fails the job over:
every process of the job stops and a new attempt restores the last completed checkpoint after
``restart_delay_ms`` (``sim/job.py``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from faults.base import (
    FaultKind,
    HistoryContext,
    Mark,
    NemesisPort,
    Targets,
    Wanted,
)


class Crash(FaultKind):
    def targets(self, scenario: Any, job: Any) -> Targets:
        return Targets(before=(f"{job.name}/coordinator",), writers=job.writers)

    def fire(
        self, port: NemesisPort, target: str, options: Mapping[str, Any], index: int | None
    ) -> None:
        value: dict[str, Any] = {"process": target}
        if port.job_restarting(target):  # already down and restarting: this crash changes nothing
            value["job_restarting"] = True
        port.record(self.event, value, index)
        port.crash(target)

    def wanted(self, scenario: Any) -> list[Wanted]:
        hours = scenario.scenario.duration_s / 3600
        faults = scenario.faults
        tasks, coordinators = [], []
        for job in scenario.jobs:
            targets = self.targets(scenario, job)
            coordinators += targets.before
            tasks += [f"{job.name}/task-{i}" for i in range(targets.writers)]
        return [
            Wanted(tuple(targets), rate * hours)
            for targets, rate in (
                (tasks, faults.writer_crash_per_hour),
                (coordinators, faults.coordinator_crash_per_hour),
            )
            if rate > 0
        ]

    def from_event(
        self, value: dict[str, Any], at_s: float, context: HistoryContext
    ) -> dict[str, Any] | None:
        if value.get("job_restarting"):  # changed nothing
            return None
        return {"at_s": at_s, "kind": self.name, "target": value["process"]}


KIND = Crash(
    name="crash",
    summary="the target write task or coordinator crashes; the job fails over",
    hook="timed",
    event="crash",
    mark=Mark("*", "#000000", "crash"),
    rates=("writer_crash_per_hour", "coordinator_crash_per_hour"),
)
