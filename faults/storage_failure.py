"""``storage_failure``: one storage write fails (an I/O error from the file system or object
store). The writer's error handling decides what follows: a failed data file fails the job, a
failed instant file leaves a pending instant for rollback, a failed ``MARKERS<n>`` file of the
coordinator's timeline server (target ``<job>/timeline_server``) fails its marker requests (or
is swallowed: ``[protocol] marker_write_failure``)."""

from __future__ import annotations

from typing import Any

from faults.base import FaultKind, HistoryContext, Mark, Targets, Wanted, has_compactor


class StorageFailure(FaultKind):
    def targets(self, scenario: Any, job: Any) -> Targets:
        after = (f"{job.name}/compactor",) if has_compactor(scenario, job) else ()
        if scenario.table.markers == "timeline_server":
            after += (f"{job.name}/timeline_server",)
        return Targets((job.name, f"{job.name}/coordinator"), job.writers, after)

    def wanted(self, scenario: Any) -> list[Wanted]:
        rate = scenario.faults.storage_write_failure
        if rate <= 0:
            return []
        # a checkpoint's writes: every task's data files (one per partition it touches) plus the
        # coordinator's instant files and heartbeats; an estimate, only used to size the cap
        duration_s = scenario.scenario.duration_s
        writes = sum(
            duration_s / job.checkpoint_interval_s * (job.writers * scenario.table.partitions + 8)
            for job in scenario.jobs
        )
        targets: list[str] = []
        for job in scenario.jobs:
            t = self.targets(scenario, job)
            targets += [*t.before, *(f"{job.name}/task-{i}" for i in range(t.writers)), *t.after]
        return [Wanted(tuple(targets), rate * writes)]

    def from_event(
        self, value: dict[str, Any], at_s: float, context: HistoryContext
    ) -> dict[str, Any] | None:
        if len(context.jobs) != 1:  # a random failure's event names the file, not the process
            return None
        return {"at_s": at_s, "kind": self.name, "target": context.jobs[0]}


KIND = StorageFailure(
    name="storage_failure",
    summary="the target's next storage write fails",
    hook="storage_write",
    event="storage_write_failure",
    mark=Mark("v", "#c1121f", "storage write failure"),
    aliases=("storage_write_failure",),
    rates=("storage_write_failure",),
)
