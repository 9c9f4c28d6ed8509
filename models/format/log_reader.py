"""Reading log files: splitting a body into framed blocks and decoding them into typed blocks.

Follows ``HoodieLogFileReader`` (``readBlock``, ``isBlockCorrupted``,
``scanForNextAvailableBlockOffset``); the layout is in :mod:`models.format.log_format`.

HFILE_DATA_BLOCK (4, metadata table), CDC_DATA_BLOCK (6): recognized, refused with
:class:`UnsupportedLogBlockError`; :func:`read_log_frames` still lists them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from types import MappingProxyType

from models.format.log_blocks import CommandBlock, DataBlock, DeleteBlock, LogBlock, RawLogBlock
from models.format.log_data_block import decode_avro_records, decode_parquet
from models.format.log_delete_block import decode_delete
from models.format.log_format import (
    INT64,
    LOG_FORMAT_VERSION,
    MAGIC,
    MIN_BLOCK_LENGTH,
    ROLLBACK_COMMAND,
    BlockType,
    Cursor,
    HeaderKey,
    LogFormatError,
    UnsupportedLogBlockError,
)
from models.format.recent_log_files import recently_written


def _iter_frames(data: bytes | memoryview) -> Iterator[RawLogBlock]:
    """The blocks of ``data`` in file order; :class:`LogFormatError` at the first malformed one."""
    view = memoryview(data)
    total = len(view)
    offset = 0
    index = 0
    while offset < total:
        where = f"block {index}"
        body_start, end = _block_extent(view, offset, total, where)
        yield _parse_block(view, offset, body_start, end, where)
        offset = end
        index += 1


def _block_extent(view: memoryview, offset: int, total: int, where: str) -> tuple[int, int]:
    """(start of the body after the length field, end of the block) of the block at ``offset``,
    after checking its magic, its length and its trailer."""
    if total - offset < len(MAGIC):
        raise LogFormatError(
            f"{where}: {total - offset} trailing bytes are too short for a block", offset
        )
    magic = bytes(view[offset : offset + len(MAGIC)])
    if magic != MAGIC:
        raise LogFormatError(f"{where}: expected magic {MAGIC!r}, found {magic!r}", offset)
    head = Cursor(view, offset + len(MAGIC), total, where)
    block_length = head.int64("block length")
    body_start = head.pos
    if block_length < MIN_BLOCK_LENGTH:
        raise LogFormatError(
            f"{where}: block length {block_length} is below the minimum {MIN_BLOCK_LENGTH}",
            offset + len(MAGIC),
        )
    end = body_start + block_length
    if end > total:
        raise LogFormatError(
            f"{where}: block length {block_length} runs past the end of the data "
            f"({total - body_start} bytes follow the length field; truncated block?)",
            offset + len(MAGIC),
        )
    (trailer,) = INT64.unpack_from(view, end - 8)
    if trailer != block_length + len(MAGIC):
        raise LogFormatError(
            f"{where}: trailer says the block has {trailer} bytes before it, expected "
            f"{block_length + len(MAGIC)} (block length + 6)",
            end - 8,
        )
    return body_start, end


def _parse_block(
    view: memoryview, offset: int, body_start: int, end: int, where: str
) -> RawLogBlock:
    """The fields between the length field and the trailer of the block at ``offset``."""
    cur = Cursor(view, body_start, end - 8, where)
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
    return RawLogBlock(
        offset=offset,
        block_type=block_type,
        header=MappingProxyType(header),
        content=content,
        footer=MappingProxyType(footer),
        content_offset=content_offset,
        format_version=version,
    )


def _intact_block_end(view: memoryview, offset: int, total: int) -> int | None:
    """End of the block whose magic starts at ``offset`` if its framing is intact as Hudi's
    ``HoodieLogFileReader.isBlockCorrupted`` judges it, else None (a corrupt block): the length is
    readable and at least the smallest block, the block ends within the file, its trailer says
    ``length + 6``, and the next magic or the end of the file (fewer than 6 bytes) follows."""
    start = offset + len(MAGIC)
    if total - start < INT64.size:
        return None
    (block_length,) = INT64.unpack_from(view, start)
    end = start + INT64.size + block_length
    if block_length < MIN_BLOCK_LENGTH or end > total:
        return None
    (trailer,) = INT64.unpack_from(view, end - INT64.size)
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
    known = recently_written(data)
    if known is not None:
        return known
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
            offset = _next_magic(view, offset + len(MAGIC) + INT64.size, total)
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
        return _decode_data_block(raw)
    if kind == BlockType.DELETE:
        return DeleteBlock(
            instant_time=_require(raw, HeaderKey.INSTANT_TIME),
            keys=decode_delete(raw),
            schema=raw.header.get(HeaderKey.SCHEMA),
            extra_header=_extra(raw, HeaderKey.INSTANT_TIME, HeaderKey.SCHEMA),
            footer=raw.footer,
        )
    if kind == BlockType.COMMAND:
        return _decode_command_block(raw)
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


def _decode_data_block(raw: RawLogBlock) -> DataBlock:
    instant = _require(raw, HeaderKey.INSTANT_TIME)
    schema = _require(raw, HeaderKey.SCHEMA)
    if raw.block_type == BlockType.AVRO_DATA:
        records, fmt = decode_avro_records(raw, schema), "avro"
    else:
        records, fmt = decode_parquet(raw), "parquet"
    return DataBlock(
        instant_time=instant,
        schema=schema,
        records=records,
        format=fmt,
        extra_header=_extra(raw, HeaderKey.INSTANT_TIME, HeaderKey.SCHEMA),
        footer=raw.footer,
    )


def _decode_command_block(raw: RawLogBlock) -> CommandBlock:
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


def read_log_blocks(data: bytes | bytearray | memoryview) -> list[LogBlock]:
    """Read a whole log file body into typed blocks, in file order.

    Raises :class:`LogFormatError` (naming the problem and its byte offset) for corrupt or
    truncated data and :class:`UnsupportedLogBlockError` for valid blocks this module does not
    decode.
    """
    known = recently_written(data)
    if known is not None:
        return known
    return [decode_block(raw) for raw in _iter_frames(data)]
