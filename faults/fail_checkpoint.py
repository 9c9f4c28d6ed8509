"""``fail_checkpoint``: a checkpoint that got every task's ACK fails anyway (declined, as Flink's
``CheckpointCoordinator`` fails a checkpoint a task declines): no completion and no notification;
the job restarts from the last completed checkpoint and the next checkpoint subsumes this one."""

from __future__ import annotations

from typing import Any

from faults.base import FaultKind, HistoryContext, Targets, Wanted, job_target, per_job
from faults.lose_ack import CHECKPOINT


class FailCheckpoint(FaultKind):
    def targets(self, scenario: Any, job: Any) -> Targets:
        return job_target(job)

    def wanted(self, scenario: Any) -> list[Wanted]:
        return per_job(scenario, scenario.faults.checkpoint_failure)

    def from_event(
        self, value: dict[str, Any], at_s: float, context: HistoryContext
    ) -> dict[str, Any] | None:
        return {
            "at_s": 0.0,
            "kind": self.name,
            "target": value["job"],
            "checkpoint": value["checkpoint"],
        }


KIND = FailCheckpoint(
    name="fail_checkpoint",
    summary="the target job's next checkpoint with all task ACKs in fails",
    hook="checkpoint",
    event="checkpoint_failure",
    mark=None,  # the swimlane draws failed checkpoints on the checkpoint row
    options=(CHECKPOINT,),
    rates=("checkpoint_failure",),
    per_checkpoint=True,
)
