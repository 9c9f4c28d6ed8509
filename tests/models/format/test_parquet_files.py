"""Parquet settings of data files (models/format/parquet_files.py): what each kind of file is written
with, and that every kind reads back to the same rows (also through pyarrow's general reader)."""

from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.parquet as pq

from models.format.parquet_files import base_file_parquet, log_block_parquet, read_parquet


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
