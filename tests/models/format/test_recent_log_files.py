"""Freshly written log files answered without decoding (models/format/recent_log_files.py)."""

from __future__ import annotations

import pyarrow as pa

from models.format import recent_log_files
from models.format.arrow_to_avro import avro_schema_for
from models.format.log_blocks import DataBlock, DeleteBlock
from models.format.log_reader import read_log_blocks
from models.format.log_writer import write_log_blocks


def _parquet_block(n: int, *, ts_type: pa.DataType | None = None) -> DataBlock:
    records = pa.table(
        {
            "_hoodie_record_key": pa.array([f"k{i}" for i in range(n)]),
            "ts": pa.array(range(n), ts_type or pa.int64()),
            "flag": pa.array([i % 2 == 0 for i in range(n)]),
        }
    )
    chunked = pa.concat_tables([records.slice(0, n // 2), records.slice(n // 2)])
    schema = avro_schema_for(records.schema, "t_record", "hoodie.t")
    return DataBlock("20250101000000001", schema, chunked, "parquet", extra_header={7: "x"})


def test_a_just_written_log_reads_back_as_a_fresh_decode_would() -> None:
    blocks = [_parquet_block(40), _parquet_block(3)]
    data = write_log_blocks(blocks)
    remembered = read_log_blocks(data)
    decoded = read_log_blocks(bytearray(data))  # not bytes: always decoded
    assert remembered == decoded
    for got, fresh in zip(remembered, decoded, strict=True):
        assert got.records.schema == fresh.records.schema
        assert [c.num_chunks for c in got.records.columns] == [
            c.num_chunks for c in fresh.records.columns
        ]
    assert read_log_blocks(bytes(bytearray(data))) == decoded  # equal bytes, any object


def test_only_plain_parquet_data_blocks_are_remembered() -> None:
    with_delete = [
        _parquet_block(4),
        DeleteBlock(
            "20250101000000001",
            pa.table({"record_key": ["k1"], "partition_path": [""], "ordering_value": [None]}),
        ),
    ]
    data = write_log_blocks(with_delete)
    assert data not in recent_log_files._recently_written
    assert read_log_blocks(data) == read_log_blocks(bytearray(data))
    timestamps = write_log_blocks([_parquet_block(4, ts_type=pa.timestamp("us"))])
    assert timestamps not in recent_log_files._recently_written
    plain = write_log_blocks([_parquet_block(5)])
    assert plain in recent_log_files._recently_written


def test_remembered_logs_are_bounded() -> None:
    for n in range(recent_log_files.RECENTLY_WRITTEN_FILES + 5):
        write_log_blocks([_parquet_block(n % 7 + 1, ts_type=pa.int32())])
    assert len(recent_log_files._recently_written) <= recent_log_files.RECENTLY_WRITTEN_FILES
