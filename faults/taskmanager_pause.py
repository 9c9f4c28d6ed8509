"""``taskmanager_pause``: every write task of the target job stops for ``duration_ms`` (the
TaskManager that runs them in one JVM stalls in a long garbage collection, or its host freezes),
from the moment the job's coordinator starts its next instant.

A paused write task stops where a ``pause`` of one task stops it (``faults/pause.py``): before
the next record batch or barrier it takes, and between writing a flush's files and sending their
``WriteMetadataEvent``. Started with an instant, the pause holds the instant the coordinator has
just granted with no event in its buffer for as long as it lasts, while the coordinator runs on:
it triggers checkpoints, snapshots its event buffers and commits. A pause at a fixed time almost
never lands in the few milliseconds between a grant and the first event; anchoring it to the
grant (FoundationDB's BUGGIFY) puts every entry there, wherever ``at_s`` falls.

It hits the first instant the target job's coordinator starts at or after ``at_s``.
``taskmanager_pause_per_hour`` arms random ones, each on a random job with a length in
[1, ``pause_max_ms``]; each is recorded when it fires and replays as an entry at that time."""

from __future__ import annotations

from typing import Any

from faults.base import (
    MS_PER_HOUR,
    FaultKind,
    Mark,
    Option,
    Targets,
    Wanted,
    job_target,
    per_hour,
)


class TaskManagerPause(FaultKind):
    def targets(self, scenario: Any, job: Any) -> Targets:
        return job_target(job)

    def wanted(self, scenario: Any) -> list[Wanted]:
        faults = scenario.faults
        jobs = [job.name for job in scenario.jobs]
        return per_hour(scenario, jobs, faults.taskmanager_pause_per_hour, faults.pause_max_ms)


KIND = TaskManagerPause(
    name="taskmanager_pause",
    event_target="job",
    summary="every write task of the target job stops for duration_ms from the next instant "
    "its coordinator starts",
    hook="instant",
    event="taskmanager_pause",
    mark=Mark("s", "#a0a0a0", "TaskManager pause"),
    options=(Option("duration_ms", 1, MS_PER_HOUR, "how long the tasks stop", required=True),),
    rates=("taskmanager_pause_per_hour",),
    size_option="duration_ms",
)
