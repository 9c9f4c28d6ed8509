"""``write_error``: records of one flush fail to write (a record the write handle cannot convert
or write: a bad value, a schema mismatch). It hits the first flush with records that the target
write task starts at or after ``at_s``: its first ``records`` records fail.

What follows is the write handle's and the coordinator's rule (``[protocol]
record_write_failure``, ``[[jobs]] write_ignore_failed``; docs/protocol.md section 6.8): the
handle throws and the task fails before its checkpoint (Hudi's master), or it marks the records
failed in the write status (``WriteStatus#markFailure``), writes the rest, and the coordinator's
``doCommit`` rolls the instant back and fails the job after the checkpoint completed
(apache/hudi#18051).

``write_error_per_hour`` arms random write errors (one record each) on random write tasks of a
random job; each is recorded when it hits a flush and replays as an entry at that time."""

from __future__ import annotations

from typing import Any

from faults.base import (
    FaultKind,
    Mark,
    Option,
    Targets,
    Wanted,
    per_hour,
)

MAX_RECORDS = 1_000_000


class WriteError(FaultKind):
    def targets(self, scenario: Any, job: Any) -> Targets:
        return Targets(writers=job.writers)

    def wanted(self, scenario: Any) -> list[Wanted]:
        tasks = [f"{job.name}/task-{i}" for job in scenario.jobs for i in range(job.writers)]
        return per_hour(scenario, tasks, scenario.faults.write_error_per_hour, 1)


KIND = WriteError(
    name="write_error",
    event_target="process",
    summary="the first records of the target write task's next flush fail to write",
    hook="flush",
    event="write_error",
    mark=Mark("X", "#8b0000", "record write error"),
    options=(Option("records", 1, MAX_RECORDS, "how many records of the flush fail"),),
    rates=("write_error_per_hour",),
    size_option="records",
)
