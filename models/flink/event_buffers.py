"""Event buffers of the write coordinator: the write metadata of each instant, per task slot.

Follows Hudi 1.1's ``EventBuffers`` (``hudi-flink`` ``sink``): one buffer per checkpoint id, one
slot per write task. A buffer is *complete* when every task sent its last batch
(``allEventsReceived``) and *empty* when no task sent anything (``isEmptyDataWriteBuffer``);
:class:`CoordinatorState` is what Flink stores for the coordinator at a checkpoint
(``checkpointCoordinator``). The rules that use them are in :mod:`models.flink.coordinator`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from models.flink.write_events import WriteMetadataEvent
from models.format.commit_metadata import WriteStat


@dataclass(frozen=True)
class EventBuffer:
    """The write metadata of one instant, one slot per task (None: nothing received yet)."""

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
    def write_stats(self) -> tuple[WriteStat, ...]:
        return tuple(s for e in self.events if e is not None for s in e.write_stats)

    @property
    def records(self) -> int:
        return sum(e.records for e in self.events if e is not None)

    def with_event(self, event: WriteMetadataEvent) -> EventBuffer:
        """Put ``event`` in its task's slot, merging with an earlier event of the same task."""
        slots = list(self.events)
        prior = slots[event.task_id]
        if event.instant is None:  # the task had nothing: an empty event for this instant
            event = replace(event, instant=self.instant)
        slots[event.task_id] = event if prior is None else prior.merge(event)
        return replace(self, events=tuple(slots))


@dataclass(frozen=True)
class CoordinatorState:
    """What Flink stores for the coordinator at checkpoint ``checkpoint_id``."""

    checkpoint_id: int
    buffers: tuple[EventBuffer, ...] = ()
