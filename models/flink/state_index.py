"""The Flink state index: one ``BucketAssignFunction`` subtask's keyed state and its assigner.

Hudi's ``BucketAssignFunction#processElement`` (``sink/partitioner``) keeps, per record key, the
location of the file group that holds it (``HoodieRecordGlobalLocation``: partition path and
file id) in Flink keyed state (``index.type = FLINK_STATE``, the default of Flink upserts):

- a key it knows in the same partition is an UPDATE of that file group (``addUpdate``);
- any other key takes the insert path (``addInsert``: a small file, the partition's new file, or a
  new file id; :mod:`models.flink.bucket_assigner`), and the state takes the new location.

A key whose record names another partition (a source with a partition period) is, under the
global index (``index.global.enabled``, :attr:`StateIndex.global_index`), first deleted at its
old location (:func:`with_deletes`). The records leave with their location in
:data:`LOCATION_FILE_ID` (``HoodieRecord#setCurrentLocation``) and its tag in
:data:`LOCATION_INSTANT` (``"I"``: a new file group; ``"U"``: anything else), and the write tasks
are chosen by the file id (``keyBy(fileId)``).

Keyed state is what Flink checkpoints: :meth:`StateIndex.snapshot` at the barrier (which also
clears the assigner's bucket map, ``snapshotState`` -> ``BucketAssigner#reset``), restored by key
group after a failover or a rescale (:func:`restore_locations`); the assigner's own state is never
checkpointed and starts empty.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from models.flink.bucket_assigner import BucketAssigner, BucketType
from models.flink.key_groups import operator_indexes
from models.flink.write_buffer import ROW_KIND_COLUMN
from models.flink.write_files import INSERT_TAG, LOCATION_FILE_ID, LOCATION_INSTANT, UPDATE_TAG
from models.format.records import PARTITION_FIELD, RECORD_KEY_FIELD, partition_value
from models.format.records import partition_path as partition_path_of

Location = tuple[str, str]
"""(partition path, file id)."""
INDEX_STATE_REFRESH = ("every_record", "location_change")
"""``[protocol] index_state_refresh``: the index entry written for every record (Hudi 1.0, 1.1)
or only when the key's location changes (Hudi master); matters only with a state TTL."""


@dataclass
class StateIndex:
    """One assigner subtask: ``locations`` (its keyed state) and its ``assigner``.

    With a state TTL (``ttl_ms`` > 0, Hudi's ``index.state.ttl`` in days, 0: none; Flink's
    ``StateTtlConfig`` as ``StateTtlConfigUtil#createTtlConfig`` builds it: ``OnCreateAndWrite``,
    ``NeverReturnExpired``, processing time), ``written_ms`` holds each entry's last write: an
    entry not written for ``ttl_ms`` reads as absent (``TtlUtils#expired``: written + ttl <=
    now), so its key takes the insert path. A write refreshes the entry: ``processRecord``
    writes the state for every record ("always refresh the index", Hudi 1.0 and 1.1:
    ``refresh = "every_record"``), or only when the key's location changes
    (``"location_change"``: master's ``BucketAssignFunction#processRecord`` since early 2026,
    after apache/hudi#17867, read at 060bcfcd and, after #18759, 1bbaae90), so an entry updated
    in place expires ``ttl_ms`` after the key's last move."""

    assigner: BucketAssigner
    locations: dict[str, Location] = field(default_factory=dict)
    ttl_ms: int = 0
    written_ms: dict[str, int] = field(default_factory=dict)
    refresh: str = "every_record"
    """When ``processRecord`` writes a key's entry (:data:`INDEX_STATE_REFRESH`)."""
    global_index: bool = False
    """``index.global.enabled`` for a job whose keys change partition: a record naming another
    partition than its key's entry is preceded by a delete of the key at the entry's location
    (the record with ``RowKind.DELETE``, the old partition and file id, tag ``"U"``), and the
    record takes the insert path; the output then carries :data:`ROW_KIND_COLUMN`. Off, the
    record only takes the insert path (a non-global index, or keys that never move)."""

    def assign(self, rows: pa.Table, now_ms: int = 0) -> pa.Table:
        """``rows`` with the file id each record goes to (:data:`LOCATION_FILE_ID`) and its tag
        (:data:`LOCATION_INSTANT`: ``"I"`` for a new file group, ``"U"`` for a known key, a small
        file or a file reused after the barrier), in order, at processing time ``now_ms``."""
        if rows.num_rows == 0:
            empty = pa.array([], pa.string())
            return rows.append_column(LOCATION_FILE_ID, empty).append_column(
                LOCATION_INSTANT, empty
            )
        paths = _partition_paths(rows)
        file_ids, tags = [], []
        updated: set[Location] = set()
        locations, assigner, ttl, written = (
            self.locations,
            self.assigner,
            self.ttl_ms,
            self.written_ms,
        )
        every_record = self.refresh == "every_record"
        moved: list[tuple[int, Location]] = []
        keys = rows.column(RECORD_KEY_FIELD).to_pylist()
        for row, (key, path) in enumerate(zip(keys, paths, strict=True)):
            old = locations.get(key)
            if ttl:
                if old is not None and written.get(key, now_ms) + ttl <= now_ms:
                    old = None
                if every_record or old is None or old[0] != path:
                    written[key] = now_ms
            if old is not None and old[0] == path:
                if old not in updated:
                    assigner.add_update(path, old[1])
                    updated.add(old)
                file_ids.append(old[1])
                tags.append(UPDATE_TAG)
                continue
            if old is not None and self.global_index:
                moved.append((row, old))
            bucket = assigner.add_insert(path)
            locations[key] = (path, bucket.file_id)
            file_ids.append(bucket.file_id)
            tags.append(INSERT_TAG if bucket.bucket_type is BucketType.INSERT else UPDATE_TAG)
        located = rows.append_column(LOCATION_FILE_ID, pa.array(file_ids, pa.string()))
        located = located.append_column(LOCATION_INSTANT, pa.array(tags, pa.string()))
        return with_deletes(located, moved) if self.global_index else located

    def load(self, locations: Mapping[str, Location], now_ms: int) -> None:
        """Index records (the bootstrap's): each location written into the state at ``now_ms``."""
        self.locations.update(locations)
        if self.ttl_ms:
            self.written_ms.update(dict.fromkeys(locations, now_ms))

    def snapshot(self) -> dict[str, Location]:
        """``snapshotState``: a copy of the keyed state; the assigner's bucket map is reset."""
        self.assigner.reset()
        return dict(self.locations)


def with_deletes(located: pa.Table, moved: list[tuple[int, Location]]) -> pa.Table:
    """``located`` with :data:`ROW_KIND_COLUMN`, and before each row of ``moved`` a delete of its
    key at the old location (its partition value, file id, tag ``"U"``), as the global index's
    ``out.collect(deleteRecord)`` comes before the record's own."""
    n = located.num_rows
    out = located.append_column(ROW_KIND_COLUMN, pa.array(np.zeros(n, bool)))
    if not moved:
        return out
    rows = [row for row, _ in moved]
    deletes = located.take(pa.array(rows, pa.int64()))
    columns = {
        PARTITION_FIELD: pa.array([partition_value(old[0]) for _, old in moved]),
        LOCATION_FILE_ID: pa.array([old[1] for _, old in moved]),
        LOCATION_INSTANT: pa.array([UPDATE_TAG] * len(rows)),
    }
    for name, values in columns.items():
        index = deletes.column_names.index(name)
        target = deletes.schema.field(name)
        deletes = deletes.set_column(index, target, values.cast(target.type))
    deletes = deletes.append_column(ROW_KIND_COLUMN, pa.array(np.ones(len(rows), bool)))
    both = pa.concat_tables([out, deletes])
    rank = np.concatenate([2 * np.arange(n) + 1, 2 * np.array(rows)])
    return both.take(pa.array(np.argsort(rank, kind="stable")))


def _partition_paths(rows: pa.Table) -> list[str]:
    """The partition path of every row (computed once per distinct partition value)."""
    values = rows.column(PARTITION_FIELD)
    distinct = pc.unique(values)
    paths = [partition_path_of(v) for v in distinct.to_pylist()]
    index = pc.index_in(values, distinct).to_numpy(zero_copy_only=False)
    return [paths[i] for i in index.tolist()]


def restore_locations(
    snapshots: Mapping[str, Location], task_id: int, max_parallelism: int, parallelism: int
) -> dict[str, Location]:
    """The keyed state subtask ``task_id`` of ``parallelism`` gets from a checkpoint: the
    entries whose key group it owns (Flink's key-group redistribution, which a rescale keeps)."""
    if not snapshots:
        return {}
    keys = list(snapshots)
    owners = operator_indexes(pa.array(keys, pa.string()), max_parallelism, parallelism)
    return {keys[i]: snapshots[keys[i]] for i in np.flatnonzero(owners == task_id).tolist()}


__all__ = ["INDEX_STATE_REFRESH", "Location", "StateIndex", "restore_locations", "with_deletes"]
