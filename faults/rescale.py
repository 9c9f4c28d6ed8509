"""``rescale``: the target job is stopped and restarted from its last completed checkpoint with
``writers`` write tasks (Flink's rescale by restart: a new job graph, a new coordinator, every
task deployed afresh at attempt 0). The tasks' write-metadata state is redistributed over the new
parallelism (``models.flink.write_task.redistribute``): after a scale-up some new tasks restore
nothing, so a restored instant waits for a deferred recommit, as in Hudi's
``testDeferredRecommitAfterScaleUp``; after a scale-down one task re-sends several events, which
Hudi's coordinator files into one slot, the later overwriting the earlier (HUDI-4521).

Random rescales (``rescale_per_hour``) pick a job and a parallelism in
[1, ``rescale_max_writers``]; explore draws them as entries, the largest parallelism first."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from faults.base import (
    FaultKind,
    HistoryContext,
    Mark,
    NemesisPort,
    Option,
    Targets,
    Wanted,
    job_target,
    named_targets,
    per_hour,
    timed_entry,
)

MAX_WRITERS = 256
"""The largest parallelism a rescale may ask for (a ``[[jobs]] writers`` bound)."""


class Rescale(FaultKind):
    def targets(self, scenario: Any, job: Any) -> Targets:
        return job_target(job)

    def fire(
        self, port: NemesisPort, target: str, options: Mapping[str, Any], index: int | None
    ) -> None:
        writers = int(options["writers"])
        value: dict[str, Any] = {"job": target, "writers": writers}
        if port.job_restarting(target):  # already down and restarting: no rescale
            value["job_restarting"] = True
            port.record(self.event, value, index)
            return
        port.record(self.event, value, index)
        port.rescale(target, writers)

    def wanted(self, scenario: Any) -> list[Wanted]:
        faults = scenario.faults
        targets = named_targets(self, scenario)
        return per_hour(scenario, targets, faults.rescale_per_hour, faults.rescale_max_writers)

    def from_event(
        self, value: dict[str, Any], at_s: float, context: HistoryContext
    ) -> dict[str, Any] | None:
        if value.get("job_restarting"):  # changed nothing
            return None
        return timed_entry(self, value, at_s, "job")


KIND = Rescale(
    name="rescale",
    summary="the target job restarts from its last checkpoint with `writers` write tasks",
    hook="timed",
    event="rescale",
    mark=Mark("D", "#1f77b4", "rescale"),
    options=(Option("writers", 1, MAX_WRITERS, "the new number of write tasks", required=True),),
    rates=("rescale_per_hour",),
    size_option="writers",
)
