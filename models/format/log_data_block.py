"""Content of log data blocks: Avro records and parquet files.

AVRO_DATA_BLOCK (3), ``HoodieAvroDataBlock.serializeRecords``: int32 content version (the static
``HoodieLogBlock.version``: 3 in every fixture, and the only value hudi-rs accepts), int32 record
count, then per record int32 length and the Avro binary encoding of the record with the
header's SCHEMA (``GenericDatumWriter``, no container-file framing).

PARQUET_DATA_BLOCK (5), ``HoodieParquetDataBlock``: the bytes of a complete parquet file
(gzip-compressed by Hudi's default ``hoodie.parquet.compression.codec`` in the fixture; this
writer uses snappy, see :mod:`models.format.parquet_files`).
"""

from __future__ import annotations

import io
from typing import Any

import fastavro
import pyarrow as pa

from models.format.avro_arrow import codec_for
from models.format.avro_to_arrow import AvroArrowError
from models.format.log_blocks import DataBlock, RawLogBlock
from models.format.log_format import BLOCK_CONTENT_VERSION, INT32, Cursor, LogFormatError
from models.format.parquet_files import log_block_parquet, read_parquet


def decode_avro_records(raw: RawLogBlock, schema: str) -> pa.Table:
    where = f"Avro data block at byte {raw.offset}"
    try:
        codec = codec_for(schema)
    except AvroArrowError as exc:
        raise LogFormatError(f"{where}: unusable SCHEMA header: {exc}", raw.offset) from exc
    content = raw.content
    cur = Cursor(content, 0, len(content), where)
    base = raw.content_offset
    version = cur.int32("content version")
    if not 1 <= version <= BLOCK_CONTENT_VERSION:
        # HoodieAvroDataBlockVersion.hasRecordCount is true for every version, so versions 1-3
        # share this layout (Hudi itself accepts any value here; hudi-rs insists on 3).
        raise LogFormatError(f"{where}: unknown Avro data block content version {version}", base)
    count = cur.int32("record count")
    if count < 0:
        raise LogFormatError(f"{where}: negative record count {count}", base + 4)
    buffer = io.BytesIO(content)
    records: list[dict[str, Any]] = []
    reader = fastavro.schemaless_reader
    parsed = codec.parsed_schema
    for i in range(count):
        length_pos = cur.pos
        length = cur.int32(f"length of record {i}")
        if length < 0 or cur.pos + length > cur.end:
            raise LogFormatError(
                f"{where}: record {i} of {count} claims {length} bytes, {cur.end - cur.pos} remain",
                base + length_pos,
            )
        buffer.seek(cur.pos)
        try:
            record = reader(buffer, parsed, None)
        except Exception as exc:  # fastavro raises EOFError, ValueError, IndexError, ...
            raise LogFormatError(
                f"{where}: record {i} is not valid Avro for the block's schema: {exc!r}",
                base + cur.pos,
            ) from exc
        if buffer.tell() != cur.pos + length:
            raise LogFormatError(
                f"{where}: record {i} decodes to {buffer.tell() - cur.pos} bytes but its "
                f"length prefix says {length}",
                base + cur.pos,
            )
        records.append(record)
        cur.pos += length
    if cur.pos != cur.end:
        raise LogFormatError(
            f"{where}: {cur.end - cur.pos} bytes follow the last of {count} records", base + cur.pos
        )
    try:
        return codec.to_table(records)
    except AvroArrowError as exc:
        raise LogFormatError(f"{where}: {exc}", raw.offset) from exc


def encode_avro_records(block: DataBlock) -> bytes:
    codec = codec_for(block.schema)
    records = codec.to_records(block.records)
    buffer = io.BytesIO()
    ends: list[int] = []
    writer = fastavro.schemaless_writer
    parsed = codec.parsed_schema
    for record in records:
        try:
            writer(buffer, parsed, record, strict=True)
        except Exception as exc:  # fastavro raises ValueError, TypeError, KeyError, ...
            raise AvroArrowError(f"record {len(ends)} cannot be encoded: {exc!r}") from exc
        ends.append(buffer.tell())
    encoded = buffer.getbuffer()
    parts = [INT32.pack(BLOCK_CONTENT_VERSION), INT32.pack(len(records))]
    start = 0
    for end in ends:
        parts += [INT32.pack(end - start), bytes(encoded[start:end])]
        start = end
    return b"".join(parts)


# --------------------------------------------------------------------------------------------
# Parquet data block content
# --------------------------------------------------------------------------------------------


def decode_parquet(raw: RawLogBlock) -> pa.Table:
    try:
        return read_parquet(raw.content)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise LogFormatError(
            f"parquet data block at byte {raw.offset}: content is not a parquet file: {exc}",
            raw.content_offset,
        ) from exc


def encode_parquet(block: DataBlock) -> bytes:
    return log_block_parquet(block.records)
