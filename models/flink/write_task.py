"""A Flink write task (Hudi's ``StreamWriteFunction``) as a pure state machine, plus its file I/O.

The task buffers records per bucket (Arrow batches, never per-record objects;
:mod:`models.flink.write_buffer`), flushes a bucket that outgrows ``write.batch.size`` or the
largest one when its memory pool runs out (an eager flush, one bucket) and every bucket when a
checkpoint starts, and before each flush asks the coordinator for an instant, sending the **last
checkpoint id it has snapshotted** (-1 before the first; the restored id after a restore).
docs/protocol.md section 6: data flushed while snapshotting checkpoint ``n`` carries ``n - 1``
and is committed by the notification for ``n``; an eager flush between ``n`` and ``n + 1``
carries ``n`` as well.

State (what Flink persists for the task at checkpoint ``i``): the write-metadata events the task
sent for the data that checkpoint ``i`` covers, i.e. every event carrying ``i - 1``. The order is
Hudi's: flush and send, then replace the state with those events. What a restarted task sends
depends on its Flink attempt number (Hudi 1.1 ``AbstractStreamWriteFunction#initializeState`` /
``sendBootstrapEvent``): started afresh (attempt 0: a new job graph, a JobManager failover, a
rescale) it re-sends the restored events whose instants are still pending, so a commit lost with
the failure is redone by the coordinator; restarted by Flink (attempt > 0) it sends an empty
bootstrap with its restored checkpoint id, because the coordinator kept its events. The restored
checkpoint id becomes the task's checkpoint id always (``restored_checkpoint_id = "always"``,
apache/hudi#19952) or only at attempt > 0 of the job that took the snapshot (Hudi 1.1's
``initCheckpointId`` and ``job-id-state``: after a JobManager failover or a rescale the task asks
for instants under -1, and after a rescale it keeps doing so at every attempt until a checkpoint
of the new job completes, apache/hudi#19922). A task at attempt > 0 never re-sends its restored events
(``restored_events_resend = "attempt_0"``, Hudi 1.1 and later), which loses them when the
coordinator never received them: a task failing right after a JobManager failover, before its
attempt-0 bootstrap reached the new coordinator (docs/protocol.md section 6.3); Hudi 1.0 re-sent
them at every attempt (``"every_attempt"``). The variant ``persist_write_meta = false`` drops the
events, which reproduces HUDI-9570's data loss (fixed upstream by keeping the write metadata in
the coordinator's checkpoint, apache/hudi PR #13543; docs/protocol.md section 6.6).

The I/O half of a flush is :mod:`models.flink.write_files`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from models.flink.precombine import precombine
from models.flink.write_buffer import BufferOptions, WriteBuffer, binary_row_sizes_bytes
from models.flink.write_events import BootstrapEvent, WriteMetadataEvent
from models.flink.write_files import (
    LOCATION_COLUMNS,
    LOCATION_FILE_ID,
    LOCATION_INSTANT,
    partition_indexes,
)
from models.format.records import RECORD_KEY_FIELD, bucket_ids


@dataclass(frozen=True)
class TaskState:
    """What Flink stores for one write task at a checkpoint."""

    task_id: int
    checkpoint_id: int
    events: tuple[WriteMetadataEvent, ...] = ()
    job_id: int = 0
    """The Flink job that took the snapshot (Hudi 1.1's ``job-id-state``)."""


@dataclass
class WriteTask:
    """One write task's buffer and protocol state (no I/O, no time)."""

    task_id: int
    buffer_records: int = 0
    """Not Hudi's: a cap on the buffered records (0: none), for older scenario files; reaching
    it flushes the largest bucket as an exhausted memory pool does."""
    operation: str = "upsert"
    merge_mode: str = "EVENT_TIME_ORDERING"
    persist_write_meta: bool = True
    restored_checkpoint_id: str = "always"
    restored_events_resend: str = "attempt_0"
    job_id: int = 0
    pre_combine: bool = True
    """De-duplicate an upsert flush by key (Hudi's ``write.precombine``, which Hudi's SQL sink
    turns on for COPY_ON_WRITE upserts, ``HoodieTableFactory#setupWriteOptions``; the model's
    jobs keep it on for every upsert: a MERGE_ON_READ reader merges duplicates either way)."""
    buffer_options: BufferOptions = field(default_factory=BufferOptions)
    """``write.batch.size``, ``write.task.max.size`` and the pool's page size."""
    buckets_per_partition: int = 1
    """The bucket index's buckets per partition: an upsert's bucket is its file group."""
    record_payload_bytes: int = 0
    """Bytes each record carries besides the modelled columns (its buffer size only)."""
    last_checkpoint_id: int = -1
    _buffer: WriteBuffer = field(init=False)
    _interval_events: list[WriteMetadataEvent] = field(default_factory=list)
    _file_codes: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._buffer = self._new_buffer()

    def _new_buffer(self) -> WriteBuffer:
        return WriteBuffer(replace(self.buffer_options, max_records=self.buffer_records))

    @property
    def buffered_rows(self) -> int:
        return self._buffer.records

    def bucket_records(self) -> dict[tuple[int, int], int]:
        """Buffered records per bucket, (partition index, bucket) (Hudi's ``getDataBuffer``)."""
        return {
            divmod(key, self.buckets_per_partition): records
            for key, records in self._buffer.bucket_records().items()
        }

    def add(self, batch: pa.Table) -> list[pa.Table]:
        """Buffer ``batch``; return the records of each bucket it made the task flush eagerly
        (Hudi's ``bufferRecord``), pre-combined, in flush order."""
        if batch.num_rows == 0:
            return []
        flushed = self._buffer.add(
            batch,
            self._bucket_keys(batch),
            binary_row_sizes_bytes(record_columns(batch), self.record_payload_bytes),
        )
        return [self._combined(with_bucket_tag(rows)) for rows in flushed]

    def take_buffer(self) -> pa.Table | None:
        """Empty the buffer and return its records (``flushRemaining``: every bucket, in
        creation order), pre-combined per bucket."""
        buckets = self._buffer.take_all()
        if not buckets:
            return None
        combined = [self._combined(with_bucket_tag(rows)) for rows in buckets]
        return pa.concat_tables(combined).combine_chunks()

    def _combined(self, rows: pa.Table) -> pa.Table:
        """One version per key for upsert (``write.precombine``): the greatest ordering value,
        or the last one under commit-time ordering."""
        rows = rows.combine_chunks()
        if self.operation == "upsert" and self.pre_combine:
            rows = precombine(rows, self.merge_mode)
        return rows

    def _bucket_keys(self, batch: pa.Table) -> np.ndarray:
        """A bucket per file group: the file id the state index chose, numbered in order of
        first sight; ``partition * buckets + bucket`` for upsert under the bucket index; the
        partition for insert (append mode writes a file group per partition)."""
        if LOCATION_FILE_ID in batch.column_names:
            file_ids = batch.column(LOCATION_FILE_ID)
            distinct = pc.unique(file_ids).to_pylist()
            codes = np.array(
                [self._file_codes.setdefault(f, len(self._file_codes)) for f in distinct]
            )
            return codes[pc.index_in(file_ids, pa.array(distinct)).to_numpy(zero_copy_only=False)]
        parts = partition_indexes(batch).astype(np.int64)
        if self.operation != "upsert":
            return parts * self.buckets_per_partition
        keys = bucket_ids(batch.column(RECORD_KEY_FIELD), self.buckets_per_partition)
        return parts * self.buckets_per_partition + keys

    def event_sent(self, event: WriteMetadataEvent) -> None:
        """Remember an event for the state of the next checkpoint."""
        self._interval_events.append(event)

    def snapshot_state(self, checkpoint_id: int) -> TaskState:
        """``snapshotState(checkpoint_id)`` after the last-batch flush was sent: the state holds
        this interval's events, merged per instant (an empty last batch, sent without an instant,
        joins the interval's instant, or stays alone); later flushes carry ``checkpoint_id``."""
        merged: dict[str | None, WriteMetadataEvent] = {}
        for event in self._interval_events:
            prior = merged.get(event.instant)
            merged[event.instant] = event if prior is None else prior.merge(event)
        empty = merged.pop(None, None)
        if empty is not None and merged:
            last = list(merged)[-1]
            merged[last] = replace(
                merged[last], last_batch=merged[last].last_batch or empty.last_batch
            )
        elif empty is not None:
            merged[None] = empty
        self._interval_events = []
        self.last_checkpoint_id = checkpoint_id
        events = tuple(merged.values()) if self.persist_write_meta else ()
        return TaskState(self.task_id, checkpoint_id, events, self.job_id)

    def restore(
        self, state: TaskState | None, *, attempt: int, pending: Callable[[str], bool]
    ) -> BootstrapEvent | None:
        """Restart from ``state`` (None: no completed checkpoint) as Flink attempt ``attempt`` and
        return the bootstrap event to send (None: nothing); the buffer is empty, the source
        replays from the checkpoint's offset. ``pending(instant)`` tells an instant not completed
        on the timeline."""
        self._buffer, self._interval_events = self._new_buffer(), []
        self.last_checkpoint_id = -1
        same_job = state is not None and state.job_id == self.job_id
        if state is not None and (
            self.restored_checkpoint_id == "always" or (attempt > 0 and same_job)
        ):
            self.last_checkpoint_id = state.checkpoint_id
        resent = ()
        if state is not None and (attempt == 0 or self.restored_events_resend == "every_attempt"):
            resent = tuple(
                replace(e, task_id=self.task_id, last_batch=False, bootstrap=True)
                for e in state.events
                if e.instant is None or pending(e.instant)
            )
        if attempt > 0:
            return BootstrapEvent(self.task_id, self.last_checkpoint_id, resent, clears=True)
        assert state is not None or not resent
        return (
            BootstrapEvent(self.task_id, state.checkpoint_id, resent) if state and resent else None
        )


def record_columns(batch: pa.Table) -> pa.Table:
    """The record's own columns: its location travels beside the row (``HoodieFlinkInternalRow``),
    not in the buffered ``BinaryRowData``."""
    located = [c for c in LOCATION_COLUMNS if c in batch.column_names]
    return batch.drop_columns(located) if located else batch


def with_bucket_tag(rows: pa.Table) -> pa.Table:
    """One bucket's rows, each tagged as its first row is: the bucket's ``BucketInfo``, fixed
    when the bucket was created (``RowDataBucket``, Hudi 1.1), whatever pre-combining keeps."""
    if LOCATION_INSTANT not in rows.column_names or rows.num_rows == 0:
        return rows
    index = rows.column_names.index(LOCATION_INSTANT)
    first = rows.column(index)[0].as_py()
    tags = pa.repeat(pa.scalar(first, pa.string()), rows.num_rows)
    return rows.set_column(index, LOCATION_INSTANT, tags)


def redistribute(states: tuple[TaskState, ...], parallelism: int) -> tuple[TaskState, ...]:
    """The write tasks' states after a rescale to ``parallelism`` tasks: Flink's split
    redistribution of operator list state (``RoundRobinOperatorStateRepartitioner``): every
    entry of the old tasks in task order, cut into ``parallelism`` contiguous parts, the first
    ``entries % parallelism`` parts one longer. The write-metadata state is Hudi's
    ``write-metadata-state`` list; a new task that gets no entry is still restored."""
    entries = [event for state in states for event in state.events]
    checkpoint_id = states[0].checkpoint_id if states else -1
    job_id = states[0].job_id if states else 0
    base, extra = divmod(len(entries), parallelism)
    out, start = [], 0
    for task_id in range(parallelism):
        size = base + (1 if task_id < extra else 0)
        out.append(TaskState(task_id, checkpoint_id, tuple(entries[start : start + size]), job_id))
        start += size
    return tuple(out)
