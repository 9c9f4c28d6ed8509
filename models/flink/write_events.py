"""Messages between Flink write tasks and the Hudi write coordinator (docs/protocol.md section 6).

Hudi's ``WriteMetadataEvent`` travels from a write task (``StreamWriteFunction``) to the operator
coordinator (``StreamWriteOperatorCoordinator``) through Flink's operator-event gateway. It says:
this task wrote these files for this instant, with data that belongs after checkpoint
``checkpoint_id`` (the last checkpoint the task had snapshotted when it flushed). ``last_batch``
marks the flush done while snapshotting a checkpoint; a task may send several events for one
instant (eager flushes when its buffer is full) and the coordinator merges them
(:meth:`WriteMetadataEvent.merge`).

After a restart a task sends a :class:`BootstrapEvent` (Hudi 1.1
``AbstractStreamWriteFunction#sendBootstrapEvent``): a task started afresh by Flink (attempt 0:
a new job graph, a JobManager failover, a rescale) re-sends the events of its restored state whose
instants are still pending, flagged ``bootstrap``; a task restarted by a task or global failover
(attempt > 0) sends an *empty* bootstrap with the checkpoint id it restored, which tells the
coordinator to forget what the task sent after that checkpoint. The coordinator re-commits with
them what a completed checkpoint covered but whose commit was lost with the failure.
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
    bootstrap: bool = False
    """Re-sent from a restored task state (Hudi's ``isBootstrap``)."""
    error_records: int = 0
    """Records the task's write handles failed to write (the sum of its write statuses'
    ``WriteStatus#getTotalErrorRecords``): left out of the files, reported to the coordinator."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "write_stats", tuple(self.write_stats))

    @property
    def is_empty(self) -> bool:
        return not self.write_stats

    def merge(self, other: WriteMetadataEvent) -> WriteMetadataEvent:
        """Hudi's ``WriteMetadataEvent.mergeWith`` (1.1 and later, HUDI-9762 apache/hudi#13806):
        ``lastBatch`` ORed, write statuses merged per file (:func:`merge_write_stats`)."""
        if (other.task_id, other.instant) != (self.task_id, self.instant):
            raise ValueError(f"cannot merge events of different tasks/instants: {self} / {other}")
        return replace(
            self,
            checkpoint_id=max(self.checkpoint_id, other.checkpoint_id),
            write_stats=merge_write_stats(self.write_stats + other.write_stats),
            last_batch=self.last_batch or other.last_batch,
            records=self.records + other.records,
            error_records=self.error_records + other.error_records,
        )

    def summary(self) -> dict[str, object]:
        """A JSON-friendly description for the history (files by path, no record contents;
        ``error_records`` only when some record failed)."""
        summary: dict[str, object] = {
            "task": self.task_id,
            "instant": self.instant,
            "checkpoint": self.checkpoint_id,
            "files": [s.path for s in self.write_stats],
            "last_batch": self.last_batch,
            "records": self.records,
        }
        if self.error_records:
            summary["error_records"] = self.error_records
        return summary


_SUMMED = (
    "num_writes",
    "num_deletes",
    "num_update_writes",
    "num_inserts",
    "total_write_bytes",
    "total_write_errors",
    "total_log_records",
    "total_log_blocks",
)


def merge_write_stats(stats: tuple[WriteStat, ...]) -> tuple[WriteStat, ...]:
    """Write statuses merged per partition path + file id, as Hudi 1.1's ``mergeWith`` groups
    them (``WriteStatusMerger.merge``: counts summed, the later status wins for the rest).

    Hudi appends a task's later flushes of one instant to the same log file (one path per file
    id); the model writes each flush as a log file of its own, so statuses of one file id but
    different files are kept apart (merging them would drop a file from the commit and its
    markers' reconciliation would delete it). Statuses of the same file are merged, in the
    order their files first appear."""
    merged: dict[tuple[str, str, str], WriteStat] = {}
    for stat in stats:
        key = (stat.partition_path, stat.file_id, stat.path)
        prior = merged.get(key)
        if prior is None:
            merged[key] = stat
            continue
        sums = {name: getattr(prior, name) + getattr(stat, name) for name in _SUMMED}
        merged[key] = replace(stat, **sums)
    return tuple(merged.values())


@dataclass(frozen=True)
class BootstrapEvent:
    """What a task sends after (re)start: its restored events (attempt 0), or none and
    ``clears`` (an empty bootstrap, attempt > 0: forget this task's events after
    ``checkpoint_id``)."""

    task_id: int
    checkpoint_id: int  # the checkpoint the task restored from (-1: none)
    events: tuple[WriteMetadataEvent, ...] = field(default=())
    clears: bool = False
    """The task restarted at attempt > 0: the coordinator forgets what it sent after
    ``checkpoint_id`` (Hudi's ``emptyBootstrap`` and ``cleanLegacyEvents``)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "events", tuple(self.events))

    @property
    def is_empty(self) -> bool:
        """No restored event (Hudi's ``emptyBootstrap``, instant ``""``)."""
        return not self.events
