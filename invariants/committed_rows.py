"""The records committed write instants wrote, as the checkers hold them: Arrow tables with the
checkers' own row columns in front of the data columns.

:class:`CommittedRows` holds every record a completed write instant wrote (its *own* rows:
``_hoodie_commit_time`` equal to the instant, which leaves out the rows a copy-on-write merge or a
compaction carried over from older commits), in merge order (instants by completion time, files by
log version, rows in file order), so a checker can merge them as of any time with plain vectorized
filters. :func:`file_records` reads one data file's records (base file rows, log data blocks, delete
blocks as tombstones, skipping blocks a rollback command cancelled); from ``models`` it borrows only
the decoders of parquet files and log blocks.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from invariants.raw_files import CommittedTableError, DataFile, RawInstant, as_int
from models.format.log_blocks import CommandBlock, DataBlock, DeleteBlock
from models.view.reader import decoded_log_blocks, decoded_parquet
from models.view.table import HudiTable, ReadCache

META_PREFIX = "_hoodie_"
COMMIT_TIME = "_hoodie_commit_time"
RECORD_KEY = "_hoodie_record_key"
PARTITION_PATH = "_hoodie_partition_path"
FILE_NAME = "_hoodie_file_name"
IS_DELETED = "_hoodie_is_deleted"

# Columns of CommittedRows besides the data columns.
KEY = "_c_key"
PARTITION = "_c_partition"
FILE = "_c_file"  # index into CommittedRows.files
TIME = "_c_commit_time"
DELETED = "_c_deleted"
ROW_COLUMNS = (KEY, PARTITION, FILE, TIME, DELETED)


@dataclass(frozen=True)
class CommittedRows:
    """The own rows of every completed write instant, in merge order.

    ``table`` has the columns :data:`ROW_COLUMNS` (record key, partition path from the file's
    folder, index of the file in ``files``, the row's commit time, a delete flag) followed by the
    data columns; ``file_instants[i]`` is the instant whose commit lists ``files[i]``. Row ``r``
    comes before row ``s`` in merge order iff ``r < s``.
    """

    table: pa.Table
    files: tuple[DataFile, ...]
    file_instants: tuple[RawInstant, ...]
    cache: dict[object, Any] = field(default_factory=dict, compare=False, repr=False)
    """Derived columns the checkers compute once per run (identities...)."""

    @cached_property
    def completion(self) -> np.ndarray:
        """Completion time (int64) of the instant that committed each row."""
        per_file = as_int([i.completion or "0" for i in self.file_instants])
        return per_file[self.file_index] if len(per_file) else np.zeros(0, np.int64)

    @cached_property
    def file_index(self) -> np.ndarray:
        return self.table.column(FILE).to_numpy(zero_copy_only=False).astype(np.int64)

    @cached_property
    def instant(self) -> np.ndarray:
        """Requested time (int64) of the instant that committed each row."""
        per_file = as_int([i.requested for i in self.file_instants])
        return per_file[self.file_index] if len(per_file) else np.zeros(0, np.int64)

    def file_ids(self) -> pa.Array:
        return pa.array([f.file_id for f in self.files], pa.string()).take(
            pa.array(self.file_index)
        )

    @property
    def data_columns(self) -> list[str]:
        return [c for c in self.table.column_names if c not in ROW_COLUMNS]

    def upto(self, bound: str) -> np.ndarray:
        """Indices of the rows of instants completed by ``bound``."""
        return np.flatnonzero(self.completion <= int(bound))


def normalize_rows(
    rows: pa.Table, partition: str, file_index: int, config_key_fields: Sequence[str]
) -> pa.Table:
    """A file's rows with the :data:`ROW_COLUMNS` in front and Hudi's meta columns dropped."""
    n = rows.num_rows
    if RECORD_KEY in rows.column_names:
        key = rows.column(RECORD_KEY).cast(pa.string())
    elif len(config_key_fields) == 1 and config_key_fields[0] in rows.column_names:
        key = rows.column(config_key_fields[0]).cast(pa.string())
    else:
        raise CommittedTableError("a data file without _hoodie_record_key or record key column")
    commit = (
        rows.column(COMMIT_TIME).cast(pa.string())
        if COMMIT_TIME in rows.column_names
        else pa.nulls(n, pa.string())
    )
    deleted = (
        pc.fill_null(rows.column(IS_DELETED), False)
        if IS_DELETED in rows.column_names
        else pa.array(np.zeros(n, bool))
    )
    data = rows.drop_columns([c for c in rows.column_names if c.startswith(META_PREFIX)])
    front = pa.table(
        {
            KEY: key,
            PARTITION: pa.array(np.full(n, partition, dtype=object), pa.string()),
            FILE: pa.array(np.full(n, file_index, np.int32)),
            TIME: commit,
            DELETED: deleted,
        }
    )
    for name in data.column_names:
        front = front.append_column(data.schema.field(name), data.column(name))
    return front


def tombstones(
    keys: pa.Table, partition: str, file_index: int, instant: str, ordering: str | None
) -> pa.Table:
    n = keys.num_rows
    out = pa.table(
        {
            KEY: keys.column("record_key").cast(pa.string()),
            PARTITION: pc.fill_null(keys.column("partition_path").cast(pa.string()), partition),
            FILE: pa.array(np.full(n, file_index, np.int32)),
            TIME: pa.array(np.full(n, instant, dtype=object), pa.string()),
            DELETED: pa.array(np.ones(n, bool)),
        }
    )
    if ordering is not None and "ordering_value" in keys.column_names:
        value = keys.column("ordering_value")
        if pa.types.is_integer(value.type) or pa.types.is_floating(value.type):
            # Hudi's "no ordering value" (0 or null): an unconditional delete
            value = pc.if_else(pc.equal(value, 0), pa.scalar(None, value.type), value)
        out = out.append_column(ordering, value)
    return out


def file_records(
    table: HudiTable, read_cache: ReadCache, f: DataFile, index: int, *, only: str | None
) -> Iterable[pa.Table]:
    """The records of data file ``f`` as normalized rows with ``_c_file`` = ``index``: a base
    file's rows, or a log's data and delete blocks (of instant ``only``, or of every instant when
    None), except blocks a rollback command cancelled; nothing for a file that is gone."""
    try:
        data = table.storage.read(f.path)
    except FileNotFoundError:
        return
    key_fields = table.config.record_key_fields
    if not f.is_log:
        try:
            rows = decoded_parquet(data, read_cache)
        except (pa.ArrowException, OSError, ValueError) as err:
            raise CommittedTableError(f"{f.path}: not a readable parquet file: {err}") from None
        yield normalize_rows(rows, f.partition, index, key_fields)
        return
    try:
        # not kept: most logs are read here once (the reader needs only the latest slices'),
        # and the files a run just wrote come decoded from models.format.recent_log_files anyway
        blocks = decoded_log_blocks(data)
    except ValueError as err:
        raise CommittedTableError(f"{f.path}: {err}") from None
    cancelled = {b.target_instant_time for b in blocks if isinstance(b, CommandBlock)}
    ordering = table.config.ordering_fields[0] if table.config.ordering_fields else None
    for block in blocks:
        if block.instant_time in cancelled or (only is not None and block.instant_time != only):
            continue
        if isinstance(block, DataBlock) and block.records.num_rows:
            yield normalize_rows(block.records, f.partition, index, key_fields)
        elif isinstance(block, DeleteBlock) and block.keys.num_rows:
            yield tombstones(block.keys, f.partition, index, block.instant_time, ordering)


def rows_table(parts: list[pa.Table]) -> pa.Table:
    """The normalized rows of all files as one table (empty, with the row columns, for none)."""
    if parts:
        # one chunk per column: per-point filters and takes over thousands of small
        # chunks (one per file or block) cost far more than one concatenation
        table = pa.concat_tables(parts, promote_options="permissive").combine_chunks()
        table = table.set_column(
            table.column_names.index(TIME),
            TIME,
            pc.fill_null(table.column(TIME), ""),  # files without meta columns
        )
    else:
        table = pa.table(
            {
                KEY: pa.array([], pa.string()),
                PARTITION: pa.array([], pa.string()),
                FILE: pa.array([], pa.int32()),
                TIME: pa.array([], pa.string()),
                DELETED: pa.array([], pa.bool_()),
            }
        )
    return table


__all__ = [
    "COMMIT_TIME",
    "DELETED",
    "FILE",
    "FILE_NAME",
    "IS_DELETED",
    "KEY",
    "META_PREFIX",
    "PARTITION",
    "PARTITION_PATH",
    "RECORD_KEY",
    "ROW_COLUMNS",
    "TIME",
    "CommittedRows",
    "file_records",
    "normalize_rows",
    "rows_table",
    "tombstones",
]
