"""Avro <-> Arrow mapping for the records inside Hudi log blocks.

Hudi stores a data block's writer schema as an Avro schema string in the block header (header key
``SCHEMA``) and, for Avro data blocks, the records as Avro binary (``HoodieAvroDataBlock``). The rest
of the testbed works with ``pyarrow`` tables, so the one place where the two type systems meet is
here and in two helpers:

* :func:`arrow_schema_for` maps an Avro record schema to an Arrow schema (what readers get,
  walked by :mod:`models.format.avro_to_arrow`);
* :func:`models.format.arrow_to_avro.avro_schema_for` derives an Avro schema from an Arrow schema (what writers put in the
  header), following the naming conventions Spark's ``SchemaConverters`` uses when Hudi writes from
  Spark (nullable -> ``["null", T]`` with default ``null``, nested records named after their field in
  the parent record's namespace, decimals as ``fixed`` named ``fixed``), which is what the fixture
  tables written by Hudi 0.15/1.x contain;
* :class:`AvroArrowCodec` turns decoded Avro records into a table in one ``from_pylist`` call and a
  table back into records for ``fastavro`` to encode.

Why a "storage" schema: ``fastavro`` converts logical types to Python objects (``datetime``,
``date``, ``UUID``), which is slow, lossy at the edges (year > 9999, time zones) and sometimes not
accepted by Arrow (``UUID``). The codec therefore hands ``fastavro`` a copy of the schema with every
logical type except ``decimal`` removed, so dates and times come out as plain ``int``/``long``; Arrow
builds the columns with those integer storage types and a single vectorized ``cast`` turns them into
``date32``/``time``/``timestamp`` columns. Writing does the inverse cast. Decimals keep their logical
type (``fastavro`` handles the two's-complement bytes / fixed encoding).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import Any

import fastavro
import pyarrow as pa

from models.format.avro_to_arrow import AvroArrowError, AvroToArrow, load_schema


def arrow_schema_for(avro_schema: str | Mapping[str, Any]) -> pa.Schema:
    """The Arrow schema of the records written with Avro record schema ``avro_schema``."""
    return codec_for(
        avro_schema if isinstance(avro_schema, str) else json.dumps(avro_schema)
    ).schema


class AvroArrowCodec:
    """A compiled Avro record schema: converts between decoded Avro records and Arrow tables.

    Build it with :func:`codec_for` (cached per schema string, since every block of a log file
    usually carries the same schema).
    """

    def __init__(self, avro_schema: str | Mapping[str, Any]) -> None:
        node = load_schema(avro_schema)
        walker = AvroToArrow()
        try:
            mapped = walker.map(node, "")
        except (KeyError, TypeError, ValueError, pa.ArrowException) as exc:
            if isinstance(exc, AvroArrowError):
                raise
            raise AvroArrowError(f"malformed Avro schema: {exc!r}") from exc
        if not isinstance(mapped.logical, pa.StructType):
            raise AvroArrowError("a data block's Avro schema must be a record schema")
        self.schema: pa.Schema = pa.schema(list(mapped.logical))
        self.storage_schema: pa.Schema = pa.schema(list(mapped.storage))
        # fastavro's schema: the same wire format, only non-decimal logical types removed.
        try:
            self.parsed_schema: Any = fastavro.parse_schema(mapped.plain)
        except Exception as exc:  # fastavro raises SchemaParseException, UnknownType, ...
            raise AvroArrowError(f"invalid Avro schema: {exc}") from exc
        self._needs_cast = not self.schema.equals(self.storage_schema)
        self._to_avro = [_avro_value_fixer(f.type) for f in self.storage_schema]

    def to_table(self, records: Sequence[Mapping[str, Any]]) -> pa.Table:
        """Build the Arrow table of ``records`` (as decoded by fastavro with :attr:`parsed_schema`)."""
        try:
            table = pa.Table.from_pylist(list(records), schema=self.storage_schema)
            return table.cast(self.schema) if self._needs_cast else table
        except (pa.ArrowException, TypeError, ValueError, OverflowError) as exc:
            raise AvroArrowError(f"Avro records do not fit their Arrow schema: {exc}") from exc

    def to_records(self, table: pa.Table) -> list[dict[str, Any]]:
        """Turn ``table`` into records fastavro can encode with :attr:`parsed_schema`.

        Columns are matched by name; a column missing from ``table`` is filled with nulls when the
        Avro field is nullable. Values are cast to the schema's types with overflow checks, so an
        int64 column written to an Avro ``int`` field fails loudly instead of wrapping.
        """
        names = set(table.column_names)
        extra = names - set(self.schema.names)
        if extra:
            raise AvroArrowError(f"columns not in the Avro schema: {sorted(extra)}")
        columns: list[pa.ChunkedArray | pa.Array] = []
        for field in self.schema:
            if field.name in names:
                columns.append(table.column(field.name))
            elif field.nullable:
                columns.append(pa.nulls(table.num_rows, field.type))
            else:
                raise AvroArrowError(f"non-nullable Avro field {field.name!r} has no column")
        try:
            aligned = pa.Table.from_arrays(columns, schema=self.schema)
        except (pa.ArrowException, TypeError, ValueError):
            try:
                aligned = pa.table(
                    {f.name: c for f, c in zip(self.schema, columns, strict=True)}
                ).cast(self.schema)
            except (pa.ArrowException, TypeError, ValueError) as exc:
                raise AvroArrowError(f"table does not fit the Avro schema: {exc}") from exc
        storage = aligned.cast(self.storage_schema) if self._needs_cast else aligned
        records = storage.to_pylist()
        fixes = [(f.name, fix) for f, fix in zip(self.storage_schema, self._to_avro, strict=True)]
        fixes = [(name, fix) for name, fix in fixes if fix is not None]
        for record in records:
            for name, fix in fixes:
                record[name] = fix(record[name])
        return records


@lru_cache(maxsize=64)
def codec_for(avro_schema: str) -> AvroArrowCodec:
    """The (cached) codec for an Avro record schema string."""
    return AvroArrowCodec(avro_schema)


def _avro_value_fixer(arrow_type: pa.DataType) -> Callable[[Any], Any] | None:
    """A function that turns ``to_pylist`` output into what fastavro expects, or None if equal.

    Only maps differ: Arrow yields a list of (key, value) pairs, fastavro wants a dict.
    """
    if pa.types.is_map(arrow_type):
        value_fix = _avro_value_fixer(arrow_type.item_type)

        def fix_map(value: Any) -> Any:
            if value is None:
                return None
            if value_fix is None:
                return dict(value)
            return {k: value_fix(v) for k, v in value}

        return fix_map
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        item_fix = _avro_value_fixer(arrow_type.value_type)
        if item_fix is None:
            return None
        return lambda value: None if value is None else [item_fix(v) for v in value]
    if pa.types.is_struct(arrow_type):
        child_fixes = [(f.name, _avro_value_fixer(f.type)) for f in arrow_type]
        child_fixes = [(name, fix) for name, fix in child_fixes if fix is not None]
        if not child_fixes:
            return None

        def fix_struct(value: Any) -> Any:
            if value is None:
                return None
            for name, fix in child_fixes:
                value[name] = fix(value[name])
            return value

        return fix_struct
    return None
