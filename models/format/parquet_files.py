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
import pyarrow.compute as pc
import pyarrow.parquet as pq

from models.format.bloom_filter import TYPE_CODE, DynamicBloomFilter

COMPRESSION = "snappy"
DICTIONARY_COLUMNS = ("_hoodie_commit_time", "_hoodie_partition_path", "_hoodie_file_name")
"""Columns with few distinct values per base file: the only ones worth a dictionary page."""
RECORD_KEY = "_hoodie_record_key"
BLOOM_FILTER_METADATA_KEY = "org.apache.hudi.bloomfilter"
"""``HoodieBloomFilterWriteSupport.HOODIE_AVRO_BLOOM_FILTER_METADATA_KEY``."""
BLOOM_FILTER_TYPE_CODE_KEY = "hoodie_bloom_filter_type_code"
MIN_RECORD_KEY_FOOTER = "hoodie_min_record_key"
MAX_RECORD_KEY_FOOTER = "hoodie_max_record_key"


def log_block_parquet(table: pa.Table) -> bytes:
    """The content of a parquet log data block holding ``table``."""
    sink = pa.BufferOutputStream()
    pq.write_table(
        table, sink, compression=COMPRESSION, use_dictionary=False, write_statistics=False
    )
    return sink.getvalue().to_pybytes()


def base_file_parquet(table: pa.Table) -> bytes:
    """The bytes of a base file holding ``table``, its footer carrying the record keys' bloom
    filter and min/max key as Hudi's writers put them (:func:`bloom_footer`)."""
    sink = pa.BufferOutputStream()
    dictionary = [c for c in DICTIONARY_COLUMNS if c in table.column_names]
    with pq.ParquetWriter(
        sink, table.schema, compression=COMPRESSION, use_dictionary=dictionary or False
    ) as writer:
        writer.write_table(table)
        if RECORD_KEY in table.column_names:
            writer.add_key_value_metadata(bloom_footer(table.column(RECORD_KEY)))
    return sink.getvalue().to_pybytes()


def bloom_footer(record_keys: pa.ChunkedArray) -> dict[str, str]:
    """``HoodieBloomFilterWriteSupport#finalizeMetadata`` for a file of ``record_keys`` (in write
    order): the serialized filter, its type code (written for ``DYNAMIC`` types only), and the
    least and greatest key. Keys compare as the Flink row-data writer's ``StringData`` do, by
    their UTF-8 bytes."""
    keys = record_keys.combine_chunks() if record_keys.num_chunks else pa.array([], pa.string())
    footer = {
        BLOOM_FILTER_METADATA_KEY: DynamicBloomFilter.of_keys(keys).serialize_to_string(),
        BLOOM_FILTER_TYPE_CODE_KEY: TYPE_CODE,
    }
    if len(keys):
        bounds = pc.min_max(keys.cast(pa.binary()))
        footer[MIN_RECORD_KEY_FOOTER] = bounds["min"].as_py().decode()
        footer[MAX_RECORD_KEY_FOOTER] = bounds["max"].as_py().decode()
    return footer


def footer_metadata(data: bytes | pa.Buffer) -> dict[str, str]:
    """The key-value metadata of a parquet file's footer (Hudi's keys among them)."""
    metadata = pq.ParquetFile(pa.BufferReader(data)).metadata.metadata or {}
    return {key.decode(): value.decode() for key, value in metadata.items()}


def read_parquet(data: bytes | pa.Buffer, columns: Sequence[str] | None = None) -> pa.Table:
    """The rows of a parquet file held in memory (all columns, or ``columns``).

    Hudi's footer entries are left out of the schema's metadata (the filter alone is ~430 kB,
    and a table written again would carry it). String columns are checked to hold UTF-8, as the parquet format's STRING type requires:
    the reader does not check it, and a damaged page would otherwise surface as undecodable
    strings far from the file (``pyarrow.ArrowInvalid`` here, naming the column)."""
    rows = pq.ParquetFile(pa.BufferReader(data)).read(
        columns=list(columns) if columns is not None else None, use_threads=False
    )
    if rows.schema.metadata and BLOOM_FILTER_METADATA_KEY.encode() in rows.schema.metadata:
        rows = rows.replace_schema_metadata(_without_hudi_footer(rows.schema.metadata))
    for name, column in zip(rows.column_names, rows.columns, strict=True):
        if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
            try:
                column.validate(full=True)
            except pa.ArrowInvalid as err:
                raise pa.ArrowInvalid(f"column {name!r} holds invalid UTF-8: {err}") from None
    return rows


def _without_hudi_footer(metadata: dict[bytes, bytes]) -> dict[bytes, bytes] | None:
    hudi = {
        key.encode()
        for key in (
            BLOOM_FILTER_METADATA_KEY,
            BLOOM_FILTER_TYPE_CODE_KEY,
            MIN_RECORD_KEY_FOOTER,
            MAX_RECORD_KEY_FOOTER,
        )
    }
    return {key: value for key, value in metadata.items() if key not in hudi} or None
