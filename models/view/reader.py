"""Snapshot reader: merge each latest file slice's base file with its committed log blocks.

docs/protocol.md sections 4-5. Per slice, the rows of the base file and of every log data block whose
instant is committed (at the snapshot, or by the ``as_of`` bound) are stacked with a sequence number
in merge order (base first, then logs in completion-time order, blocks in file order); delete blocks
add tombstones. Then one vectorized pass picks a winner per record key:

* ``COMMIT_TIME_ORDERING``: the last version in merge order wins;
* ``EVENT_TIME_ORDERING``: the greatest ordering (precombine) value wins, ties to the later version;
  a delete competes like any other version with its own ordering value; a delete block entry
  without one (null, or Hudi's default 0) deletes unconditionally, as Hudi and hudi-rs do.
* a table that declares column groups (multi-stream partial updates, docs/protocol.md section 5.3): the same rule
  once per column group, values combined into one row (:mod:`models.view.partial_update`); compaction
  merges through this module too, so base files hold the combined rows.

Records are moved as Arrow tables: no Python object per record.

Blocks are filtered by the instant in their header, not only by file name: a log file can hold
blocks of a failed attempt followed by a rollback command block (Hudi's
``AbstractHoodieLogRecordScanner``), and under the legacy rule the name does not say which
deltacommit wrote the file at all.

Reading one table as of many bounds (the checkers' time travel) merges the same slices again and
again: with a :class:`~models.view.table.ReadCache`, every data file is decoded once, and a slice is
merged once per content (the bytes of its base file and logs, which of their blocks count, the
table's properties).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from models.format.log_blocks import CommandBlock, DataBlock, DeleteBlock, LogBlock
from models.format.log_reader import read_log_blocks_skipping_corrupt
from models.format.parquet_files import read_parquet
from models.format.properties import COMMIT_TIME_ORDERING, TableConfig
from models.storage import join
from models.table_errors import CorruptTableError
from models.timeline.active import Timeline
from models.view.fsview import FileSlice, latest_file_slices
from models.view.partial_update import (
    column_groups,
    declared_groups,
    merge_column_groups,
    with_group_columns,
)
from models.view.table import HudiTable, ReadCache, ViewOptions, decode_once

RECORD_KEY = "_hoodie_record_key"
COMMIT_TIME = "_hoodie_commit_time"
IS_DELETED = "_hoodie_is_deleted"
_SEQ = "__testbed_seq"
_DELETE = "__testbed_delete"
_KEY = "__testbed_key"
_ORDER = "__testbed_order"


def read_snapshot(
    table: HudiTable,
    as_of: str | None = None,
    options: ViewOptions | None = None,
    *,
    cache: ReadCache | None = None,
) -> pa.Table:
    """All live records of the table (at ``as_of`` if given), sorted by partition and key."""
    timeline, groups = table.file_groups(as_of=as_of, options=options, cache=cache)
    parts = [merge_file_slice(table, timeline, s, cache=cache) for s in latest_file_slices(groups)]
    parts = [p for p in parts if p.num_rows]
    if not parts:
        return pa.table({})
    rows = pa.concat_tables(parts, promote_options="permissive")
    rows = with_group_columns(rows, declared_groups(table.config))
    return _sort_rows(rows, table.config)


def merge_file_slice(
    table: HudiTable,
    timeline: Timeline,
    file_slice: FileSlice,
    *,
    cache: ReadCache | None = None,
) -> pa.Table:
    """The live records of one file slice, one row per record key.

    With a ``cache``, files are decoded once per content, and the merge is done once per content
    of its inputs: the base file's bytes, each log's bytes with the positions of its blocks that
    count, and the table's properties (never the paths: a file can be rewritten in place)."""
    batches: list[pa.Table | DeleteKeys] = []
    base: bytes | None = None
    if file_slice.base_file is not None:
        path = join(file_slice.partition, file_slice.base_file.name)
        base = _read(table, path)
        batches.append(_base_rows(path, base, cache))
    logs: list[tuple[bytes, tuple[int, ...]]] = []
    for log in file_slice.log_files:
        path = join(file_slice.partition, log.name)
        try:
            data = _read(table, path)
            blocks = decoded_log_blocks(data, cache)
        except ValueError as err:
            raise CorruptTableError(f"{path}: {err}") from None
        rolled_back = {b.target_instant_time for b in blocks if isinstance(b, CommandBlock)}
        used = []
        for position, block in enumerate(blocks):
            if block.instant_time in rolled_back or not timeline.is_completed(block.instant_time):
                continue
            if isinstance(block, DataBlock):
                batches.append(block.records)
            elif isinstance(block, DeleteBlock):
                batches.append(DeleteKeys(block.keys))
            else:
                continue
            used.append(position)
        logs.append((data, tuple(used)))
    if not batches:
        return pa.table({})
    if cache is None:
        return merge_batches(batches, table.config)
    config = tuple(sorted(table.config.raw.items()))
    key = ("merged slice", config, base, tuple(logs))
    return cache.get(key, lambda: merge_batches(batches, table.config))


def _base_rows(path: str, data: bytes, cache: ReadCache | None) -> pa.Table:
    """The rows of the base file at ``path``; :class:`CorruptTableError` naming it if its bytes
    are not a readable parquet file (Hudi's ``HoodieAvroParquetReader`` fails the read too)."""
    try:
        return decoded_parquet(data, cache)
    except (pa.ArrowException, OSError, ValueError) as err:
        raise CorruptTableError(f"{path}: not a readable parquet file: {err}") from None


def decoded_parquet(data: bytes, cache: ReadCache | None = None) -> pa.Table:
    """The rows of a parquet file (base file), decoded once per content with a cache."""
    return decode_once(cache, "parquet", read_parquet, data)


def decoded_log_blocks(data: bytes, cache: ReadCache | None = None) -> tuple[LogBlock, ...]:
    """The blocks of a log file as Hudi's log reader yields them, corrupt blocks skipped
    (:func:`models.format.log_reader.read_log_blocks_skipping_corrupt`, whose ``ValueError`` it raises),
    decoded once per content with a cache."""
    return decode_once(cache, "log blocks", _log_blocks, data)


def _log_blocks(data: bytes) -> tuple[LogBlock, ...]:
    return tuple(read_log_blocks_skipping_corrupt(data))


@dataclass(frozen=True)
class DeleteKeys:
    """The keys of a delete block (``record_key``, optional ``ordering_value``) in merge order."""

    keys: pa.Table


def merge_versions(
    versions: list[pa.Table], tombstones: list[pa.Table], config: TableConfig
) -> pa.Table:
    """:func:`merge_batches` with every delete-key table after all the versions."""
    return merge_batches([*versions, *(DeleteKeys(t) for t in tombstones)], config)


def merge_batches(batches: list[pa.Table | DeleteKeys], config: TableConfig) -> pa.Table:
    """Pick the winning version per key among record batches and delete keys, in merge order.

    Deletes take their place in the sequence like any block (a delete then a re-insert keeps the
    re-inserted record), which is how Hudi's log scanner applies blocks.

    Only the key, ordering and sequence columns are sorted; the winners are then taken from the
    stacked rows in one go (key order), so the payload columns move once.
    """
    ordering = config.ordering_fields[0] if config.ordering_fields else None
    event_time = config.merge_mode != COMMIT_TIME_ORDERING and ordering is not None
    rows = _stack(batches, config, ordering if event_time else None)
    n = rows.num_rows
    if n == 0:
        return rows.drop_columns([_KEY, _DELETE])
    # the sequence number of a version is its position in merge order
    seq = pa.array(np.arange(n, dtype=np.int64))
    deleted = pc.fill_null(rows.column(_DELETE), False)
    key = rows.column(_KEY)
    groups = column_groups(config)
    if groups:  # multi-stream partial updates: one merge per column group
        flags = deleted.to_numpy(zero_copy_only=False)
        merged = merge_column_groups(rows, key, flags, groups, ordering)
        return merged.drop_columns([_KEY, _DELETE])
    if event_time and ordering in rows.column_names:
        order_value = rows.column(ordering)
        # unconditional deletes last; nulls first: a version without an ordering value loses to
        # any version that has one
        sortable = pa.Table.from_arrays(
            [key, pc.and_(deleted, pc.is_null(order_value)), order_value, seq],
            names=[_KEY, _ORDER, "value", _SEQ],
        )
        sort_keys = [
            (_KEY, "ascending"),
            (_ORDER, "ascending"),
            ("value", "ascending", "at_start"),
            (_SEQ, "ascending"),
        ]
    else:
        sortable = pa.Table.from_arrays([key, seq], names=[_KEY, _SEQ])
        sort_keys = [(_KEY, "ascending"), (_SEQ, "ascending")]
    order = pc.sort_indices(sortable, sort_keys=sort_keys)
    sorted_keys = key.take(order)
    last = np.ones(n, bool)  # the last version of each key in sort order wins
    changes = pc.not_equal(sorted_keys.slice(0, n - 1), sorted_keys.slice(1))
    last[:-1] = pc.fill_null(changes, False).to_numpy(zero_copy_only=False)
    winners = order.to_numpy()[last]
    winners = winners[~deleted.to_numpy(zero_copy_only=False)[winners]]
    return rows.take(pa.array(winners)).drop_columns([_KEY, _DELETE])


def _stack(
    batches: list[pa.Table | DeleteKeys], config: TableConfig, ordering: str | None
) -> pa.Table:
    """The batches as one table in merge order, with a key and a delete-flag column; deletes
    carry their ordering value in column ``ordering`` when one is given (event-time merging)."""
    stacked = []
    for batch in batches:
        if isinstance(batch, DeleteKeys):
            keys = batch.keys
            columns = {
                _KEY: keys.column("record_key").cast(pa.string()),
                _DELETE: pa.array(np.ones(keys.num_rows, bool)),
            }
            if ordering is not None and "ordering_value" in keys.column_names:
                columns[ordering] = _delete_ordering(keys.column("ordering_value"))
            stacked.append(pa.table(columns))
        else:
            keyed = batch.append_column(_KEY, record_key_column(batch, config))
            stacked.append(keyed.append_column(_DELETE, _deleted_flags(batch)))
    return (
        pa.concat_tables(stacked, promote_options="permissive") if len(stacked) > 1 else stacked[0]
    )


def _delete_ordering(values: pa.ChunkedArray) -> pa.ChunkedArray:
    """A delete's ordering value, with Hudi's "no value" (null, or the default 0 that
    ``DeleteRecord`` carries when the writer had none) turned into null: an unconditional delete.
    Confirmed against the fixture with a delete block and hudi-rs's ``DeleteContext``."""
    if pa.types.is_integer(values.type) or pa.types.is_floating(values.type):
        return pc.if_else(pc.equal(values, 0), pa.scalar(None, values.type), values)
    return values


def record_key_column(version: pa.Table, config: TableConfig) -> pa.ChunkedArray:
    """The record key of each row of a data file or block: ``_hoodie_record_key``, or the key
    fields when the table does not populate meta fields (Hudi's key generators' form)."""
    if RECORD_KEY in version.column_names and config.populate_meta_fields:
        return version.column(RECORD_KEY).cast(pa.string())
    fields = config.record_key_fields
    if not fields:
        raise CorruptTableError("no _hoodie_record_key column and no hoodie.table.recordkey.fields")
    missing = [f for f in fields if f not in version.column_names]
    if missing:
        raise CorruptTableError(f"record key field(s) {missing} missing from a data file")
    if len(fields) == 1:
        return version.column(fields[0]).cast(pa.string())
    # Hudi's ComplexKeyGenerator: "f1:v1,f2:v2"
    parts = [
        pc.binary_join_element_wise(
            pa.scalar(f"{name}:"), version.column(name).cast(pa.string()), ""
        )
        for name in fields
    ]
    return pc.binary_join_element_wise(*parts, ",")


def _deleted_flags(version: pa.Table) -> pa.ChunkedArray | pa.Array:
    if IS_DELETED in version.column_names:
        return pc.fill_null(version.column(IS_DELETED), False)
    return pa.array(np.zeros(version.num_rows, bool))


def _read(table: HudiTable, path: str) -> bytes:
    try:
        return table.storage.read(path)
    except FileNotFoundError:
        raise CorruptTableError(f"{path} is listed but cannot be read") from None


def _sort_rows(rows: pa.Table, config: TableConfig) -> pa.Table:
    keys = []
    for name in ("_hoodie_partition_path", RECORD_KEY):
        if name in rows.column_names:
            keys.append((name, "ascending"))
    if not keys:
        keys = [(f, "ascending") for f in config.record_key_fields if f in rows.column_names]
    if not keys:
        return rows
    # one chunk per column first: sorting and taking across the many chunks of a concatenation
    # (one per file slice) costs about twice as much, for the same rows in one chunk
    rows = rows.combine_chunks()
    return rows.take(pc.sort_indices(rows, sort_keys=keys))
