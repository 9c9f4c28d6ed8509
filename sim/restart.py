"""Flink's restart paths for a job with Hudi's sink, and what each keeps (docs/protocol.md 6.3).

Which path runs depends on what failed, as in Flink: a write task's failure restarts its region
under ``[[jobs]] failover = "region"`` (Flink's default; Hudi's pipeline connects every writer to
the source all-to-all, so the region is every task) and the whole job under ``"full"``; a
coordinator error (``failJob``) or a failed checkpoint (Flink's default
``execution.checkpointing.tolerable-failed-checkpoints`` is 0) is a global failover; a crash of
the coordinator is a JobManager failover; a ``rescale`` submits the job anew with a new
parallelism. Region and global failovers keep the operator coordinator (the same
``StreamWriteOperatorCoordinator`` object: Hudi does not wrap it in Flink's
``RecreateOnResetOperatorCoordinator``) and restart the tasks at the next attempt number; a
JobManager failover or a rescale builds a new coordinator and deploys the tasks at attempt 0.
"""

from __future__ import annotations

from models.flink.write_task import TaskState, redistribute
from sim.messages import CompletedCheckpoint

RESTART_PATHS = {
    "region": "a write task failed under failover = region: the tasks restart (attempt + 1), "
    "the coordinator keeps its state",
    "global": "the job failed (failJob, a failed checkpoint, a task under failover = full): "
    "the tasks restart (attempt + 1), the coordinator is reset to the checkpoint",
    "jobmanager": "the coordinator crashed: a new coordinator, the tasks deployed afresh "
    "(attempt 0)",
    "rescale": "the job restarts with a new parallelism: a new coordinator, the tasks deployed "
    "afresh (attempt 0) with the restored task states redistributed",
}
"""Flink's restart paths, as the ``failover`` history event names them."""


def failover_path(failed_task: int | None, failover: str) -> str:
    """The path of a failure: a write task's (``failed_task``) under ``failover = "region"``
    restarts its region, anything else the whole job."""
    return "region" if failed_task is not None and failover == "region" else "global"


def keeps_coordinator(path: str) -> bool:
    """Whether ``path`` keeps the operator coordinator (and raises the tasks' attempt number)."""
    return path in ("region", "global")


def restored_task_states(
    checkpoint: CompletedCheckpoint | None, parallelism: int
) -> list[TaskState | None]:
    """Each task's restored state; after a rescale the old tasks' states redistributed as Flink
    splits operator list state."""
    if checkpoint is None:
        return [None] * parallelism
    if len(checkpoint.tasks) == parallelism:
        return list(checkpoint.tasks)
    return list(redistribute(checkpoint.tasks, parallelism))


def start_event(
    epoch: int, restored: int | None, source_offset: int, path: str, task_attempt: int
) -> dict[str, object]:
    """The ``start`` history event of attempt ``epoch`` (``path`` is ``start`` for the first)."""
    return {
        "epoch": epoch,
        "restored_checkpoint": restored,
        "source_offset": source_offset,
        "path": "start" if epoch == 1 else path,
        "task_attempt": task_attempt,
    }


__all__ = [
    "RESTART_PATHS",
    "failover_path",
    "keeps_coordinator",
    "restored_task_states",
    "start_event",
]
