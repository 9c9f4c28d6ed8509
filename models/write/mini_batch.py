"""COPY_ON_WRITE mini-batches: a task's second write of one file group before its next checkpoint.

Hudi's Flink write client remembers, per file id, the path of the base file a task wrote last
(``HoodieFlinkWriteClient``'s ``bucketToHandles``, cleared by ``cleanHandles`` when
``StreamWriteFunction#flushRemaining`` ends the checkpoint's flush). The next write of that file id
by the same task goes through ``FlinkWriteHandleFactory.BaseCommitWriteHandleFactory#create`` to a
``FlinkMergeAndReplaceHandle`` over that file, not to the latest committed slice:

- **Same instant** (the usual case: an eager flush, then the barrier's flush): the previous file
  and the new records are merged into a hidden roll-over file, ``.<fileId>_<token>-<n>_<instant>``
  (``newFileNameWithRollover``, ``n`` the first free roll number), whose records carry that hidden
  name in ``_hoodie_file_name``; then the previous file is deleted and the roll file renamed to the
  previous file's name (``finalizeWrite``; on an object store a rename is a copy and a delete). The
  write status reports the previous path (``setWriteStatusPath``), so the instant ends with one
  base file per file group, named as the first mini-batch named it.
- **Another instant** (the instant moved on between two flushes of one checkpoint interval,
  ``shouldReplace = false``): a plain merge of the previous file, committed or not, with the new
  records into a new base file of this instant.

Hudi 1.1 ``FlinkMergeAndReplaceHandle`` (unchanged in its replace steps since apache/hudi commit
069acb5d); the marker of the roll file is created if absent (``createMarkerFile``), type MERGE.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import pyarrow as pa

from models.format.commit_metadata import WriteStat
from models.format.parquet_files import base_file_parquet
from models.storage import join
from models.timeline.instant import Instant
from models.view.filenames import parse_base_file_name
from models.view.reader import decoded_parquet
from models.write.merge_handle import merge_handle_rows, removed_keys
from models.write.write_handles import with_file_name, write_data_file

if TYPE_CHECKING:
    from models.write.writer import TableWriter


def roll_file_name(file_id: str, write_token: str, roll_number: int, instant_time: str) -> str:
    """The hidden file a replace writes first (``newFileNameWithRollover``)."""
    return f".{file_id}_{write_token}-{roll_number}_{instant_time}.parquet"


def merge_into_previous(
    writer: TableWriter,
    instant: Instant,
    partition: str,
    file_id: str,
    records: pa.Table,
    previous_path: str,
    *,
    task_id: int,
    delete_keys: pa.Table | None = None,
) -> WriteStat:
    """Write ``records`` (and the delete records ``delete_keys``) into ``file_id`` on top of
    ``previous_path``, the base file the task wrote for it last (module docstring); return the
    write status, whose ``num_deletes`` counts the keys of the previous file the merge left out
    (the replace handle is a ``HoodieMergeHandle``: its ``recordsDeleted``)."""
    previous = parse_base_file_name(previous_path.rsplit("/", 1)[-1])
    old = decoded_parquet(writer.storage.read(previous_path))
    new = writer.with_meta(instant, partition, "", records, task_id)
    merged = merge_handle_rows(old, new, writer.table.config, delete_keys)
    writer.remember_schema(instant, records)
    if previous.instant_time != instant.requested_time:
        stat = writer.write_base_file(
            instant,
            partition,
            file_id,
            merged,
            task_id=task_id,
            prev_commit=previous.instant_time,
            keep_meta=True,
        )
    else:
        stat = _replace(writer, instant, partition, file_id, merged, previous_path, task_id)
    if delete_keys is None:
        return stat
    return replace(stat, num_deletes=removed_keys(old, merged))


def _replace(
    writer: TableWriter,
    instant: Instant,
    partition: str,
    file_id: str,
    merged: pa.Table,
    previous_path: str,
    task_id: int,
) -> WriteStat:
    """The same-instant case: roll file, delete the previous file, rename the roll file to it."""
    storage = writer.storage
    token = str(writer.write_token(task_id))
    roll_number = 0
    while storage.exists(
        join(partition, roll_file_name(file_id, token, roll_number, instant.requested_time))
    ):
        roll_number += 1
    roll_name = roll_file_name(file_id, token, roll_number, instant.requested_time)
    rows = with_file_name(merged, roll_name)
    data = base_file_parquet(rows)
    write_data_file(storage, instant, partition, roll_name, data, "MERGE", writer.markers)
    roll_path = join(partition, roll_name)
    storage.delete(previous_path)
    storage.create_if_absent(previous_path, data)
    storage.delete(roll_path)
    return WriteStat(
        file_id=file_id,
        path=previous_path,
        partition_path=partition,
        prev_commit=instant.requested_time,
        num_writes=rows.num_rows,
        num_update_writes=rows.num_rows,
        total_write_bytes=len(data),
        file_size_in_bytes=len(data),
    )


__all__ = ["merge_into_previous", "roll_file_name"]
