"""Parquet settings of data files (models/format/parquet_files.py): what each kind of file is written
with, and that every kind reads back to the same rows (also through pyarrow's general reader)."""

from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.parquet as pq

from models.format.bloom_filter import DynamicBloomFilter
from models.format.parquet_files import (
    BLOOM_FILTER_METADATA_KEY,
    BLOOM_FILTER_TYPE_CODE_KEY,
    MAX_RECORD_KEY_FOOTER,
    MIN_RECORD_KEY_FOOTER,
    base_file_parquet,
    footer_metadata,
    log_block_parquet,
    read_parquet,
)


def rows(n: int = 50) -> pa.Table:
    return pa.table(
        {
            "_hoodie_commit_time": ["20250101000000123"] * n,
            "_hoodie_record_key": [f"k{i:08d}" for i in range(n)],
            "_hoodie_partition_path": ["part=p0"] * n,
            "_hoodie_file_name": ["f.parquet"] * n,
            "ts": pa.array(range(n), pa.int64()),
            "job": pa.array([1] * n, pa.int32()),
        }
    )


def column_chunks(data: bytes) -> dict[str, pq.ColumnChunkMetaData]:
    meta = pq.ParquetFile(io.BytesIO(data)).metadata
    group = meta.row_group(0)
    return {group.column(i).path_in_schema: group.column(i) for i in range(group.num_columns)}


def test_log_blocks_are_snappy_without_dictionaries_or_statistics():
    data = log_block_parquet(rows())
    for chunk in column_chunks(data).values():
        assert chunk.compression == "SNAPPY"
        assert not chunk.is_stats_set
        assert not chunk.has_dictionary_page
    assert read_parquet(data).equals(rows())
    assert pq.read_table(io.BytesIO(data)).equals(rows())


def test_base_files_keep_statistics_and_dictionaries_only_for_meta_columns():
    data = base_file_parquet(rows())
    chunks = column_chunks(data)
    assert {c.compression for c in chunks.values()} == {"SNAPPY"}
    assert all(c.is_stats_set for c in chunks.values())
    with_dictionary = {name for name, c in chunks.items() if c.has_dictionary_page}
    assert with_dictionary == {
        "_hoodie_commit_time",
        "_hoodie_partition_path",
        "_hoodie_file_name",
    }
    assert read_parquet(data).equals(rows())


def test_base_file_without_meta_columns_and_column_subset():
    plain = rows().drop_columns(["_hoodie_commit_time", "_hoodie_partition_path"])
    plain = plain.drop_columns(["_hoodie_file_name"])
    data = base_file_parquet(plain)
    assert not any(c.has_dictionary_page for c in column_chunks(data).values())
    assert read_parquet(data, ["ts"]).column_names == ["ts"]
    assert read_parquet(data).equals(plain)


def test_a_base_file_footer_carries_hudis_bloom_filter_and_key_range():
    table = rows(50).take(list(range(49, -1, -1)))  # written from the greatest key down
    footer = footer_metadata(base_file_parquet(table))
    assert footer[BLOOM_FILTER_TYPE_CODE_KEY] == "DYNAMIC_V0"
    assert (footer[MIN_RECORD_KEY_FOOTER], footer[MAX_RECORD_KEY_FOOTER]) == (
        "k00000000",
        "k00000049",
    )
    bloom = DynamicBloomFilter.from_string(footer[BLOOM_FILTER_METADATA_KEY])
    assert all(bloom.might_contain(f"k{i:08d}") for i in range(50))
    assert not any(bloom.might_contain(f"k{i:08d}") for i in range(50, 1050))


def test_an_empty_base_file_has_a_filter_but_no_key_range():
    footer = footer_metadata(base_file_parquet(rows(0)))
    assert BLOOM_FILTER_METADATA_KEY in footer
    assert MIN_RECORD_KEY_FOOTER not in footer and MAX_RECORD_KEY_FOOTER not in footer


def test_reading_a_base_file_leaves_the_footer_out_of_the_schema():
    """A table read back and written again does not carry the old file's filter."""
    read = read_parquet(base_file_parquet(rows()))
    assert read.schema.metadata is None
    again = footer_metadata(base_file_parquet(read.slice(0, 3)))
    bloom = DynamicBloomFilter.from_string(again[BLOOM_FILTER_METADATA_KEY])
    assert bloom.might_contain("k00000002") and not bloom.might_contain("k00000003")
