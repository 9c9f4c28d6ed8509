"""Hudi log files: the block format of merge-on-read delta files (table versions 6, 8 and 9).

A log file (``.<fileId>_<instant>.log.<version>_<writeToken>``, docs/protocol.md section 3) is a
sequence of blocks; a writer only ever appends whole blocks. This module reads a log file body
into typed blocks and writes typed blocks back into bytes that Hudi (Java) and hudi-rs accept.

Block layout, all integers big-endian (``HoodieLogFormatWriter.appendBlocks``, read back by
``HoodieLogFileReader.readBlock``; the same in every fixture written by Hudi 0.15, 1.0 and 1.1)::

    magic            6 bytes  "#HUDI#"                   (HoodieLogFormat.MAGIC)
    block length     int64    bytes after this field, trailer included
    format version   int32    1                          (HoodieLogFormat.CURRENT_VERSION)
    block type       int32    HoodieLogBlockType ordinal (see BlockType)
    header           int32 count, then per entry: int32 key (HeaderMetadataType ordinal),
                     int32 length, UTF-8 bytes
    content length   int64
    content          bytes    (per block type, below)
    footer           same map encoding; always empty (FooterMetadataType has no members)
    trailer          int64    every byte of the block before the trailer, magic included,
                              i.e. block length + 6 (HoodieLogFileReader.isBlockCorrupted checks
                              "trailer - 6 == block length" and then expects magic or EOF)

Format version 0 (pre-header legacy) and unknown versions are rejected: no table this testbed
reads has them (HoodieLogFormatVersion: only version 1 has a footer and a trailer).

Content per block type (ordinal of ``HoodieLogBlock.HoodieLogBlockType``; note 2 is
CORRUPT_BLOCK, not the command block, which is 0):

* AVRO_DATA_BLOCK (3), ``HoodieAvroDataBlock.serializeRecords``: int32 content version (the static
  ``HoodieLogBlock.version``: 3 in every fixture, and the only value hudi-rs accepts), int32 record
  count, then per record int32 length and the Avro binary encoding of the record with the
  header's SCHEMA (``GenericDatumWriter``, no container-file framing).
* PARQUET_DATA_BLOCK (5), ``HoodieParquetDataBlock``: the bytes of a complete parquet file
  (gzip-compressed by Hudi's default ``hoodie.parquet.compression.codec`` in the fixture; this
  writer uses snappy, see :mod:`models.format.parquet_files`).
* DELETE_BLOCK (1), ``HoodieDeleteBlock``: int32 content version, int32 length, then for version 3
  the Avro binary of a ``HoodieDeleteRecordList`` (``deleteRecordList``: array of records
  ``recordKey``/``partitionPath`` (nullable strings) and ``orderingVal``). Versions 1-2 are Java
  (Kryo) serialized objects and are refused with :class:`UnsupportedLogBlockError`.
  ``orderingVal`` is a union of null and *wrapper records* (``HoodieAvroWrapperUtils
  .wrapValueIntoAvro``; schema ``HoodieDeleteRecordList.avsc``, wrappers from
  ``HoodieMetadata.avsc``)::

      0 null   1 BooleanWrapper  2 IntWrapper   3 LongWrapper  4 FloatWrapper  5 DoubleWrapper
      6 BytesWrapper  7 StringWrapper  8 DateWrapper (epoch days)  9 DecimalWrapper (bytes,
      decimal(30,15))  10 TimeMicrosWrapper  11 TimestampMicrosWrapper  [12 ArrayWrapper, 1.1+]

  A SQL ``DELETE`` writes IntWrapper 0 (``DEFAULT_ORDERING_VALUE``): bytes ``04 00`` in every
  fixture. (Some hudi-rs sources declare this union as ``null, int, long, float, ...``, which reads
  IntWrapper 0 as long 0 but misaligns other branches, hudi-rs PR #663; the ``hudi`` 0.5.0 package
  used as the test oracle reads LongWrapper values correctly, see tests/models/test_logfile.py.)
* COMMAND_BLOCK (0), ``HoodieCommandBlock``: empty content; header COMMAND_BLOCK_TYPE = "0"
  (ROLLBACK_BLOCK, the only command) and TARGET_INSTANT_TIME = the instant whose blocks it
  rolls back; INSTANT_TIME is the rollback's own instant (hudi-rs fixture ``valid_log_rollback``).
  Readers drop the blocks whose INSTANT_TIME equals the target: Hudi's log record reader
  (``scanInternalV1``: ``removeIf`` over the blocks read so far, across the slice's log files;
  ``scanInternalV2``: every block of the target instant; 0.x releases only popped the immediately
  preceding blocks), and hudi-rs ``LogFileScanner`` (every block of the slice, whatever the
  command block's own instant). Table version 8+ rolls back by deleting the failed instant's log
  files instead.
* HFILE_DATA_BLOCK (4, metadata table), CDC_DATA_BLOCK (6): recognized, refused with
  :class:`UnsupportedLogBlockError`; :func:`read_log_frames` still lists them.

Header keys (``HeaderMetadataType`` ordinals): 0 INSTANT_TIME, 1 TARGET_INSTANT_TIME, 2 SCHEMA,
3 COMMAND_BLOCK_TYPE, 4 COMPACTED_BLOCK_TIMES, 5 RECORD_POSITIONS, 6 BLOCK_IDENTIFIER,
7 IS_PARTIAL, 8 BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS. Keys a typed block does not model are
kept in its ``extra_header`` so a rewrite loses nothing. Hudi writes the header from a Java
``HashMap``, so the on-disk entry order varies between files (both ``0,2`` and ``2,0`` occur in the
fixtures); this writer emits keys in ascending order.
"""

from __future__ import annotations

import io
import struct
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import IntEnum
from types import MappingProxyType
from typing import Any, Literal

import fastavro
import pyarrow as pa

from models.format.avro_arrow import AvroArrowError, codec_for
from models.format.parquet_files import log_block_parquet, read_parquet

__all__ = [
    "MAGIC",
    "BlockType",
    "CommandBlock",
    "DataBlock",
    "DeleteBlock",
    "HeaderKey",
    "LogBlock",
    "LogFormatError",
    "RawLogBlock",
    "UnsupportedLogBlockError",
    "decode_block",
    "delete_keys_schema",
    "encode_block",
    "read_log_blocks",
    "read_log_blocks_skipping_corrupt",
    "read_log_frames",
    "write_log_blocks",
]

MAGIC = b"#HUDI#"
LOG_FORMAT_VERSION = 1
# HoodieLogBlock.version: the content version of Avro data and delete blocks Hudi writes.
BLOCK_CONTENT_VERSION = 3
ROLLBACK_COMMAND = "0"  # HoodieCommandBlock.HoodieCommandBlockTypeEnum.ROLLBACK_BLOCK ordinal

_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
# version, type, header count, content length, footer count, trailer
_MIN_BLOCK_LENGTH = 4 + 4 + 4 + 8 + 4 + 8


class BlockType(IntEnum):
    """``HoodieLogBlock.HoodieLogBlockType``, written as its ordinal."""

    COMMAND = 0
    DELETE = 1
    CORRUPT = 2
    AVRO_DATA = 3
    HFILE_DATA = 4
    PARQUET_DATA = 5
    CDC_DATA = 6


class HeaderKey(IntEnum):
    """``HoodieLogBlock.HeaderMetadataType``, written as its ordinal."""

    INSTANT_TIME = 0
    TARGET_INSTANT_TIME = 1
    SCHEMA = 2
    COMMAND_BLOCK_TYPE = 3
    COMPACTED_BLOCK_TIMES = 4
    RECORD_POSITIONS = 5
    BLOCK_IDENTIFIER = 6
    IS_PARTIAL = 7
    BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS = 8


class LogFormatError(ValueError):
    """Log file bytes that are corrupt, truncated or not a Hudi log file.

    ``offset`` is the absolute byte offset (in the data given to the reader) of the problem, so a
    caller can tell a torn last block (Hudi's readers skip it as a corrupt block) from damage in
    the middle of a file.
    """

    def __init__(self, message: str, offset: int | None = None) -> None:
        self.offset = offset
        self.message = message
        super().__init__(message if offset is None else f"{message} (at byte {offset})")


class UnsupportedLogBlockError(LogFormatError, NotImplementedError):
    """Valid Hudi log content this module does not decode (HFile/CDC blocks, Kryo deletes, ...)."""


# --------------------------------------------------------------------------------------------
# Typed blocks
# --------------------------------------------------------------------------------------------


def _frozen_map(value: Mapping[int, str]) -> Mapping[int, str]:
    return MappingProxyType({int(k): str(v) for k, v in value.items()})


def _check_extra_header(extra: Mapping[int, str], modelled: Sequence[HeaderKey]) -> None:
    clash = sorted(int(k) for k in extra if int(k) in {int(m) for m in modelled})
    if clash:
        raise ValueError(f"extra_header repeats keys modelled as fields: {clash}")


@dataclass(frozen=True)
class DataBlock:
    """Records written by one instant: an Avro data block or a parquet data block.

    ``schema`` is the Avro writer schema (JSON) from header key SCHEMA; Avro blocks are encoded
    with it, and for parquet blocks Hudi stores it too. ``records`` is the Arrow table of the
    records (for Avro blocks its schema is ``arrow_schema_for(schema)``).
    """

    instant_time: str
    schema: str
    records: pa.Table
    format: Literal["avro", "parquet"] = "avro"
    extra_header: Mapping[int, str] = field(default_factory=dict)
    footer: Mapping[int, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.format not in ("avro", "parquet"):
            raise ValueError(f"data block format must be 'avro' or 'parquet', got {self.format!r}")
        if not isinstance(self.records, pa.Table):
            raise TypeError("DataBlock.records must be a pyarrow.Table")
        _check_extra_header(self.extra_header, (HeaderKey.INSTANT_TIME, HeaderKey.SCHEMA))
        object.__setattr__(self, "extra_header", _frozen_map(self.extra_header))
        object.__setattr__(self, "footer", _frozen_map(self.footer))

    @property
    def header(self) -> dict[int, str]:
        """The complete header map this block is written with."""
        return {HeaderKey.INSTANT_TIME: self.instant_time, HeaderKey.SCHEMA: self.schema} | dict(
            self.extra_header
        )


def delete_keys_schema(ordering_type: pa.DataType | None = None) -> pa.Schema:
    """Schema of :attr:`DeleteBlock.keys` for ordering values of ``ordering_type`` (default null)."""
    if ordering_type is None:
        ordering_type = pa.null()
    return pa.schema(
        [
            pa.field("record_key", pa.string()),
            pa.field("partition_path", pa.string()),
            pa.field("ordering_value", ordering_type),
        ]
    )


@dataclass(frozen=True)
class DeleteBlock:
    """Keys deleted by one instant.

    ``keys`` has columns ``record_key`` (string), ``partition_path`` (string) and
    ``ordering_value``. The Arrow type of ``ordering_value`` is the wrapper type Hudi wrote:
    bool, int32 (IntWrapper; a SQL DELETE writes int32 0), int64, float32, float64, binary,
    string, date32, decimal128(30, 15), time64[us] or timestamp[us, tz=UTC]; ``null`` when the
    block is empty or every value is null. When writing, other widths are cast to the nearest of
    these (int8/16 -> int32, other decimals -> decimal(30, 15), timestamps -> us). One block must
    use one ordering type (Hudi compares ordering values of one field).

    ``schema`` is the data schema Hudi's append handle also puts into delete block headers
    (``None`` when absent, as in metadata-table delete blocks).
    """

    instant_time: str
    keys: pa.Table
    schema: str | None = None
    extra_header: Mapping[int, str] = field(default_factory=dict)
    footer: Mapping[int, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.keys, pa.Table):
            raise TypeError("DeleteBlock.keys must be a pyarrow.Table")
        missing = {"record_key", "partition_path", "ordering_value"} - set(self.keys.column_names)
        if missing:
            raise ValueError(f"DeleteBlock.keys lacks columns {sorted(missing)}")
        _check_extra_header(self.extra_header, (HeaderKey.INSTANT_TIME, HeaderKey.SCHEMA))
        object.__setattr__(self, "extra_header", _frozen_map(self.extra_header))
        object.__setattr__(self, "footer", _frozen_map(self.footer))

    @property
    def header(self) -> dict[int, str]:
        """The complete header map this block is written with."""
        header: dict[int, str] = {HeaderKey.INSTANT_TIME: self.instant_time}
        if self.schema is not None:
            header[HeaderKey.SCHEMA] = self.schema
        return header | dict(self.extra_header)


@dataclass(frozen=True)
class CommandBlock:
    """A rollback command: readers drop the blocks whose instant time is ``target_instant_time``.

    ``instant_time`` is the instant of the rollback action that appended it.
    """

    instant_time: str
    target_instant_time: str
    extra_header: Mapping[int, str] = field(default_factory=dict)
    footer: Mapping[int, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _check_extra_header(
            self.extra_header,
            (HeaderKey.INSTANT_TIME, HeaderKey.TARGET_INSTANT_TIME, HeaderKey.COMMAND_BLOCK_TYPE),
        )
        object.__setattr__(self, "extra_header", _frozen_map(self.extra_header))
        object.__setattr__(self, "footer", _frozen_map(self.footer))

    @property
    def header(self) -> dict[int, str]:
        """The complete header map this block is written with."""
        return {
            HeaderKey.INSTANT_TIME: self.instant_time,
            HeaderKey.TARGET_INSTANT_TIME: self.target_instant_time,
            HeaderKey.COMMAND_BLOCK_TYPE: ROLLBACK_COMMAND,
        } | dict(self.extra_header)


LogBlock = DataBlock | DeleteBlock | CommandBlock


@dataclass(frozen=True)
class RawLogBlock:
    """One block's framing, content not decoded: enough to list instants without parsing records.

    ``offset`` is where the block's magic starts, ``content_offset`` where its content starts.
    """

    offset: int
    block_type: BlockType
    header: Mapping[int, str]
    content: bytes
    footer: Mapping[int, str]
    content_offset: int
    format_version: int = LOG_FORMAT_VERSION

    @property
    def instant_time(self) -> str | None:
        """The INSTANT_TIME header, if present."""
        return self.header.get(HeaderKey.INSTANT_TIME)


# --------------------------------------------------------------------------------------------
# Framing
# --------------------------------------------------------------------------------------------


class _Cursor:
    """Bounds-checked big-endian reads over ``data[pos:end]`` with errors naming the field."""

    def __init__(self, data: bytes | memoryview, pos: int, end: int, where: str) -> None:
        self.data = data
        self.pos = pos
        self.end = end
        self.where = where

    def _need(self, n: int, what: str) -> None:
        if n < 0 or self.pos + n > self.end:
            raise LogFormatError(
                f"{self.where}: {what} needs {n} bytes but only {self.end - self.pos} remain",
                self.pos,
            )

    def int32(self, what: str) -> int:
        self._need(4, what)
        (value,) = _I32.unpack_from(self.data, self.pos)
        self.pos += 4
        return int(value)

    def int64(self, what: str) -> int:
        self._need(8, what)
        (value,) = _I64.unpack_from(self.data, self.pos)
        self.pos += 8
        return int(value)

    def take(self, n: int, what: str) -> bytes:
        self._need(n, what)
        chunk = bytes(self.data[self.pos : self.pos + n])
        self.pos += n
        return chunk

    def metadata(self, what: str) -> dict[int, str]:
        """A header/footer map (HoodieLogBlock.getLogMetadata)."""
        start = self.pos
        count = self.int32(f"{what} entry count")
        if count < 0:
            raise LogFormatError(f"{self.where}: negative {what} entry count {count}", start)
        entries: dict[int, str] = {}
        for _ in range(count):
            key_pos = self.pos
            key = self.int32(f"{what} key")
            length = self.int32(f"{what} value length")
            if length < 0:
                raise LogFormatError(f"{self.where}: negative {what} value length", key_pos + 4)
            raw = self.take(length, f"{what} value of key {key}")
            if key in entries:
                raise LogFormatError(f"{self.where}: {what} key {key} appears twice", key_pos)
            try:
                entries[key] = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise LogFormatError(
                    f"{self.where}: {what} value of key {key} is not UTF-8", key_pos + 8
                ) from exc
        return entries


def _iter_frames(data: bytes | memoryview) -> Iterator[RawLogBlock]:
    view = memoryview(data)
    total = len(view)
    offset = 0
    index = 0
    while offset < total:
        where = f"block {index}"
        if total - offset < len(MAGIC):
            raise LogFormatError(
                f"{where}: {total - offset} trailing bytes are too short for a block", offset
            )
        magic = bytes(view[offset : offset + len(MAGIC)])
        if magic != MAGIC:
            raise LogFormatError(f"{where}: expected magic {MAGIC!r}, found {magic!r}", offset)
        head = _Cursor(view, offset + len(MAGIC), total, where)
        block_length = head.int64("block length")
        body_start = head.pos
        if block_length < _MIN_BLOCK_LENGTH:
            raise LogFormatError(
                f"{where}: block length {block_length} is below the minimum {_MIN_BLOCK_LENGTH}",
                offset + len(MAGIC),
            )
        end = body_start + block_length
        if end > total:
            raise LogFormatError(
                f"{where}: block length {block_length} runs past the end of the data "
                f"({total - body_start} bytes follow the length field; truncated block?)",
                offset + len(MAGIC),
            )
        (trailer,) = _I64.unpack_from(view, end - 8)
        if trailer != block_length + len(MAGIC):
            raise LogFormatError(
                f"{where}: trailer says the block has {trailer} bytes before it, expected "
                f"{block_length + len(MAGIC)} (block length + 6)",
                end - 8,
            )
        cur = _Cursor(view, body_start, end - 8, where)
        version_pos = cur.pos
        version = cur.int32("format version")
        if version != LOG_FORMAT_VERSION:
            error = UnsupportedLogBlockError if version == 0 else LogFormatError
            raise error(
                f"{where}: log format version {version} (only version 1 is supported)",
                version_pos,
            )
        type_pos = cur.pos
        type_ordinal = cur.int32("block type")
        try:
            block_type = BlockType(type_ordinal)
        except ValueError:
            raise LogFormatError(f"{where}: unknown block type {type_ordinal}", type_pos) from None
        header = cur.metadata("header")
        length_pos = cur.pos
        content_length = cur.int64("content length")
        if content_length < 0:
            raise LogFormatError(f"{where}: negative content length {content_length}", length_pos)
        content_offset = cur.pos
        content = cur.take(content_length, "content")
        footer = cur.metadata("footer")
        if cur.pos != cur.end:
            raise LogFormatError(
                f"{where}: {cur.end - cur.pos} bytes between footer and trailer do not belong "
                "to any field (block length disagrees with the lengths inside the block)",
                cur.pos,
            )
        yield RawLogBlock(
            offset=offset,
            block_type=block_type,
            header=MappingProxyType(header),
            content=content,
            footer=MappingProxyType(footer),
            content_offset=content_offset,
            format_version=version,
        )
        offset = end
        index += 1


def _intact_block_end(view: memoryview, offset: int, total: int) -> int | None:
    """End of the block whose magic starts at ``offset`` if its framing is intact as Hudi's
    ``HoodieLogFileReader.isBlockCorrupted`` judges it, else None (a corrupt block): the length is
    readable and at least the smallest block, the block ends within the file, its trailer says
    ``length + 6``, and the next magic or the end of the file (fewer than 6 bytes) follows."""
    start = offset + len(MAGIC)
    if total - start < _I64.size:
        return None
    (block_length,) = _I64.unpack_from(view, start)
    end = start + _I64.size + block_length
    if block_length < _MIN_BLOCK_LENGTH or end > total:
        return None
    (trailer,) = _I64.unpack_from(view, end - _I64.size)
    if trailer != block_length + len(MAGIC):
        return None
    if total - end >= len(MAGIC) and bytes(view[end : end + len(MAGIC)]) != MAGIC:
        return None
    return end


def _next_magic(view: memoryview, start: int, total: int) -> int:
    """Offset of the next magic at or after ``start``, else ``total``
    (``HoodieLogFileReader.scanForNextAvailableBlockOffset``)."""
    found = bytes(view[start:total]).find(MAGIC) if start < total else -1
    return total if found < 0 else start + found


def read_log_blocks_skipping_corrupt(data: bytes | bytearray | memoryview) -> list[LogBlock]:
    """The blocks of a log file as Hudi's log reader yields them to its scanners.

    ``HoodieLogFileReader`` turns a block whose framing is broken (a torn last block, a length or
    trailer that disagree, no magic after it: :func:`_intact_block_end`) and every byte up to the
    next magic into a ``HoodieCorruptBlock``, which ``BaseHoodieLogRecordReader`` skips; fewer
    than 6 bytes at the end are the end of the file (``readMagic``). Anything else stays an error
    as in Hudi: no magic where a block must start (``CorruptedLogFileException``), or a block
    whose framing is intact but whose content does not decode (:class:`LogFormatError`).
    """
    if type(data) is bytes:
        known = _recently_written.get(data)
        if known is not None:
            return list(known)
    view = memoryview(data)
    total = len(view)
    blocks: list[LogBlock] = []
    offset = 0
    while total - offset >= len(MAGIC):
        magic = bytes(view[offset : offset + len(MAGIC)])
        if magic != MAGIC:
            raise LogFormatError(
                f"expected magic {MAGIC!r} at a block start, found {magic!r}", offset
            )
        end = _intact_block_end(view, offset, total)
        if end is None:
            offset = _next_magic(view, offset + len(MAGIC) + _I64.size, total)
            continue
        blocks.append(decode_block(_frame_within(view, offset, end)))
        offset = end
    return blocks


def _frame_within(view: memoryview, offset: int, end: int) -> RawLogBlock:
    """The one block framed in ``view[offset:end]``, its offsets and errors counted in ``view``."""
    try:
        (raw,) = _iter_frames(view[offset:end])
    except LogFormatError as err:
        at = None if err.offset is None else err.offset + offset
        raise type(err)(err.message, at) from None
    return replace(raw, offset=offset, content_offset=raw.content_offset + offset)


def read_log_frames(data: bytes | bytearray | memoryview) -> list[RawLogBlock]:
    """Split a log file body into its blocks without decoding their content.

    Raises :class:`LogFormatError` at the first malformed block; Hudi's own reader would turn it
    (and everything up to the next magic) into a CORRUPT_BLOCK that scanners ignore.
    """
    return list(_iter_frames(data))


def _metadata_bytes(entries: Mapping[int, str]) -> bytes:
    parts = [_I32.pack(len(entries))]
    for key in sorted(entries):
        raw = entries[key].encode("utf-8")
        parts += [_I32.pack(int(key)), _I32.pack(len(raw)), raw]
    return b"".join(parts)


def _frame(
    block_type: BlockType, header: Mapping[int, str], content: bytes, footer: Mapping[int, str]
) -> bytes:
    """One block's bytes, laid out as HoodieLogFormatWriter.appendBlocks does."""
    header_bytes = _metadata_bytes(header)
    footer_bytes = _metadata_bytes(footer)
    block_length = 4 + 4 + len(header_bytes) + 8 + len(content) + len(footer_bytes) + 8
    return b"".join(
        (
            MAGIC,
            _I64.pack(block_length),
            _I32.pack(LOG_FORMAT_VERSION),
            _I32.pack(int(block_type)),
            header_bytes,
            _I64.pack(len(content)),
            content,
            footer_bytes,
            _I64.pack(block_length + len(MAGIC)),
        )
    )


# --------------------------------------------------------------------------------------------
# Avro data block content
# --------------------------------------------------------------------------------------------


def _decode_avro_records(raw: RawLogBlock, schema: str) -> pa.Table:
    where = f"Avro data block at byte {raw.offset}"
    try:
        codec = codec_for(schema)
    except AvroArrowError as exc:
        raise LogFormatError(f"{where}: unusable SCHEMA header: {exc}", raw.offset) from exc
    content = raw.content
    cur = _Cursor(content, 0, len(content), where)
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


def _encode_avro_records(block: DataBlock) -> bytes:
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
    parts = [_I32.pack(BLOCK_CONTENT_VERSION), _I32.pack(len(records))]
    start = 0
    for end in ends:
        parts += [_I32.pack(end - start), bytes(encoded[start:end])]
        start = end
    return b"".join(parts)


# --------------------------------------------------------------------------------------------
# Parquet data block content
# --------------------------------------------------------------------------------------------


def _decode_parquet(raw: RawLogBlock) -> pa.Table:
    try:
        return read_parquet(raw.content)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise LogFormatError(
            f"parquet data block at byte {raw.offset}: content is not a parquet file: {exc}",
            raw.content_offset,
        ) from exc


def _encode_parquet(block: DataBlock) -> bytes:
    return log_block_parquet(block.records)


# --------------------------------------------------------------------------------------------
# Delete block content
# --------------------------------------------------------------------------------------------

_NS = "org.apache.hudi.avro.model"


def _wrapper(name: str, value_type: Any) -> dict[str, Any]:
    return {
        "type": "record",
        "name": name,
        "namespace": _NS,
        "fields": [{"name": "value", "type": value_type}],
    }


# (wrapper record name, Arrow type of ordering_value), in union order after "null". The Avro value
# types are Hudi's (HoodieMetadata.avsc); DateWrapper, TimeMicrosWrapper and TimestampMicrosWrapper
# carry plain int/long there (or time-micros, read here as plain long: same bytes).
_ORDERING_WRAPPERS: tuple[tuple[str, Any, pa.DataType], ...] = (
    ("BooleanWrapper", "boolean", pa.bool_()),
    ("IntWrapper", "int", pa.int32()),
    ("LongWrapper", "long", pa.int64()),
    ("FloatWrapper", "float", pa.float32()),
    ("DoubleWrapper", "double", pa.float64()),
    ("BytesWrapper", "bytes", pa.binary()),
    ("StringWrapper", "string", pa.string()),
    ("DateWrapper", "int", pa.date32()),
    (
        "DecimalWrapper",
        {"type": "bytes", "logicalType": "decimal", "precision": 30, "scale": 15},
        pa.decimal128(30, 15),
    ),
    ("TimeMicrosWrapper", "long", pa.time64("us")),
    ("TimestampMicrosWrapper", "long", pa.timestamp("us", tz="UTC")),
)
_ORDERING_STORAGE: dict[str, pa.DataType] = {
    "DateWrapper": pa.int32(),
    "TimeMicrosWrapper": pa.int64(),
    "TimestampMicrosWrapper": pa.int64(),
}
_WRAPPER_BY_FULL_NAME = {f"{_NS}.{name}": (name, t) for name, _, t in _ORDERING_WRAPPERS}
_ARRAY_WRAPPER = f"{_NS}.ArrayWrapper"


def _delete_record_list_schema() -> dict[str, Any]:
    """HoodieDeleteRecordList.avsc as of Hudi 1.1, ArrayWrapper included so it can be recognized.

    Writers use the same union; branches 0-11 encode identically in Hudi 0.15, 1.0 and 1.1.
    """
    wrappers = [_wrapper(name, avro_t) for name, avro_t, _ in _ORDERING_WRAPPERS]
    local_date = _wrapper("LocalDateWrapper", "int")
    array_items = ["null", *(f"{_NS}.{name}" for name, _, _ in _ORDERING_WRAPPERS), local_date]
    array_wrapper = {
        "type": "record",
        "name": "ArrayWrapper",
        "namespace": _NS,
        "fields": [
            {
                "name": "wrappedValues",
                "type": ["null", {"type": "array", "items": array_items}],
                "default": None,
            }
        ],
    }
    return {
        "type": "record",
        "name": "HoodieDeleteRecordList",
        "namespace": _NS,
        "fields": [
            {
                "name": "deleteRecordList",
                "type": {
                    "type": "array",
                    "items": {
                        "type": "record",
                        "name": "HoodieDeleteRecord",
                        "fields": [
                            {"name": "recordKey", "type": ["null", "string"], "default": None},
                            {"name": "partitionPath", "type": ["null", "string"], "default": None},
                            {
                                "name": "orderingVal",
                                "type": ["null", *wrappers, array_wrapper],
                                "default": None,
                            },
                        ],
                    },
                },
            }
        ],
    }


_DELETE_LIST_SCHEMA = fastavro.parse_schema(_delete_record_list_schema())


def _decode_delete(raw: RawLogBlock) -> pa.Table:
    where = f"delete block at byte {raw.offset}"
    base = raw.content_offset
    cur = _Cursor(raw.content, 0, len(raw.content), where)
    version = cur.int32("content version")
    length_pos = cur.pos
    length = cur.int32("serialized length")
    if version in (1, 2):
        raise UnsupportedLogBlockError(
            f"{where}: content version {version} holds Kryo-serialized keys (older Hudi "
            "releases); only version 3 (Avro HoodieDeleteRecordList) is supported",
            base,
        )
    if version != BLOCK_CONTENT_VERSION:
        raise LogFormatError(f"{where}: unknown delete block content version {version}", base)
    if length != cur.end - cur.pos:
        raise LogFormatError(
            f"{where}: serialized length {length} but {cur.end - cur.pos} bytes follow",
            base + length_pos,
        )
    buffer = io.BytesIO(raw.content)
    buffer.seek(cur.pos)
    try:
        decoded = fastavro.schemaless_reader(
            buffer, _DELETE_LIST_SCHEMA, None, return_record_name=True
        )
    except Exception as exc:  # fastavro raises EOFError, ValueError, IndexError, ...
        raise LogFormatError(
            f"{where}: not a valid HoodieDeleteRecordList: {exc!r}", base + cur.pos
        ) from exc
    if buffer.tell() != cur.end:
        raise LogFormatError(
            f"{where}: {cur.end - buffer.tell()} bytes follow the HoodieDeleteRecordList",
            base + buffer.tell(),
        )
    assert isinstance(decoded, dict)
    records = decoded["deleteRecordList"]
    wrapper_names: set[str] = set()
    values: list[Any] = []
    for record in records:
        ordering = record["orderingVal"]
        if ordering is None:
            values.append(None)
            continue
        full_name, wrapped = ordering
        if full_name == _ARRAY_WRAPPER:
            raise UnsupportedLogBlockError(
                f"{where}: multi-field ordering values (ArrayWrapper, Hudi 1.1 multiple "
                "ordering fields) are not supported",
                base,
            )
        wrapper_names.add(full_name)
        values.append(wrapped["value"])
    if len(wrapper_names) > 1:
        raise UnsupportedLogBlockError(
            f"{where}: ordering values of several types {sorted(wrapper_names)} in one block",
            base,
        )
    if wrapper_names:
        name, arrow_type = _WRAPPER_BY_FULL_NAME[wrapper_names.pop()]
        storage = _ORDERING_STORAGE.get(name, arrow_type)
        ordering_array = pa.array(values, type=storage)
        if storage != arrow_type:
            ordering_array = ordering_array.cast(arrow_type)
    else:
        ordering_array = pa.nulls(len(values))
    return pa.Table.from_arrays(
        [
            pa.array([r["recordKey"] for r in records], type=pa.string()),
            pa.array([r["partitionPath"] for r in records], type=pa.string()),
            ordering_array,
        ],
        schema=delete_keys_schema(ordering_array.type),
    )


def _ordering_wrapper(arrow_type: pa.DataType) -> tuple[str, pa.DataType] | None:
    """(wrapper full name, type to cast to) for an ordering_value column type; None for null."""
    t = arrow_type
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_null(t):
        return None
    table: list[tuple[Any, str]] = [
        (pa.types.is_boolean, "BooleanWrapper"),
        (lambda x: pa.types.is_integer(x) and x.bit_width <= 16, "IntWrapper"),
        (lambda x: x == pa.int32(), "IntWrapper"),
        (lambda x: x in (pa.int64(), pa.uint32()), "LongWrapper"),
        (lambda x: pa.types.is_float16(x) or pa.types.is_float32(x), "FloatWrapper"),
        (pa.types.is_float64, "DoubleWrapper"),
        (lambda x: pa.types.is_binary(x) or pa.types.is_large_binary(x), "BytesWrapper"),
        (lambda x: pa.types.is_string(x) or pa.types.is_large_string(x), "StringWrapper"),
        (pa.types.is_date, "DateWrapper"),
        (pa.types.is_decimal, "DecimalWrapper"),
        (pa.types.is_time, "TimeMicrosWrapper"),
        (pa.types.is_timestamp, "TimestampMicrosWrapper"),
    ]
    for test, name in table:
        if test(t):
            target = next(at for n, _, at in _ORDERING_WRAPPERS if n == name)
            return f"{_NS}.{name}", _ORDERING_STORAGE.get(name, target)
    raise ValueError(f"ordering_value type {arrow_type} has no Hudi ordering wrapper")


def _encode_delete(block: DeleteBlock) -> bytes:
    keys = block.keys
    ordering = keys.column("ordering_value")
    wrapper = _ordering_wrapper(ordering.type)
    if wrapper is None:
        ordering_values: list[Any] = [None] * keys.num_rows
    else:
        full_name, storage = wrapper
        if pa.types.is_timestamp(ordering.type) and ordering.type.unit != "us":
            ordering = ordering.cast(pa.timestamp("us", tz=ordering.type.tz))
        if pa.types.is_time(ordering.type) and ordering.type != pa.time64("us"):
            ordering = ordering.cast(pa.time64("us"))
        if pa.types.is_date(ordering.type) and ordering.type != pa.date32():
            ordering = ordering.cast(pa.date32())
        if pa.types.is_decimal(ordering.type):
            ordering = ordering.cast(pa.decimal128(30, 15))  # tryUpcastDecimal; safe cast
        ordering_values = [
            None if v is None else (full_name, {"value": v})
            for v in ordering.cast(storage).to_pylist()
        ]
    record_keys = keys.column("record_key").cast(pa.string()).to_pylist()
    partitions = keys.column("partition_path").cast(pa.string()).to_pylist()
    delete_list = {
        "deleteRecordList": [
            {"recordKey": k, "partitionPath": p, "orderingVal": o}
            for k, p, o in zip(record_keys, partitions, ordering_values, strict=True)
        ]
    }
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, _DELETE_LIST_SCHEMA, delete_list, strict=True)
    serialized = buffer.getvalue()
    return _I32.pack(BLOCK_CONTENT_VERSION) + _I32.pack(len(serialized)) + serialized


# --------------------------------------------------------------------------------------------
# Typed blocks <-> frames
# --------------------------------------------------------------------------------------------


def _require(raw: RawLogBlock, key: HeaderKey) -> str:
    value = raw.header.get(key)
    if value is None:
        raise LogFormatError(
            f"{raw.block_type.name} block at byte {raw.offset} has no {key.name} header", raw.offset
        )
    return value


def _extra(raw: RawLogBlock, *modelled: HeaderKey) -> dict[int, str]:
    skip = {int(k) for k in modelled}
    return {k: v for k, v in raw.header.items() if k not in skip}


def decode_block(raw: RawLogBlock) -> LogBlock:
    """Decode one framed block into a typed block."""
    kind = raw.block_type
    if kind in (BlockType.AVRO_DATA, BlockType.PARQUET_DATA):
        instant = _require(raw, HeaderKey.INSTANT_TIME)
        schema = _require(raw, HeaderKey.SCHEMA)
        if kind == BlockType.AVRO_DATA:
            records, fmt = _decode_avro_records(raw, schema), "avro"
        else:
            records, fmt = _decode_parquet(raw), "parquet"
        return DataBlock(
            instant_time=instant,
            schema=schema,
            records=records,
            format=fmt,
            extra_header=_extra(raw, HeaderKey.INSTANT_TIME, HeaderKey.SCHEMA),
            footer=raw.footer,
        )
    if kind == BlockType.DELETE:
        return DeleteBlock(
            instant_time=_require(raw, HeaderKey.INSTANT_TIME),
            keys=_decode_delete(raw),
            schema=raw.header.get(HeaderKey.SCHEMA),
            extra_header=_extra(raw, HeaderKey.INSTANT_TIME, HeaderKey.SCHEMA),
            footer=raw.footer,
        )
    if kind == BlockType.COMMAND:
        command = _require(raw, HeaderKey.COMMAND_BLOCK_TYPE)
        if command != ROLLBACK_COMMAND:
            raise UnsupportedLogBlockError(
                f"command block at byte {raw.offset}: command type {command!r} "
                f"(only {ROLLBACK_COMMAND!r}, ROLLBACK_BLOCK, exists in Hudi)",
                raw.offset,
            )
        if raw.content:
            raise LogFormatError(
                f"command block at byte {raw.offset} has {len(raw.content)} content bytes; "
                "Hudi writes none",
                raw.content_offset,
            )
        return CommandBlock(
            instant_time=_require(raw, HeaderKey.INSTANT_TIME),
            target_instant_time=_require(raw, HeaderKey.TARGET_INSTANT_TIME),
            extra_header=_extra(
                raw,
                HeaderKey.INSTANT_TIME,
                HeaderKey.TARGET_INSTANT_TIME,
                HeaderKey.COMMAND_BLOCK_TYPE,
            ),
            footer=raw.footer,
        )
    if kind == BlockType.CORRUPT:
        raise LogFormatError(
            f"block at byte {raw.offset} has type CORRUPT_BLOCK, which Hudi never writes",
            raw.offset,
        )
    raise UnsupportedLogBlockError(
        f"{kind.name} block at byte {raw.offset} is not supported (only Avro/parquet data, "
        "delete and rollback command blocks are)",
        raw.offset,
    )


def read_log_blocks(data: bytes | bytearray | memoryview) -> list[LogBlock]:
    """Read a whole log file body into typed blocks, in file order.

    Raises :class:`LogFormatError` (naming the problem and its byte offset) for corrupt or
    truncated data and :class:`UnsupportedLogBlockError` for valid blocks this module does not
    decode.
    """
    if type(data) is bytes:
        known = _recently_written.get(data)
        if known is not None:
            return list(known)
    return [decode_block(raw) for raw in _iter_frames(data)]


def encode_block(block: LogBlock) -> bytes:
    """One block's bytes, ready to append to a log file."""
    if isinstance(block, DataBlock):
        if block.format == "avro":
            return _frame(
                BlockType.AVRO_DATA, block.header, _encode_avro_records(block), block.footer
            )
        return _frame(BlockType.PARQUET_DATA, block.header, _encode_parquet(block), block.footer)
    if isinstance(block, DeleteBlock):
        return _frame(BlockType.DELETE, block.header, _encode_delete(block), block.footer)
    if isinstance(block, CommandBlock):
        return _frame(BlockType.COMMAND, block.header, b"", block.footer)
    raise TypeError(f"not a log block: {block!r}")


def write_log_blocks(blocks: Sequence[LogBlock]) -> bytes:
    """A whole log file body holding ``blocks`` in order (appending is concatenation)."""
    data = b"".join(encode_block(block) for block in blocks)
    _remember_written(data, blocks)
    return data


# --------------------------------------------------------------------------------------------
# Recently written log files, decoded
# --------------------------------------------------------------------------------------------

RECENTLY_WRITTEN_FILES = 1024
"""How many freshly written log files :func:`read_log_blocks` can answer without decoding."""

_recently_written: OrderedDict[bytes, tuple[LogBlock, ...]] = OrderedDict()
_ROUND_TRIP_TYPES = (pa.string(), pa.int32(), pa.int64(), pa.bool_(), pa.float64())


def _remember_written(data: bytes, blocks: Sequence[LogBlock]) -> None:
    """Keep the blocks of a log file just written, as :func:`read_log_blocks` would decode them.

    A simulated writer appends a log file and a compaction reads it back a few commits later;
    decoding the parquet again costs as much as writing it. Only parquet data blocks of plain
    columns (strings, 32/64-bit integers, booleans, doubles; no schema metadata) are kept: for them
    parquet round-trips exactly, so the kept blocks equal what decoding ``data`` returns (same
    values, types, nullability, one chunk per column). Keys are the bytes themselves, so a hit is
    a file with exactly these bytes, whoever stored or re-read it.
    """
    kept = []
    for block in blocks:
        if not isinstance(block, DataBlock) or block.format != "parquet":
            return
        schema = block.records.schema
        if schema.metadata or any(f.type not in _ROUND_TRIP_TYPES for f in schema):
            return
        kept.append(replace(block, records=block.records.combine_chunks()))
    _recently_written[data] = tuple(kept)
    while len(_recently_written) > RECENTLY_WRITTEN_FILES:
        _recently_written.popitem(last=False)
