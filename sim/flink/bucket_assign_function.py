"""The Flink state index's bucket-assigner operator in the simulator: Hudi's
``BucketAssignFunction`` in its subtasks, between the source and the write tasks.

Hudi's pipeline for a non-bucket index (``Pipelines#hoodieStreamWrite``) is ``keyBy(recordKey)``
-> ``bucket_assigner`` (parallelism ``write.bucket_assign.tasks``, by default ``write.tasks``) ->
``keyBy(fileId)`` -> the write tasks. Each subtask here is a :class:`BucketAssignTask`: the source
hands it the records whose key maps to it (:func:`route_by_record_key`), its
:class:`~models.flink.state_index.StateIndex` locates them, and it hands each write task the
records whose file id maps to that task. Records move without delay (the edges are local to the
simulated task managers), so at a checkpoint barrier, which the checkpoint coordinator injects at
one instant into every subtask, the assigner's keyed state covers exactly the records below the
checkpoint's source offset: :meth:`BucketAssignTask.inject_barrier` snapshots it into the job's
:class:`AssignerSnapshots`, from which a restart restores it. A completed checkpoint reaches the
assigner (``notifyCheckpointComplete`` -> ``BucketAssigner#reload``) when it completes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from models.flink.bucket_assigner import BucketAssigner
from models.flink.key_groups import operator_index, operator_indexes
from models.flink.state_index import Location, StateIndex, restore_locations
from models.flink.write_files import LOCATION_FILE_ID, split_rows
from models.flink.write_profile import TableWriteProfile
from models.format.records import RECORD_KEY_FIELD
from sim.flink.source import TaskInput


@dataclass
class AssignerSnapshots:
    """The assigner's keyed state per checkpoint, kept by the job across attempts (the state
    backend's share of Flink's checkpoints): every subtask's entries merged, by checkpoint id."""

    _by_checkpoint: dict[int, dict[str, Location]] = field(default_factory=dict)
    _written_ms: dict[int, dict[str, int]] = field(default_factory=dict)
    _instants: dict[int, str | None] = field(default_factory=dict)
    _instant_state: str | None = None
    """The bootstrap operator's ``instantState`` in the running attempt: the last non-null
    instant it snapshotted, or the one it restored."""
    state_keys: list[tuple[int, int]] = field(default_factory=list)
    """(checkpoint id, keys in the index state) of each completed checkpoint: the size of the
    keyed state a restore from it loads."""

    def take(
        self,
        checkpoint_id: int,
        locations: dict[str, Location],
        bootstrap_instant: str | None = None,
        written_ms: dict[str, int] | None = None,
    ) -> None:
        """One subtask's keyed state at the barrier of ``checkpoint_id`` (with its entries'
        TTL timestamps), and the index bootstrap's operator state, ``lastInstantTime``:
        ``BootstrapOperator#snapshotState`` updates ``instantState`` with
        ``bootstrap_instant`` (the table's last completed instant) only when there is one
        (``null != lastInstantTime``, HUDI-6812), so a barrier without one keeps the instant
        saved before."""
        self._by_checkpoint.setdefault(checkpoint_id, {}).update(locations)
        self._written_ms.setdefault(checkpoint_id, {}).update(written_ms or {})
        if bootstrap_instant is not None:
            self._instant_state = bootstrap_instant
        self._instants[checkpoint_id] = self._instant_state

    def restore(self, checkpoint_id: int | None) -> None:
        """A new attempt's operator state: ``instantState`` as ``checkpoint_id`` holds it
        (empty when nothing is restored: ``initializeState`` without ``isRestored``)."""
        self._instant_state = self.instant_state(checkpoint_id)

    def completed(self, checkpoint_id: int) -> None:
        """Checkpoint ``checkpoint_id`` completed: older snapshots are not restored any more."""
        self.state_keys.append((checkpoint_id, len(self._by_checkpoint.get(checkpoint_id, {}))))
        for old in [c for c in self._by_checkpoint if c < checkpoint_id]:
            del self._by_checkpoint[old]
            self._written_ms.pop(old, None)
            self._instants.pop(old, None)

    def instant_state(self, checkpoint_id: int | None) -> str | None:
        """The bootstrap's ``instantState`` checkpoint ``checkpoint_id`` holds (None: empty,
        or a start without state)."""
        return None if checkpoint_id is None else self._instants.get(checkpoint_id)

    def restored(self, checkpoint_id: int | None) -> dict[str, Location]:
        """The state of completed checkpoint ``checkpoint_id`` (None: a start without state)."""
        if checkpoint_id is None:
            return {}
        return self._by_checkpoint.get(checkpoint_id, {})

    def restored_written_ms(self, checkpoint_id: int | None) -> dict[str, int]:
        """The TTL timestamps of :meth:`restored`'s entries."""
        return {} if checkpoint_id is None else self._written_ms.get(checkpoint_id, {})


@dataclass(frozen=True)
class AssignerOptions:
    """What every assigner subtask of a job is built with: the write ``profile``, Flink's max
    parallelism, a file-id source per subtask, the index state TTL (0: none) with the task
    managers' processing time, the instant the index bootstrap's state takes at a barrier, when
    the index bootstrap is done (``ready_at_ms``: records wait until then), when an entry is
    written (``refresh``), and whether a moved key's old copy is deleted (``global_index``)."""

    profile: TableWriteProfile
    max_parallelism: int
    mint_uuid: Callable[[int], Callable[[], str]]
    ttl_ms: int = 0
    clock_ms: Callable[[], int] = lambda: 0
    bootstrap_instant: Callable[[], str | None] = lambda: None
    ready_at_ms: int = 0
    refresh: str = "every_record"
    """When an index entry is written (``[protocol] index_state_refresh``)."""
    global_index: bool = False
    """A moved key's old copy is deleted (``index.global.enabled`` for keys that move)."""


class BucketAssignTask:
    """One assigner subtask: a :class:`~sim.flink.source.TaskInput` for the source."""

    def __init__(
        self,
        index: StateIndex,
        writers: Sequence[TaskInput],
        snapshots: AssignerSnapshots,
        *,
        max_parallelism: int,
        clock_ms: Callable[[], int] = lambda: 0,
        bootstrap_instant: Callable[[], str | None] = lambda: None,
        ready_at_ms: int = 0,
    ) -> None:
        self.index = index
        self.ready_at_ms = ready_at_ms
        self.writers = tuple(writers)
        self.snapshots = snapshots
        self.max_parallelism = max_parallelism
        self.clock_ms = clock_ms
        self.bootstrap_instant = bootstrap_instant
        self._writer_of: dict[str, int] = {}

    def receive(self, rows: pa.Table) -> None:
        """Locate ``rows`` and hand each write task the records of the file groups it owns."""
        if rows.num_rows == 0:
            return
        located = self.index.assign(rows, self.clock_ms())
        owners = np.array(
            [self._writer(f) for f in located.column(LOCATION_FILE_ID).to_pylist()], np.int64
        )
        for writer, part in zip(
            self.writers, split_rows(located, owners, len(self.writers)), strict=True
        ):
            if part.num_rows:
                writer.receive(part)

    def _writer(self, file_id: str) -> int:
        """``keyBy(fileId)``: the write task a file id's key group maps to."""
        if file_id not in self._writer_of:
            self._writer_of[file_id] = operator_index(
                file_id, self.max_parallelism, len(self.writers)
            )
        return self._writer_of[file_id]

    @property
    def backpressured(self) -> bool:
        """Flink's backpressure: a write task that pushes back stalls the assigner's input, and
        so does the index bootstrap before it is done (``BootstrapOperator`` loads the index in
        ``initializeState`` and ``waitForBootstrapReady`` holds every subtask until all are)."""
        if self.clock_ms() < self.ready_at_ms:
            return True
        return any(w.backpressured for w in self.writers)

    def inject_barrier(self, checkpoint_id: int) -> None:
        """The barrier: ``snapshotState`` of the keyed state (and the bucket map reset), with
        the instant the bootstrap operator's state takes (:meth:`AssignerSnapshots.take`)."""
        index = self.index
        self.snapshots.take(
            checkpoint_id, index.snapshot(), self.bootstrap_instant(), dict(index.written_ms)
        )

    def checkpoint_complete(self, checkpoint_id: int) -> None:
        """``notifyCheckpointComplete``: the assigner reloads its small files and profile."""
        self.index.assigner.reload(checkpoint_id)


def route_by_record_key(max_parallelism: int) -> Callable[[pa.Table, int], list[pa.Table]]:
    """``keyBy(recordKey)`` in front of the assigner subtasks."""

    def route(rows: pa.Table, parallelism: int) -> list[pa.Table]:
        owners = operator_indexes(rows.column(RECORD_KEY_FIELD), max_parallelism, parallelism)
        return split_rows(rows, owners, parallelism)

    return route


def assigner_tasks(
    writers: Sequence[TaskInput],
    snapshots: AssignerSnapshots,
    restored_checkpoint: int | None,
    options: AssignerOptions,
    bootstrapped: Mapping[str, Location] | None = None,
) -> list[BucketAssignTask]:
    """One assigner subtask per write task (``write.bucket_assign.tasks`` = ``write.tasks``),
    each with its share of the restored keyed state, overwritten by its share of the index
    bootstrap's ``bootstrapped`` locations (:mod:`models.flink.index_bootstrap`), and a new
    assigner over the profile (both sized by the same ``write.parquet.max.file.size``,
    ``HoodieWriteConfig#getParquetMaxFileSize``)."""
    snapshots.restore(restored_checkpoint)
    restored = snapshots.restored(restored_checkpoint)
    written = snapshots.restored_written_ms(restored_checkpoint)
    parallelism, most = len(writers), options.max_parallelism
    tasks = []
    for task_id in range(parallelism):
        share = restore_locations(restored, task_id, most, parallelism)
        index = StateIndex(
            BucketAssigner(
                task_id,
                parallelism,
                options.profile,
                options.mint_uuid(task_id),
                most,
                max_file_size_bytes=options.profile.max_file_size_bytes,
            ),
            share,
            options.ttl_ms,
            {key: written[key] for key in share if key in written},
            options.refresh,
            options.global_index,
        )
        index.load(
            restore_locations(bootstrapped or {}, task_id, most, parallelism), options.clock_ms()
        )
        tasks.append(
            BucketAssignTask(
                index,
                writers,
                snapshots,
                max_parallelism=most,
                clock_ms=options.clock_ms,
                bootstrap_instant=options.bootstrap_instant,
                ready_at_ms=options.ready_at_ms,
            )
        )
    return tasks


__all__ = [
    "AssignerOptions",
    "AssignerSnapshots",
    "BucketAssignTask",
    "assigner_tasks",
    "route_by_record_key",
]
