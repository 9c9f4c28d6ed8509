"""Recently written log files, kept decoded so that reading them back costs nothing.

A simulated writer appends a log file and a compaction reads it back a few commits later;
decoding the parquet again costs as much as writing it. :mod:`models.format.log_writer` remembers
what it wrote and :mod:`models.format.log_reader` answers from here when the bytes match exactly.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import replace

import pyarrow as pa

from models.format.log_blocks import DataBlock, LogBlock

RECENTLY_WRITTEN_FILES = 1024
"""How many freshly written log files :func:`models.format.log_reader.read_log_blocks` can answer without decoding."""

_recently_written: OrderedDict[bytes, tuple[LogBlock, ...]] = OrderedDict()
_ROUND_TRIP_TYPES = (pa.string(), pa.int32(), pa.int64(), pa.bool_(), pa.float64())


def remember_written(data: bytes, blocks: Sequence[LogBlock]) -> None:
    """Keep the blocks of a log file just written, as :func:`models.format.log_reader.read_log_blocks` would decode them.

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


def recently_written(data: bytes | bytearray | memoryview) -> list[LogBlock] | None:
    """The blocks of ``data`` if exactly these bytes were written lately, else None."""
    if type(data) is bytes:
        known = _recently_written.get(data)
        if known is not None:
            return list(known)
    return None
