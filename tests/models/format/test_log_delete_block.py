"""Delete block content (models/format/log_delete_block.py): Hudi's ordering-value wrappers byte
for byte, widening to the wrapper types, and what one block may not mix."""

from __future__ import annotations

import datetime as dt
import struct
from decimal import Decimal

import pyarrow as pa
import pytest

from models.format.log_blocks import DeleteBlock, delete_keys_schema
from models.format.log_reader import read_log_blocks, read_log_frames
from models.format.log_writer import encode_block

ORDERING_CASES: list[tuple[pa.Array, bytes]] = [
    (pa.array([True], pa.bool_()), b"\x02\x01"),
    (pa.array([0], pa.int32()), b"\x04\x00"),
    (pa.array([4000], pa.int64()), b"\x06\xc0\x3e"),
    (pa.array([1.5], pa.float32()), b"\x08" + struct.pack("<f", 1.5)),
    (pa.array([-2.25], pa.float64()), b"\x0a" + struct.pack("<d", -2.25)),
    (pa.array([b"ab"], pa.binary()), b"\x0c\x04ab"),
    (pa.array(["ab"], pa.string()), b"\x0e\x04ab"),
    (pa.array([dt.date(1970, 1, 3)], pa.date32()), b"\x10\x04"),
    (pa.array([Decimal("0.000000000000001")], pa.decimal128(30, 15)), b"\x12\x02\x01"),
    (pa.array([2], pa.time64("us")), b"\x14\x04"),
    (pa.array([1], pa.timestamp("us", tz="UTC")), b"\x16\x02"),
    (pa.array([None], pa.int64()), b"\x00"),
]


@pytest.mark.parametrize(("ordering", "avro_bytes"), ORDERING_CASES)
def test_delete_block_ordering_wrappers(ordering: pa.Array, avro_bytes: bytes) -> None:
    """Each ordering type picks its wrapper's union branch (HoodieDeleteRecordList.avsc order)."""
    keys = pa.table({"record_key": ["k"], "partition_path": ["p"], "ordering_value": ordering})
    block = DeleteBlock(instant_time="20240101000000000", keys=keys)
    raw = read_log_frames(encode_block(block))[0]
    record = b"\x02\x02\x02k\x02\x02p" + avro_bytes + b"\x00"  # 1 item: key, partition, ordering
    assert raw.content == struct.pack(">ii", 3, len(record)) + record
    (back,) = read_log_blocks(encode_block(block))
    assert isinstance(back, DeleteBlock)
    expected_type = pa.null() if ordering.null_count == len(ordering) else ordering.type
    assert back.keys.schema == delete_keys_schema(expected_type)
    assert back.keys.column("ordering_value").to_pylist() == ordering.to_pylist()


def test_delete_block_bytes_match_hudi_encoding() -> None:
    """Two LongWrapper deletes encode as Hudi writes them (hudi-rs PR #663 quotes these bytes)."""
    keys = pa.table(
        {
            "record_key": ["4", "3"],
            "partition_path": ["", ""],
            "ordering_value": pa.array([4000, 3000], pa.int64()),
        }
    )
    raw = read_log_frames(encode_block(DeleteBlock("20240101000000000", keys)))[0]
    expected = bytes.fromhex("04 020234 0200 06c03e 020233 0200 06f02e 00")
    assert raw.content == struct.pack(">ii", 3, len(expected)) + expected


def test_delete_block_widening_and_mixed_types() -> None:
    keys = pa.table(
        {
            "record_key": ["a", "b"],
            "partition_path": ["p", None],
            "ordering_value": pa.array([Decimal("1.5"), None], pa.decimal128(5, 1)),
        }
    )
    (back,) = read_log_blocks(encode_block(DeleteBlock("20240101000000000", keys)))
    assert isinstance(back, DeleteBlock)
    assert back.keys.column("ordering_value").type == pa.decimal128(30, 15)
    assert back.keys.column("ordering_value").to_pylist() == [Decimal("1.5"), None]
    assert back.keys.column("partition_path").to_pylist() == ["p", None]
    with pytest.raises(ValueError, match="no Hudi ordering wrapper"):
        encode_block(
            DeleteBlock(
                "20240101000000000",
                keys.set_column(2, "ordering_value", pa.array([[1], None], pa.list_(pa.int8()))),
            )
        )
