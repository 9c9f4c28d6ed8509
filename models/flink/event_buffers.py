"""Event buffers of the write coordinator: the write metadata of each instant, per task slot.

Follows Hudi 1.1's ``EventBuffers`` (``hudi-flink`` ``sink/utils/EventBuffers.java``): one buffer
per checkpoint id (the last checkpoint the sending tasks had snapshotted), one slot per write task.
A buffer is *complete* when every task sent its last batch (``allEventsReceived``) and *empty*
when no task sent anything (``isEmptyDataWriteBuffer``). :class:`EventBuffers` files events as
Hudi does: a task's events of one instant merge (``addEventToBuffer``), a restored task's
bootstrap events overwrite its slot in the buffer of their own checkpoint id, created if absent
(``getOrCreateBootstrapBuffer``), and an empty bootstrap clears the task's slots in every buffer
at or after the checkpoint it restored (``cleanLegacyEvents``). :class:`CoordinatorState` is what
Flink stores for the coordinator at a checkpoint (``checkpointCoordinator``). The rules that use
them are in :mod:`models.flink.coordinator`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from models.flink.write_events import BootstrapEvent, WriteMetadataEvent
from models.format.commit_metadata import WriteStat
from models.table_errors import HoodieException


class EventBufferError(HoodieException, RuntimeError):
    """An event Hudi's coordinator cannot file (its ``checkState`` or a missing buffer): the job
    fails over (the coordinator's executor hands it to ``context.failJob``)."""


@dataclass(frozen=True)
class EventBuffer:
    """The write metadata of one instant, one slot per task (None: nothing received yet).

    A restored buffer keeps the number of slots it was stored with, as Hudi's restored arrays do
    (after a scale-up the new tasks have no slot in it)."""

    checkpoint_id: int
    instant: str
    events: tuple[WriteMetadataEvent | None, ...]

    @property
    def complete(self) -> bool:
        """Every task sent its last batch (Hudi's ``allEventsReceived``); eager-flush events alone
        fill a slot but do not complete it."""
        return all(e is not None and e.last_batch for e in self.events)

    @property
    def is_empty(self) -> bool:
        """No task sent anything yet (Hudi's ``isEmptyDataWriteBuffer``): nothing to commit."""
        return all(e is None for e in self.events)

    @property
    def has_events(self) -> bool:
        """Some task sent an event, if only an empty last batch (Hudi's ``EventBuffers.nonEmpty``
        for one buffer): what the blocking-mode commit guard waits on."""
        return not self.is_empty

    @property
    def all_bootstrap(self) -> bool:
        """Every slot holds a re-sent event: the restored instant can be recommitted at once
        (Hudi 1.1 ``handleBootstrapEvent``; latest ``allBootstrapEventsReceived``)."""
        return all(e is not None and e.bootstrap for e in self.events)

    @property
    def has_bootstrap(self) -> bool:
        """Some slot holds a re-sent event: a recommit is waiting (deferred)."""
        return any(e is not None and e.bootstrap for e in self.events)

    @property
    def last_batches_only(self) -> bool:
        """Every slot is empty or a last batch: what Hudi 1.1's ``getAllCompletedEvents`` keeps in
        the coordinator's checkpoint, all-empty buffers included (apache/hudi#19215)."""
        return all(e is None or e.last_batch for e in self.events)

    @property
    def write_stats(self) -> tuple[WriteStat, ...]:
        return tuple(s for e in self.events if e is not None for s in e.write_stats)

    @property
    def records(self) -> int:
        return sum(e.records for e in self.events if e is not None)

    @property
    def error_records(self) -> int:
        """Records the tasks failed to write into this instant (Hudi's ``totalErrorRecords``)."""
        return sum(e.error_records for e in self.events if e is not None)

    def with_event(self, event: WriteMetadataEvent) -> EventBuffer:
        """Put ``event`` in its task's slot (Hudi's ``addEvent``): merged with an event of the
        same instant already there, otherwise replacing it."""
        self._check_slot(event.task_id)
        slots = list(self.events)
        prior = slots[event.task_id]
        if event.instant is None:  # the task had nothing: an empty event for this instant
            event = replace(event, instant=self.instant)
        same = prior is not None and prior.instant == event.instant
        slots[event.task_id] = prior.merge(event) if same and prior is not None else event
        return replace(self, events=tuple(slots))

    def with_bootstrap(self, event: WriteMetadataEvent) -> EventBuffer:
        """Store a re-sent event in its task's slot, overwriting (Hudi's ``addBootstrapEvent``)."""
        self._check_slot(event.task_id)
        slots = list(self.events)
        slots[event.task_id] = replace(event, instant=self.instant, bootstrap=True)
        return replace(self, events=tuple(slots))

    def without_task(self, task_id: int) -> EventBuffer:
        """Clear ``task_id``'s slot (if the buffer has one)."""
        if task_id >= len(self.events):
            return self
        slots = list(self.events)
        slots[task_id] = None
        return replace(self, events=tuple(slots))

    def _check_slot(self, task_id: int) -> None:
        if not 0 <= task_id < len(self.events):
            raise EventBufferError(
                f"task {task_id} has no slot in the buffer of checkpoint {self.checkpoint_id} "
                f"(instant {self.instant}, {len(self.events)} slots)"
            )


class EventBuffers:
    """Checkpoint id -> :class:`EventBuffer`, iterated in checkpoint order (Hudi's sorted map)."""

    def __init__(self) -> None:
        self._buffers: dict[int, EventBuffer] = {}
        self.on_reset: Callable[[], None] | None = None
        """Blocking mode's ``CommitGuard.unblock``: signalled at every reset."""

    def __contains__(self, checkpoint_id: object) -> bool:
        return checkpoint_id in self._buffers

    def __len__(self) -> int:
        return len(self._buffers)

    def __getitem__(self, checkpoint_id: int) -> EventBuffer:
        return self._buffers[checkpoint_id]

    def get(self, checkpoint_id: int) -> EventBuffer | None:
        return self._buffers.get(checkpoint_id)

    def put(self, buffer: EventBuffer) -> None:
        """Add or replace the buffer of its checkpoint id."""
        self._buffers[buffer.checkpoint_id] = buffer

    def reset(self, checkpoint_id: int) -> None:
        """Drop the buffer of ``checkpoint_id`` and signal the commit guard (Hudi's
        ``EventBuffers.reset``)."""
        self._buffers.pop(checkpoint_id, None)
        if self.on_reset is not None:
            self.on_reset()

    def clear(self) -> None:
        self._buffers.clear()

    def values(self) -> list[EventBuffer]:
        """The buffers in checkpoint order."""
        return [self._buffers[k] for k in sorted(self._buffers)]

    def checkpoint_ids(self) -> list[int]:
        return sorted(self._buffers)

    def pending_write_file_ids(self, partition: str) -> list[str]:
        """The file ids the buffered events wrote in ``partition``, sorted (Hudi master's
        ``EventBuffers#getPendingWriteFileIds``, which bucket-index writers adopt on bootstrap)."""
        return sorted(
            {
                stat.file_id
                for buffer in self._buffers.values()
                for event in buffer.events
                if event is not None
                for stat in event.write_stats
                if stat.partition_path == partition
            }
        )

    def by_instant(self, instant: str) -> EventBuffer | None:
        """The buffer of ``instant`` (the lowest checkpoint id if several)."""
        for buffer in self.values():
            if buffer.instant == instant:
                return buffer
        return None

    def add_bootstrap(self, event: WriteMetadataEvent, parallelism: int) -> EventBuffer:
        """File a re-sent event under its checkpoint id, creating the buffer with ``parallelism``
        slots and the event's instant if absent (an existing buffer keeps its instant)."""
        if event.instant is None:
            raise EventBufferError(f"bootstrap event of task {event.task_id} without an instant")
        buffer = self._buffers.get(event.checkpoint_id)
        if buffer is None:
            buffer = EventBuffer(event.checkpoint_id, event.instant, (None,) * parallelism)
        buffer = buffer.with_bootstrap(event)
        self._buffers[event.checkpoint_id] = buffer
        return buffer

    def clean_legacy_events(self, bootstrap: BootstrapEvent) -> None:
        """An empty bootstrap: clear the task's slots in every buffer with a checkpoint id at or
        after the one it restored (its data there is replayed by the source)."""
        for key in sorted(self._buffers):
            if key >= bootstrap.checkpoint_id:
                self._buffers[key] = self._buffers[key].without_task(bootstrap.task_id)


@dataclass(frozen=True)
class CoordinatorState:
    """What Flink stores for the coordinator at checkpoint ``checkpoint_id``."""

    checkpoint_id: int
    buffers: tuple[EventBuffer, ...] = ()
