"""A write task's bucket index in the simulator: when the task's records for a partition first
arrive, the partition's file ids are loaded from what the task can see then (Hudi's
``BucketStreamWriteFunction#processElement`` -> ``bootstrapIndexIfNeed``): the committed latest
file slices, and, when the modelled release adopts them (``[protocol] pending_file_ids``), the
file ids the coordinator holds in pending event buffers.

The coordinator's pending file ids include what this task re-sent in its bootstrap event: it goes
out on the task's gateway before any record is processed, so the coordinator has filed it before
it answers the task's query (Hudi's ``TestBucketStreamWriteRecommitRace`` takes that order).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from models.flink.bucket_index import BucketIndex
from models.flink.write_events import BootstrapEvent
from models.format.arrow_strings import decimal_suffixes
from models.format.records import PARTITION_FIELD
from models.format.records import partition_path as partition_path_of
from models.view.fsview import latest_file_slices
from models.view.table import HudiTable, ViewOptions
from sim.rng import Rng

FileIds = Callable[[str], list[str]]
"""Partition path -> file ids."""
OwnsBucket = Callable[[int, int], bool]


@dataclass
class TaskBucketIndex:
    """``index`` loaded on demand from ``committed`` and ``pending`` (None: the release ignores
    pending file ids), plus what the task re-sent in its bootstrap (:meth:`resent`)."""

    index: BucketIndex
    committed: FileIds
    pending: FileIds | None
    _resent: frozenset[tuple[str, str]] = frozenset()

    def resent(self, event: BootstrapEvent | None) -> None:
        """The bootstrap event the task sent: its file ids are pending at the coordinator."""
        if event is not None:
            self._resent = frozenset(
                (s.partition_path, s.file_id) for e in event.events for s in e.write_stats
            )

    def _pending(self, partition: str) -> list[str]:
        if self.pending is None:
            return []
        own = [f for p, f in self._resent if p == partition]
        return sorted({*self.pending(partition), *own})

    def on_records(self, rows: pa.Table) -> None:
        """Load every partition of ``rows`` not loaded yet (raises
        :class:`models.flink.bucket_index.DuplicateFileIdError` as Hudi's bootstrap does)."""
        if rows.num_rows == 0:
            return
        for p in np.unique(decimal_suffixes(rows.column(PARTITION_FIELD), 1)).tolist():
            partition = partition_path_of(f"p{p}")
            if not self.index.is_loaded(partition):
                self.index.bootstrap(
                    partition, int(p), self.committed(partition), self._pending(partition)
                )


def uuid_source(rng: Rng) -> Callable[[], str]:
    """Random version-4 UUIDs drawn from ``rng`` (a run's seeded stream, never the wall clock)."""

    def mint() -> str:
        digits = "".join(f"{rng.randint(0, 0xFFFF):04x}" for _ in range(8))
        variant = "89ab"[int(digits[16], 16) % 4]
        return (
            f"{digits[:8]}-{digits[8:12]}-4{digits[13:16]}-{variant}{digits[17:20]}-{digits[20:]}"
        )

    return mint


def owned_buckets(buckets_per_partition: int, parallelism: int, task_id: int) -> OwnsBucket:
    """Which (partition index, bucket) a task writes: the routing of
    :func:`models.flink.write_files.route` (Hudi's ``BucketIndexPartitioner`` and
    ``isBucketToLoad``)."""

    def owns(partition_index: int, bucket: int) -> bool:
        return (partition_index * buckets_per_partition + bucket) % parallelism == task_id

    return owns


def committed_file_ids(table: HudiTable, options: ViewOptions | None) -> FileIds:
    """The file ids of a partition's committed latest slices (``getHoodieView().
    getLatestFileSlices``)."""

    def file_ids(partition: str) -> list[str]:
        slices = latest_file_slices(table.file_groups(options=options)[1])
        return sorted({s.file_id for s in slices if s.partition == partition})

    return file_ids


def task_bucket_index(
    table: HudiTable,
    view_options: ViewOptions | None,
    owns: OwnsBucket,
    *,
    nbcc: bool,
    rng: Rng,
    pending: FileIds | None,
) -> TaskBucketIndex:
    """A write task's bucket index: NBCC's fixed ids or minted ones, the committed view of
    ``table``, and ``pending`` (the job's coordinator; None when the modelled release ignores
    pending file ids)."""
    return TaskBucketIndex(
        BucketIndex(nbcc=nbcc, owns=owns, mint_uuid=uuid_source(rng)),
        committed=committed_file_ids(table, view_options),
        pending=pending,
    )


__all__ = [
    "FileIds",
    "TaskBucketIndex",
    "committed_file_ids",
    "owned_buckets",
    "task_bucket_index",
    "uuid_source",
]
