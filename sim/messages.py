"""Messages between the simulated Flink processes of one job.

Every message carries the job's ``epoch`` (incremented by each failover): a message still in
flight at a failover is dropped, as Flink drops RPCs of a cancelled execution attempt. Messages
already queued in the operator coordinator's mailbox stay there when the coordinator survives the
failover (a task or global failover keeps it): its executor handles write events, bootstraps and
notifications it had queued, not requests whose sender is gone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import simpy

from models.flink.event_buffers import CoordinatorState
from models.flink.write_events import BootstrapEvent, WriteMetadataEvent
from models.flink.write_task import TaskState


@dataclass(frozen=True)
class InstantRequest:
    """Task -> coordinator: which instant do I write into? (``checkpoint_id``: last snapshotted)."""

    epoch: int
    task_id: int
    checkpoint_id: int


@dataclass(frozen=True)
class InstantResponse:
    """Coordinator -> task: the instant to write into (None: not yet, ask again), and how long
    the request waited for the blocking mode's commit guard."""

    epoch: int
    instant: str | None
    guard_wait_ms: int = 0


@dataclass(frozen=True)
class EventMessage:
    """Task -> coordinator: a write-metadata event through the operator-event gateway."""

    epoch: int
    event: WriteMetadataEvent


@dataclass(frozen=True)
class BootstrapMessage:
    """Task -> coordinator: the task is up after a (re)start, with the bootstrap event Hudi
    sends (None: Hudi sends nothing, a task started afresh with nothing to re-send)."""

    epoch: int
    task_id: int
    event: BootstrapEvent | None


@dataclass(frozen=True)
class TaskAck:
    """Task -> checkpoint coordinator: snapshot of checkpoint ``checkpoint_id`` done."""

    epoch: int
    task_id: int
    checkpoint_id: int
    state: TaskState


@dataclass(frozen=True)
class SnapshotRequest:
    """Checkpoint coordinator -> operator coordinator: snapshot your state for ``checkpoint_id``."""

    epoch: int
    checkpoint_id: int
    reply: simpy.Event


@dataclass(frozen=True)
class CheckpointComplete:
    """Checkpoint coordinator -> operator coordinator: ``notifyCheckpointComplete`` (lossy)."""

    epoch: int
    checkpoint_id: int


@dataclass(frozen=True)
class Barrier:
    """Checkpoint barrier reaching a task, with the records it had buffered before it."""

    checkpoint_id: int
    rows: Any  # pa.Table | None, captured when the barrier passed


@dataclass(frozen=True)
class EagerFlush:
    """The task's buffer filled up: flush these records before anything queued after them."""

    rows: Any  # pa.Table


@dataclass(frozen=True)
class CompletedCheckpoint:
    """What Flink keeps of a completed checkpoint: everything a failover restores."""

    checkpoint_id: int
    source_offset: int
    coordinator: CoordinatorState
    tasks: tuple[TaskState, ...]
