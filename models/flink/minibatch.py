"""Restore of the ``minibatch`` coordinator mode (docs/protocol.md section 6.5).

Minibatch is the testbed's own mode, not Hudi's: one instant that the tasks keep writing into
across checkpoints, so the instant's events carry several checkpoint ids and cannot be filed per
checkpoint as :class:`models.flink.event_buffers.EventBuffers` does. Its restore therefore waits
for one bootstrap event from every task and then re-commits, per instant, the restored buffer
together with the events the tasks re-sent (every restart path re-sends in this mode).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from models.flink.event_buffers import CoordinatorState, EventBuffer
from models.flink.write_events import BootstrapEvent


class MinibatchRestore:
    """The bootstrap round after a restore of a minibatch coordinator."""

    def __init__(self, parallelism: int) -> None:
        self.parallelism = parallelism
        self.restored_checkpoint: int | None = None
        self._bootstraps: dict[int, BootstrapEvent] = {}
        self._open: dict[str, EventBuffer] = {}

    @property
    def active(self) -> bool:
        """Restored, and some task's bootstrap event has not arrived yet."""
        return self.restored_checkpoint is not None

    def begin(self, state: CoordinatorState | None, pending: list[EventBuffer]) -> None:
        """A restore from ``state``: ``pending`` are its buffers whose instants are not
        completed (still open: the tasks re-send their later events)."""
        self.restored_checkpoint = -1 if state is None else state.checkpoint_id
        self._bootstraps.clear()
        self._open = {b.instant: b for b in pending}

    def add(
        self, event: BootstrapEvent, is_completed: Callable[[str], bool]
    ) -> list[EventBuffer] | None:
        """Collect ``event``; once every task's is in, the buffers to re-commit in checkpoint
        order (None before). ``is_completed(instant)`` tells an instant already committed."""
        self._bootstraps[event.task_id] = event
        if len(self._bootstraps) < self.parallelism:
            return None
        by_instant = dict(self._open)
        for task_id in sorted(self._bootstraps):
            for resent in self._bootstraps[task_id].events:
                if resent.instant is None or is_completed(resent.instant):
                    continue
                buffer = by_instant.get(resent.instant) or EventBuffer(
                    resent.checkpoint_id, resent.instant, (None,) * self.parallelism
                )
                prior = buffer.events[resent.task_id]
                if prior is not None:  # restored too: keep only the files it lacks
                    known = {s.path for s in prior.write_stats}
                    new = tuple(s for s in resent.write_stats if s.path not in known)
                    resent = replace(resent, write_stats=new, records=resent.records if new else 0)
                by_instant[resent.instant] = buffer.with_event(replace(resent, bootstrap=False))
        self._bootstraps.clear()
        self._open.clear()
        self.restored_checkpoint = None
        return sorted(by_instant.values(), key=lambda b: (b.checkpoint_id, b.instant))
