"""Writing log files: typed blocks framed into the bytes a writer appends.

Follows ``HoodieLogFormatWriter.appendBlocks`` (the layout is in :mod:`models.format.log_format`):
header and footer keys in ascending order, the content encoded by
:mod:`models.format.log_data_block` and :mod:`models.format.log_delete_block`. Appending is
concatenation, so a whole file body is the blocks' bytes one after the other.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from models.format.log_blocks import CommandBlock, DataBlock, DeleteBlock, LogBlock
from models.format.log_data_block import encode_avro_records, encode_parquet
from models.format.log_delete_block import encode_delete
from models.format.log_format import INT32, INT64, LOG_FORMAT_VERSION, MAGIC, BlockType
from models.format.recent_log_files import remember_written


def _metadata_bytes(entries: Mapping[int, str]) -> bytes:
    parts = [INT32.pack(len(entries))]
    for key in sorted(entries):
        raw = entries[key].encode("utf-8")
        parts += [INT32.pack(int(key)), INT32.pack(len(raw)), raw]
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
            INT64.pack(block_length),
            INT32.pack(LOG_FORMAT_VERSION),
            INT32.pack(int(block_type)),
            header_bytes,
            INT64.pack(len(content)),
            content,
            footer_bytes,
            INT64.pack(block_length + len(MAGIC)),
        )
    )


def encode_block(block: LogBlock) -> bytes:
    """One block's bytes, ready to append to a log file."""
    if isinstance(block, DataBlock):
        if block.format == "avro":
            return _frame(
                BlockType.AVRO_DATA, block.header, encode_avro_records(block), block.footer
            )
        return _frame(BlockType.PARQUET_DATA, block.header, encode_parquet(block), block.footer)
    if isinstance(block, DeleteBlock):
        return _frame(BlockType.DELETE, block.header, encode_delete(block), block.footer)
    if isinstance(block, CommandBlock):
        return _frame(BlockType.COMMAND, block.header, b"", block.footer)
    raise TypeError(f"not a log block: {block!r}")


def write_log_blocks(blocks: Sequence[LogBlock]) -> bytes:
    """A whole log file body holding ``blocks`` in order (appending is concatenation)."""
    data = b"".join(encode_block(block) for block in blocks)
    remember_written(data, blocks)
    return data
