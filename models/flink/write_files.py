"""The I/O half of a Flink write task's flush: records -> Hudi data files.

:func:`write_records` turns one precombined batch into Hudi data files through
:class:`models.write.writer.TableWriter`, in the file layout of the job's index: Flink's bucket
index (upsert: one file group per (partition, bucket), logs on MERGE_ON_READ, merged base files
on COPY_ON_WRITE), the Flink state index (upsert: the file group the bucket assigner chose for
each record, :data:`LOCATION_FILE_ID`), or append mode (insert: a new base file per partition and
flush). :func:`route` is the shuffle in front of the write tasks under the bucket index.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from models.flink.bucket_index import BucketIndex
from models.flink.write_buffer import ROW_KIND_COLUMN
from models.format.arrow_strings import decimal_suffixes
from models.format.commit_metadata import WriteStat
from models.format.records import ORDERING_FIELD, PARTITION_FIELD, RECORD_KEY_FIELD, bucket_ids
from models.format.records import partition_path as partition_path_of
from models.timeline.instant import Instant
from models.write.writer import TableWriter

LOCATION_FILE_ID = "_location_file_id"
"""The file id the Flink state index's bucket assigner sent a record to (its current location,
``HoodieRecord#setCurrentLocation``); travels with the record to the write task, never written."""
LOCATION_INSTANT = "_location_instant"
"""The instant tag of that location: ``"I"`` for a record the assigner sent to a new file group
(``BucketType.INSERT``), ``"U"`` otherwise (``BucketAssignFunction#processRecord``); the write
task's bucket takes its first record's tag (``RowDataBucket``'s ``BucketInfo``)."""
INSERT_TAG = "I"
"""``HoodieRecordLocation``'s instant for a record of a new file group."""
UPDATE_TAG = "U"
"""``HoodieRecordLocation``'s instant for any other located record."""
LOCATION_COLUMNS = (LOCATION_FILE_ID, LOCATION_INSTANT)


@dataclass(frozen=True)
class FileLayout:
    """How a job maps records to file groups (Flink's bucket index, state index, append mode)."""

    job_index: int
    operation: str
    is_mor: bool
    buckets_per_partition: int
    file_slicing: str = "completion_time"
    index: str = "bucket"
    """``bucket``: a file group per bucket; ``flink_state``: the assigner's file ids."""


def bucket_file_id(partition_index: int, bucket: int) -> str:
    """A fixed file id per bucket, ``<bucket:08d>-<uuid-like>-0``, for writes without a task's
    bucket index (tests, benches); the simulator's tasks assign ids as Hudi does
    (:mod:`models.flink.bucket_index`)."""
    return f"{bucket:08d}-0000-4000-8000-{partition_index:012d}-0"


def insert_file_id(
    job_index: int, task_id: int, instant: str, partition_index: int, flush: int = 0
) -> str:
    """A fresh file group for an append-mode flush.

    Hudi's append writer (``BulkInsertWriterHelper``, one per task and instant) names its file
    groups ``<random UUID>-<n>``, so their first 8 characters, which the bucket index's conflict
    check reads as a bucket (``BucketIdentifier#bucketIdStrFromFileId``), change from instant to
    instant. Here those 8 hex digits hash (job, task, instant), so a run replays exactly; the
    rest spells job, task, instant, partition and ``flush`` (a task's flushes into one instant
    and partition), which keeps ids unique."""
    digest = hashlib.blake2b(f"{job_index}/{task_id}/{instant}".encode(), digest_size=4)
    return (
        f"{digest.hexdigest()}-{job_index:04d}{task_id:04d}-{instant}-{partition_index:06d}-{flush}"
    )


def route(rows: pa.Table, buckets_per_partition: int, parallelism: int) -> list[pa.Table]:
    """Split a source batch over the write tasks (Flink's shuffle in front of the writers).

    Upsert records go by bucket, ``(partition_index * buckets + bucket) % parallelism`` like
    Hudi's ``BucketIndexPartitioner``, so one task owns each file group. Insert records
    (keys ``j..``) are spread by offset (a rebalance)."""
    if rows.num_rows == 0:
        return [rows.slice(0, 0) for _ in range(parallelism)]
    if rows.column(RECORD_KEY_FIELD)[0].as_py().startswith("k"):
        parts = partition_indexes(rows)
        owner = (
            parts * buckets_per_partition
            + bucket_ids(rows.column(RECORD_KEY_FIELD), buckets_per_partition)
        ) % parallelism
    else:
        owner = rows.column("offset").to_numpy() % parallelism
    return split_rows(rows, owner, parallelism)


def split_rows(rows: pa.Table, owner: np.ndarray, parallelism: int) -> list[pa.Table]:
    """``rows`` split by ``owner`` (a task index per row) into one table per task, each in the
    rows' order: one stable sort and a slice per task instead of a filter per task."""
    order = np.argsort(owner, kind="stable")
    grouped = rows.take(pa.array(order))
    bounds = np.searchsorted(owner[order], np.arange(parallelism + 1))
    return [grouped.slice(bounds[t], bounds[t + 1] - bounds[t]) for t in range(parallelism)]


def partition_indexes(rows: pa.Table) -> np.ndarray:
    return decimal_suffixes(rows.column(PARTITION_FIELD), 1)


def write_records(
    writer: TableWriter,
    instant: Instant,
    rows: pa.Table,
    *,
    task_id: int,
    layout: FileLayout,
    log_versions: dict[tuple[str, str, str], int],
    base_instants: dict[tuple[str, str], str | None] | None = None,
    handles: dict[str, str] | None = None,
    file_ids: BucketIndex | None = None,
) -> list[WriteStat]:
    """Write one flush of ``rows`` (pre-combined) for ``instant``; return its write statuses.

    ``log_versions`` is the task's memory of log versions it wrote per (partition, file id,
    instant): a second flush into the same file group and instant writes the next version instead
    of listing the partition (append mode: a new file group, counted the same way).
    ``base_instants`` (variant ``base_instant`` only) maps file groups to
    the base instant of their latest slice as the task saw it when the write started.
    ``handles`` (COPY_ON_WRITE upserts) is the task's memory of the base file it wrote last per
    file id since its last checkpoint (Hudi's ``bucketToHandles``): a later flush of the file id
    merges into that file (:mod:`models.write.mini_batch`); the caller clears it when the
    barrier's flush is done (``cleanHandles``). ``file_ids`` is the task's bucket index
    (:mod:`models.flink.bucket_index`); without one every bucket has the fixed id
    :func:`bucket_file_id`.
    """
    parts = partition_indexes(rows)
    if layout.operation == "insert":
        return _write_inserts(writer, instant, rows, parts, task_id, layout, log_versions)
    stats: list[WriteStat] = []
    chunks = (
        _located_chunks(rows)
        if LOCATION_FILE_ID in rows.column_names
        else _bucket_chunks(rows, parts, layout, file_ids)
    )
    for partition, file_id, tag, located_chunk in chunks:
        chunk, deletes = split_deletes(located_chunk)
        if not layout.is_mor:
            stat = _write_base(
                writer, instant, partition, file_id, tag, (chunk, deletes), task_id, handles
            )
            if handles is not None:
                handles[file_id] = stat.path
            stats.append(stat)
            continue
        name_instant = None
        if layout.file_slicing == "base_instant" and base_instants is not None:
            name_instant = base_instants.get((partition, file_id))
        version = None  # legacy names repeat across instants: list the partition instead
        if name_instant is None:
            key = (partition, file_id, instant.requested_time)
            version = log_versions.get(key, 0) + 1
            log_versions[key] = version
        stats.append(
            writer.append_log_file(
                instant,
                partition,
                file_id,
                chunk if chunk.num_rows else None,
                delete_keys=deletes,
                task_id=task_id,
                version=version,
                name_instant=name_instant,
            )
        )
    return stats


def split_deletes(chunk: pa.Table) -> tuple[pa.Table, pa.Table | None]:
    """A file group's rows as (records, delete records): rows flagged in :data:`ROW_KIND_COLUMN`
    (the global index's deletes, ``RowKind.DELETE``) become delete keys with the record's
    ordering value (``DeleteRecord``), the flag column dropped; None without deletes."""
    if ROW_KIND_COLUMN not in chunk.column_names:
        return chunk, None
    flags = pc.fill_null(chunk.column(ROW_KIND_COLUMN), False)
    records = chunk.filter(pc.invert(flags)).drop_columns([ROW_KIND_COLUMN])
    deleted = chunk.filter(flags)
    if deleted.num_rows == 0:
        return records, None
    paths = [partition_path_of(part) for part in deleted.column(PARTITION_FIELD).to_pylist()]
    keys = pa.table(
        {
            "record_key": deleted.column(RECORD_KEY_FIELD),
            "partition_path": pa.array(paths, pa.string()),
            "ordering_value": deleted.column(ORDERING_FIELD),
        }
    )
    return records, keys


def _write_base(
    writer: TableWriter,
    instant: Instant,
    partition: str,
    file_id: str,
    tag: str | None,
    chunk: tuple[pa.Table, pa.Table | None],
    task_id: int,
    handles: dict[str, str] | None,
) -> WriteStat:
    """One copy-on-write file group's flush (records, delete records), by the handle
    ``FlinkWriteHandleFactory`` picks: the file this task wrote earlier in the instant (a
    replace handle, whatever the tag); else for a bucket tagged ``"I"`` a create handle (a new
    base file, which writes no delete; a committed one of the same file id is not read, so the
    new one hides it); else a merge handle, which needs the file group's committed base file
    (``HoodieMergeHandle#getLatestBaseFile``). Untagged rows (bucket index) merge into whatever
    is committed."""
    records, deletes = chunk
    previous = None if handles is None else handles.get(file_id)
    if previous is None and tag == INSERT_TAG:
        return writer.write_base_file(instant, partition, file_id, records, task_id=task_id)
    return writer.upsert_base_file(
        instant,
        partition,
        file_id,
        records,
        task_id=task_id,
        previous_path=previous,
        require_base=tag is not None,
        delete_keys=deletes,
    )


def _write_inserts(
    writer: TableWriter,
    instant: Instant,
    rows: pa.Table,
    parts: np.ndarray,
    task_id: int,
    layout: FileLayout,
    log_versions: dict[tuple[str, str, str], int],
) -> list[WriteStat]:
    """Append mode: each partition's rows into a new base file of a new file group per flush."""
    stats: list[WriteStat] = []
    for p in sorted(set(parts.tolist())):
        chunk = rows.filter(pa.array(parts == p))
        first = insert_file_id(layout.job_index, task_id, instant.requested_time, p)
        key = (partition_path_of(f"p{p}"), first, instant.requested_time)
        flush = log_versions.get(key, 0)  # an eager flush before into this instant
        log_versions[key] = flush + 1
        file_id = insert_file_id(layout.job_index, task_id, instant.requested_time, p, flush)
        stats.append(
            writer.write_base_file(
                instant, partition_path_of(f"p{p}"), file_id, chunk, task_id=task_id
            )
        )
    return stats


def _bucket_chunks(
    rows: pa.Table, parts: np.ndarray, layout: FileLayout, file_ids: BucketIndex | None
) -> list[tuple[str, str, str | None, pa.Table]]:
    """(partition, bucket file id, no tag, rows) per file group, in file-group order.

    One stable sort and a slice per file group instead of a filter per group: same rows, same
    order within each group.
    """
    buckets = bucket_ids(rows.column(RECORD_KEY_FIELD), layout.buckets_per_partition)
    groups = parts * layout.buckets_per_partition + buckets
    order = np.argsort(groups, kind="stable")
    sorted_groups = groups[order]
    grouped = rows.take(pa.array(order))
    starts = np.flatnonzero(np.r_[len(order) > 0, sorted_groups[1:] != sorted_groups[:-1]])
    ends = np.r_[starts[1:], len(order)]
    chunks = []
    for group, start, end in zip(
        sorted_groups[starts].tolist(), starts.tolist(), ends.tolist(), strict=True
    ):
        p, bucket = divmod(group, layout.buckets_per_partition)
        partition = partition_path_of(f"p{p}")
        file_id = (
            bucket_file_id(p, bucket) if file_ids is None else file_ids.file_id(partition, bucket)
        )
        chunks.append((partition, file_id, None, grouped.slice(start, end - start)))
    return chunks


def _located_chunks(rows: pa.Table) -> list[tuple[str, str, str | None, pa.Table]]:
    """(partition, file id, bucket tag, rows) per file group the state index chose (the
    location columns dropped), in file id order; rows keep their order within a group, and the
    tag is the group's first row's (None without a tag column)."""
    file_ids = rows.column(LOCATION_FILE_ID)
    distinct = pc.unique(file_ids)
    codes = pc.index_in(file_ids, distinct).to_numpy(zero_copy_only=False)
    names = distinct.to_pylist()
    ranks = np.argsort(np.argsort(np.array(names, dtype=object)))
    groups = ranks[codes]
    order = np.argsort(groups, kind="stable")
    sorted_groups = groups[order]
    tags = rows.column(LOCATION_INSTANT) if LOCATION_INSTANT in rows.column_names else None
    located = [c for c in LOCATION_COLUMNS if c in rows.column_names]
    grouped = rows.drop_columns(located).take(pa.array(order))
    starts = np.flatnonzero(np.r_[len(order) > 0, sorted_groups[1:] != sorted_groups[:-1]])
    ends = np.r_[starts[1:], len(order)]
    chunks = []
    for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
        chunk = grouped.slice(start, end - start)
        partition = partition_path_of(chunk.column(PARTITION_FIELD)[0].as_py())
        file_id = names[int(codes[order[start]])]
        tag = None if tags is None else tags[int(order[start])].as_py()
        chunks.append((partition, file_id, tag, chunk))
    return chunks
