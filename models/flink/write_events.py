"""Messages between Flink write tasks and the Hudi write coordinator (docs/protocol.md section 6).

Hudi's ``WriteMetadataEvent`` travels from a write task (``StreamWriteFunction``) to the operator
coordinator (``StreamWriteOperatorCoordinator``) through Flink's operator-event gateway. It says:
this task wrote these files for this instant, with data that belongs after checkpoint
``checkpoint_id`` (the last checkpoint the task had snapshotted when it flushed). ``last_batch``
marks the flush done while snapshotting a checkpoint; a task may send several events for one
instant (eager flushes when its buffer is full) and the coordinator merges them.

After a restart a task sends one :class:`BootstrapEvent` carrying the events of its restored state
whose instants may still be pending (Hudi re-sends them flagged ``bootstrap``); a task restarting
without state sends an empty one. The coordinator uses them to re-commit what a completed
checkpoint covered but whose commit was lost with the failure.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from models.format.commit_metadata import WriteStat


@dataclass(frozen=True)
class WriteMetadataEvent:
    """One task's write statuses for one instant (``instant`` None: the task had nothing)."""

    task_id: int
    instant: str | None
    checkpoint_id: int
    write_stats: tuple[WriteStat, ...] = ()
    last_batch: bool = False
    records: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "write_stats", tuple(self.write_stats))

    @property
    def is_empty(self) -> bool:
        return not self.write_stats

    def merge(self, other: WriteMetadataEvent) -> WriteMetadataEvent:
        """Hudi's ``WriteMetadataEvent.mergeWith``: statuses concatenated, ``lastBatch`` ORed."""
        if (other.task_id, other.instant) != (self.task_id, self.instant):
            raise ValueError(f"cannot merge events of different tasks/instants: {self} / {other}")
        return replace(
            self,
            checkpoint_id=max(self.checkpoint_id, other.checkpoint_id),
            write_stats=self.write_stats + other.write_stats,
            last_batch=self.last_batch or other.last_batch,
            records=self.records + other.records,
        )

    def summary(self) -> dict[str, object]:
        """A JSON-friendly description for the history (files by path, no record contents)."""
        return {
            "task": self.task_id,
            "instant": self.instant,
            "checkpoint": self.checkpoint_id,
            "files": [s.path for s in self.write_stats],
            "last_batch": self.last_batch,
            "records": self.records,
        }


@dataclass(frozen=True)
class BootstrapEvent:
    """Sent once by every task after (re)start: its restored events, possibly none."""

    task_id: int
    checkpoint_id: int  # the checkpoint the task restored from (-1: fresh start)
    events: tuple[WriteMetadataEvent, ...] = field(default=())

    def __post_init__(self) -> None:
        object.__setattr__(self, "events", tuple(self.events))
