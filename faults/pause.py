"""``pause``: the target process stops for ``duration_ms`` (a long garbage collection, a frozen
VM or container), as Jepsen's pause nemesis does. It stops at its next protocol step that waits
(a lock, a sleep) or the next message it takes, and keeps what it holds, so a coordinator paused
inside TrueTime's lock or a commit (``StreamWriteOperatorCoordinator`` committing under the table
lock) stalls every process waiting on that lock, and writers in blocking mode wait for its next
instant. A coordinator's write-client heartbeat timer stops with it (``sim/table_services.py``).

A write task (a TaskManager's GC) stops before the next record batch or barrier it takes, before
it sends its bootstrap event, and between writing a flush's files and sending their
``WriteMetadataEvent``: a pause there holds an instant the coordinator granted with no event in
its buffer for as long as it lasts (``sim/flink/write_function.py``). Meanwhile its input queue
fills and the source is back-pressured, as Flink's credit-based flow control does.

Random pauses pick a length in [1, ``pause_max_ms``]: ``pause_per_hour`` one of the coordinators
and compactors, ``writer_pause_per_hour`` one write task of a random job; explore draws them as
entries, the longest first."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from faults.base import (
    MS_PER_HOUR,
    FaultKind,
    Mark,
    NemesisPort,
    Option,
    Targets,
    Wanted,
    coordinator_and_compactor,
    named_targets,
    per_hour,
)


class Pause(FaultKind):
    def targets(self, scenario: Any, job: Any) -> Targets:
        named = coordinator_and_compactor(scenario, job)
        return Targets(before=named.before, writers=job.writers)

    def fire(
        self, port: NemesisPort, target: str, options: Mapping[str, Any], index: int | None
    ) -> None:
        duration_ms = int(options["duration_ms"])
        port.record(self.event, {"process": target, "duration_ms": duration_ms}, index)
        port.pause(target, duration_ms)

    def wanted(self, scenario: Any) -> list[Wanted]:
        faults = scenario.faults
        named = named_targets(self, scenario)  # the coordinators and compactors
        tasks = [f"{job.name}/task-{i}" for job in scenario.jobs for i in range(job.writers)]
        return [
            *per_hour(scenario, named, faults.pause_per_hour, faults.pause_max_ms),
            *per_hour(scenario, tasks, faults.writer_pause_per_hour, faults.pause_max_ms),
        ]


KIND = Pause(
    name="pause",
    event_target="process",
    summary="the target coordinator, compactor or write task stops for duration_ms, holding what "
    "it holds",
    hook="timed",
    event="pause",
    mark=Mark("s", "#6c6c6c", "process pause"),
    options=(Option("duration_ms", 1, MS_PER_HOUR, "how long it stops", required=True),),
    rates=("pause_per_hour", "writer_pause_per_hour"),
    size_option="duration_ms",
)
