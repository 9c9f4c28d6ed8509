"""Typed log blocks: data, delete and rollback command blocks, and a framed block not yet decoded.

What ``HoodieDataBlock``, ``HoodieDeleteBlock`` and ``HoodieCommandBlock`` carry in their headers
(the log format is in :mod:`models.format.log_format`). The rollback command block:

COMMAND_BLOCK (0), ``HoodieCommandBlock``: empty content; header COMMAND_BLOCK_TYPE = "0"
(ROLLBACK_BLOCK, the only command) and TARGET_INSTANT_TIME = the instant whose blocks it
rolls back; INSTANT_TIME is the rollback's own instant (hudi-rs fixture ``valid_log_rollback``).
Readers drop the blocks whose INSTANT_TIME equals the target: Hudi's log record reader
(``scanInternalV1``: ``removeIf`` over the blocks read so far, across the slice's log files;
``scanInternalV2``: every block of the target instant; 0.x releases only popped the immediately
preceding blocks), and hudi-rs ``LogFileScanner`` (every block of the slice, whatever the
command block's own instant). Table version 8+ rolls back by deleting the failed instant's log
files instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

import pyarrow as pa

from models.format.log_format import LOG_FORMAT_VERSION, ROLLBACK_COMMAND, BlockType, HeaderKey


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
