"""Parquet bytes in and out: the settings data files are written with, and the fast read path.

A simulated hour writes ~11,000 log blocks of a few hundred rows and ~1,000 base files, each a
whole parquet file, so the fixed cost per file dominates: pyarrow's defaults (dictionary pages
for every column, statistics, the dataset layer behind ``pq.read_table``) cost more than the
rows. Both choices below are plain Parquet that every reader (Hudi, hudi-rs, Spark) accepts:

* **Log data blocks** (``HoodieParquetDataBlock``): snappy, no dictionary, no column statistics.
  A block is read whole by the log scanner, never filtered by statistics, and its keys are
  distinct, so dictionaries only cost time. Hudi's own default codec here is gzip; snappy is one
  of the codecs it supports (``hoodie.parquet.compression.codec``) and is ~10x cheaper to write.
* **Base files**: snappy with statistics (query engines prune with them), dictionary pages only
  for the meta columns that hold one or a few values per file (commit time, partition path, file
  name): the record keys and payload are distinct per row, where a dictionary is pure overhead.

Reads go through ``pq.ParquetFile`` directly: for an in-memory buffer it returns the same table
as ``pq.read_table`` at a fraction of the cost (no dataset discovery).
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.parquet as pq

COMPRESSION = "snappy"
DICTIONARY_COLUMNS = ("_hoodie_commit_time", "_hoodie_partition_path", "_hoodie_file_name")
"""Columns with few distinct values per base file: the only ones worth a dictionary page."""


def log_block_parquet(table: pa.Table) -> bytes:
    """The content of a parquet log data block holding ``table``."""
    sink = pa.BufferOutputStream()
    pq.write_table(
        table, sink, compression=COMPRESSION, use_dictionary=False, write_statistics=False
    )
    return sink.getvalue().to_pybytes()


def base_file_parquet(table: pa.Table) -> bytes:
    """The bytes of a base file holding ``table``."""
    sink = pa.BufferOutputStream()
    dictionary = [c for c in DICTIONARY_COLUMNS if c in table.column_names]
    pq.write_table(table, sink, compression=COMPRESSION, use_dictionary=dictionary or False)
    return sink.getvalue().to_pybytes()


def read_parquet(data: bytes | pa.Buffer, columns: Sequence[str] | None = None) -> pa.Table:
    """The rows of a parquet file held in memory (all columns, or ``columns``).

    String columns are checked to hold UTF-8, as the parquet format's STRING type requires:
    the reader does not check it, and a damaged page would otherwise surface as undecodable
    strings far from the file (``pyarrow.ArrowInvalid`` here, naming the column)."""
    rows = pq.ParquetFile(pa.BufferReader(data)).read(
        columns=list(columns) if columns is not None else None, use_threads=False
    )
    for name, column in zip(rows.column_names, rows.columns, strict=True):
        if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
            try:
                column.validate(full=True)
            except pa.ArrowInvalid as err:
                raise pa.ArrowInvalid(f"column {name!r} holds invalid UTF-8: {err}") from None
    return rows
