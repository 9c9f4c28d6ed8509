"""Hudi log files: the block format of merge-on-read delta files (table versions 6, 8 and 9).

A log file (``.<fileId>_<instant>.log.<version>_<writeToken>``, docs/protocol.md section 3) is a
sequence of blocks; a writer only ever appends whole blocks. This module holds the
framing every block shares (``HoodieLogFormat``): the magic, the versions, the block types, the
header keys, the errors and bounds-checked reads; the typed blocks are in :mod:`models.format.log_blocks`,
reading in :mod:`models.format.log_reader`, writing in :mod:`models.format.log_writer`.

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

Block types (ordinal of ``HoodieLogBlock.HoodieLogBlockType``; note 2 is
CORRUPT_BLOCK, not the command block, which is 0); their content is encoded by
:mod:`models.format.log_data_block` (Avro and parquet data blocks) and
:mod:`models.format.log_delete_block` (delete blocks).

Header keys (``HeaderMetadataType`` ordinals): 0 INSTANT_TIME, 1 TARGET_INSTANT_TIME, 2 SCHEMA,
3 COMMAND_BLOCK_TYPE, 4 COMPACTED_BLOCK_TIMES, 5 RECORD_POSITIONS, 6 BLOCK_IDENTIFIER,
7 IS_PARTIAL, 8 BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS. Keys a typed block does not model are
kept in its ``extra_header`` so a rewrite loses nothing. Hudi writes the header from a Java
``HashMap``, so the on-disk entry order varies between files (both ``0,2`` and ``2,0`` occur in the
fixtures); this writer emits keys in ascending order.
"""

from __future__ import annotations

import struct
from enum import IntEnum

from models.table_errors import HoodieException

MAGIC = b"#HUDI#"
LOG_FORMAT_VERSION = 1
# HoodieLogBlock.version: the content version of Avro data and delete blocks Hudi writes.
BLOCK_CONTENT_VERSION = 3
ROLLBACK_COMMAND = "0"  # HoodieCommandBlock.HoodieCommandBlockTypeEnum.ROLLBACK_BLOCK ordinal

INT32 = struct.Struct(">i")
INT64 = struct.Struct(">q")
# version, type, header count, content length, footer count, trailer
MIN_BLOCK_LENGTH = 4 + 4 + 4 + 8 + 4 + 8


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


class LogFormatError(HoodieException, ValueError):
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


class Cursor:
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
        (value,) = INT32.unpack_from(self.data, self.pos)
        self.pos += 4
        return int(value)

    def int64(self, what: str) -> int:
        self._need(8, what)
        (value,) = INT64.unpack_from(self.data, self.pos)
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
