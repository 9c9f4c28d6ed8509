"""Avro <-> Arrow mapping for the records inside Hudi log blocks.

Hudi stores a data block's writer schema as an Avro schema string in the block header (header key
``SCHEMA``) and, for Avro data blocks, the records as Avro binary (``HoodieAvroDataBlock``). The rest
of the testbed works with ``pyarrow`` tables, so this module owns the one place where the two type
systems meet:

* :func:`arrow_schema_for` maps an Avro record schema to an Arrow schema (what readers get);
* :func:`avro_schema_for` derives an Avro schema from an Arrow schema (what writers put in the
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

Type mapping (Avro -> Arrow): ``null`` -> null, ``boolean`` -> bool, ``int`` -> int32, ``long`` ->
int64, ``float`` -> float32, ``double`` -> float64, ``bytes`` -> binary, ``string``/``enum`` ->
string, ``fixed`` -> fixed_size_binary, ``record`` -> struct, ``array`` -> list (item field
``element``, as parquet-avro names it), ``map`` -> map<string, V>, ``["null", T]`` -> nullable T,
``date`` -> date32, ``time-millis`` -> time32[ms], ``time-micros`` -> time64[us],
``timestamp-millis|micros|nanos`` -> timestamp[ms|us|ns, tz=UTC],
``local-timestamp-millis|micros|nanos`` -> timestamp without zone, ``decimal`` -> decimal128 (or
decimal256 above precision 38), ``uuid`` -> string. Unions of two or more non-null branches have no
faithful Arrow counterpart used by Hudi and are rejected.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import fastavro
import pyarrow as pa

__all__ = [
    "AvroArrowCodec",
    "AvroArrowError",
    "arrow_schema_for",
    "avro_schema_for",
    "codec_for",
]

# A parsed Avro schema node in its JSON form.
AvroNode = str | Mapping[str, Any] | Sequence[Any]

_PRIMITIVES: dict[str, pa.DataType] = {
    "null": pa.null(),
    "boolean": pa.bool_(),
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "bytes": pa.binary(),
    "string": pa.string(),
}

# Logical types over int/long whose values fastavro would turn into Python objects. They are
# stripped from the schema given to fastavro; the value is (base type, logical Arrow type).
_INT_LOGICAL: dict[str, tuple[str, pa.DataType]] = {
    "date": ("int", pa.date32()),
    "time-millis": ("int", pa.time32("ms")),
    "time-micros": ("long", pa.time64("us")),
    "timestamp-millis": ("long", pa.timestamp("ms", tz="UTC")),
    "timestamp-micros": ("long", pa.timestamp("us", tz="UTC")),
    "timestamp-nanos": ("long", pa.timestamp("ns", tz="UTC")),
    "local-timestamp-millis": ("long", pa.timestamp("ms")),
    "local-timestamp-micros": ("long", pa.timestamp("us")),
    "local-timestamp-nanos": ("long", pa.timestamp("ns")),
}

_NAMED = ("record", "enum", "fixed")
# Hudi's meta columns; HoodieAvroUtils.addMetadataFields gives them an empty "doc".
_META_FIELDS = frozenset(
    (
        "_hoodie_commit_time",
        "_hoodie_commit_seqno",
        "_hoodie_record_key",
        "_hoodie_partition_path",
        "_hoodie_file_name",
        "_hoodie_operation",
    )
)
_ITEM_FIELD = "element"


class AvroArrowError(ValueError):
    """An Avro schema, Arrow schema or value that has no faithful mapping to the other side."""


@dataclass(frozen=True)
class _Mapped:
    """One Avro node mapped to Arrow: the logical type, its storage type, and fastavro's schema."""

    logical: pa.DataType
    storage: pa.DataType
    nullable: bool
    plain: Any  # the node as given to fastavro (non-decimal logical types removed)


class _AvroToArrow:
    """Walks an Avro schema once, resolving named-type references the way Avro's parser does."""

    def __init__(self) -> None:
        self._named: dict[str, _Mapped] = {}
        self._defining: set[str] = set()

    @staticmethod
    def _full_name(node: Mapping[str, Any], namespace: str) -> tuple[str, str]:
        """Return (full name, namespace for children) of a named type definition."""
        name = str(node["name"])
        if "." in name:
            return name, name.rsplit(".", 1)[0]
        own = node.get("namespace", namespace) or ""
        return (f"{own}.{name}" if own else name), own

    def map(self, node: AvroNode, namespace: str) -> _Mapped:
        if isinstance(node, str):
            return self._map_name(node, namespace)
        if isinstance(node, Sequence):
            return self._map_union(node, namespace)
        if not isinstance(node, Mapping) or "type" not in node:
            raise AvroArrowError(f"not an Avro schema node: {node!r}")
        kind = node["type"]
        if not isinstance(kind, str):
            # {"type": {...}} or {"type": [...]}: a wrapper around another node.
            return self.map(kind, namespace)
        logical = node.get("logicalType")
        if kind in _PRIMITIVES:
            return self._map_primitive(kind, logical, node)
        if kind == "array":
            item = self.map(node["items"], namespace)
            field_l = pa.field(_ITEM_FIELD, item.logical, item.nullable)
            field_s = pa.field(_ITEM_FIELD, item.storage, item.nullable)
            plain = {"type": "array", "items": item.plain}
            return _Mapped(pa.list_(field_l), pa.list_(field_s), False, plain)
        if kind == "map":
            value = self.map(node["values"], namespace)
            logical_t = pa.map_(pa.string(), pa.field("value", value.logical, value.nullable))
            storage_t = pa.map_(pa.string(), pa.field("value", value.storage, value.nullable))
            return _Mapped(logical_t, storage_t, False, {"type": "map", "values": value.plain})
        if kind in _NAMED:
            return self._map_named(kind, node, namespace)
        return self._map_name(kind, namespace)

    def _map_primitive(self, kind: str, logical: Any, node: Mapping[str, Any]) -> _Mapped:
        if logical in _INT_LOGICAL and _INT_LOGICAL[logical][0] == kind:
            return _Mapped(_INT_LOGICAL[logical][1], _PRIMITIVES[kind], False, kind)
        if logical == "decimal" and kind == "bytes":
            decimal_t = _decimal_type(node)
            if decimal_t is not None:
                return _Mapped(decimal_t, decimal_t, False, dict(node))
        # Unknown or misplaced logical types fall back to the underlying type (Avro spec 1.11).
        return _Mapped(_PRIMITIVES[kind], _PRIMITIVES[kind], False, kind)

    def _map_named(self, kind: str, node: Mapping[str, Any], namespace: str) -> _Mapped:
        full, child_ns = self._full_name(node, namespace)
        plain: dict[str, Any] = {"type": kind, "name": full}
        if kind == "fixed":
            size = int(node["size"])
            plain["size"] = size
            decimal_t = _decimal_type(node) if node.get("logicalType") == "decimal" else None
            if decimal_t is not None:
                plain.update(
                    logicalType="decimal", precision=node["precision"], scale=node.get("scale", 0)
                )
                mapped = _Mapped(decimal_t, decimal_t, False, plain)
            else:
                mapped = _Mapped(pa.binary(size), pa.binary(size), False, plain)
        elif kind == "enum":
            plain["symbols"] = list(node["symbols"])
            mapped = _Mapped(pa.string(), pa.string(), False, plain)
        else:
            self._defining.add(full)
            logical_fields: list[pa.Field] = []
            storage_fields: list[pa.Field] = []
            plain_fields: list[dict[str, Any]] = []
            for f in node.get("fields", []):
                m = self.map(f["type"], child_ns)
                logical_fields.append(pa.field(f["name"], m.logical, m.nullable))
                storage_fields.append(pa.field(f["name"], m.storage, m.nullable))
                plain_field = {"name": f["name"], "type": m.plain}
                if "default" in f:
                    plain_field["default"] = f["default"]
                plain_fields.append(plain_field)
            self._defining.discard(full)
            plain["fields"] = plain_fields
            mapped = _Mapped(pa.struct(logical_fields), pa.struct(storage_fields), False, plain)
        self._named[full] = mapped
        return mapped

    def _map_name(self, name: str, namespace: str) -> _Mapped:
        if name in _PRIMITIVES:
            return _Mapped(_PRIMITIVES[name], _PRIMITIVES[name], False, name)
        candidates = [name] if "." in name else [f"{namespace}.{name}" if namespace else name, name]
        for full in candidates:
            if full in self._defining:
                raise AvroArrowError(f"recursive Avro type {full!r} cannot be mapped to Arrow")
            if full in self._named:
                # A reference: fastavro resolves it by full name from the earlier definition.
                m = self._named[full]
                return _Mapped(m.logical, m.storage, False, full)
        raise AvroArrowError(f"unknown Avro type {name!r}")

    def _map_union(self, branches: Sequence[Any], namespace: str) -> _Mapped:
        mapped = [self.map(b, namespace) for b in branches]
        has_null = any(pa.types.is_null(m.logical) for m in mapped)
        values = [m for m in mapped if not pa.types.is_null(m.logical)]
        plain = [m.plain for m in mapped]
        if not values:
            return _Mapped(pa.null(), pa.null(), True, plain)
        if len(values) > 1:
            raise AvroArrowError(
                f"Avro union with {len(values)} non-null branches has no Arrow mapping: {branches!r}"
            )
        return _Mapped(values[0].logical, values[0].storage, has_null, plain)


def _decimal_type(node: Mapping[str, Any]) -> pa.DataType | None:
    """Arrow decimal for an Avro decimal node, or None when the annotation is invalid."""
    try:
        precision = int(node["precision"])
        scale = int(node.get("scale", 0))
    except (KeyError, TypeError, ValueError):
        return None
    if precision <= 0 or scale < 0 or scale > precision:
        return None
    if precision <= 38:
        return pa.decimal128(precision, scale)
    return pa.decimal256(precision, scale)


def _load(avro_schema: str | Mapping[str, Any]) -> Mapping[str, Any]:
    if isinstance(avro_schema, str):
        try:
            node = json.loads(avro_schema)
        except json.JSONDecodeError as exc:
            raise AvroArrowError(f"Avro schema is not valid JSON: {exc}") from exc
    else:
        node = avro_schema
    if not isinstance(node, Mapping) or node.get("type") != "record":
        raise AvroArrowError("a data block's Avro schema must be a record schema")
    return node


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
        node = _load(avro_schema)
        walker = _AvroToArrow()
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


# --------------------------------------------------------------------------------------------
# Arrow -> Avro schema
# --------------------------------------------------------------------------------------------


def _min_bytes_for_precision(precision: int) -> int:
    """Smallest fixed size holding any unscaled value of ``precision`` digits (Spark's rule)."""
    size = 1
    while 2 ** (8 * size - 1) < 10**precision:
        size += 1
    return size


def _avro_type(arrow_type: pa.DataType, field_name: str, namespace: str) -> Any:
    """Avro type (JSON) for a non-nullable value of ``arrow_type``.

    ``namespace`` is the full name of the enclosing record; nested named types are placed in it
    (records named after their field, decimal fixed types named ``fixed`` in
    ``<record>.<field>``), as Spark's ``SchemaConverters.toAvroType`` does for Hudi.
    """
    t = arrow_type
    if pa.types.is_dictionary(t):
        return _avro_type(t.value_type, field_name, namespace)
    if pa.types.is_null(t):
        return "null"
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_int32(t):
        return "int"
    if pa.types.is_uint8(t) or pa.types.is_uint16(t):
        return "int"
    if pa.types.is_int64(t) or pa.types.is_uint32(t):
        return "long"
    if pa.types.is_float16(t) or pa.types.is_float32(t):
        return "float"
    if pa.types.is_float64(t):
        return "double"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "bytes"
    if pa.types.is_fixed_size_binary(t):
        return {"type": "fixed", "name": field_name, "namespace": namespace, "size": t.byte_width}
    if pa.types.is_decimal(t):
        return {
            "type": "fixed",
            "name": "fixed",
            "namespace": f"{namespace}.{field_name}",
            "size": _min_bytes_for_precision(t.precision),
            "logicalType": "decimal",
            "precision": t.precision,
            "scale": t.scale,
        }
    if pa.types.is_date(t):
        return {"type": "int", "logicalType": "date"}
    if pa.types.is_timestamp(t):
        if t.unit == "ns":
            raise AvroArrowError(
                f"column {field_name!r}: nanosecond timestamps have no Avro type Hudi reads; "
                "cast to microseconds first"
            )
        unit = "millis" if t.unit in ("s", "ms") else "micros"
        prefix = "timestamp" if t.tz is not None else "local-timestamp"
        return {"type": "long", "logicalType": f"{prefix}-{unit}"}
    if pa.types.is_time32(t):
        return {"type": "int", "logicalType": "time-millis"}
    if pa.types.is_time64(t):
        if t.unit == "ns":
            raise AvroArrowError(f"column {field_name!r}: nanosecond times have no Avro type")
        return {"type": "long", "logicalType": "time-micros"}
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        item = t.value_field
        return {"type": "array", "items": _avro_field_type(item, field_name, namespace)}
    if pa.types.is_map(t):
        if not pa.types.is_string(t.key_type):
            raise AvroArrowError(f"column {field_name!r}: Avro maps need string keys, got {t}")
        return {"type": "map", "values": _avro_field_type(t.item_field, field_name, namespace)}
    if pa.types.is_struct(t):
        full = f"{namespace}.{field_name}" if namespace else field_name
        return {
            "type": "record",
            "name": field_name,
            "namespace": namespace,
            "fields": [_avro_field(f, full) for f in t],
        }
    raise AvroArrowError(f"column {field_name!r}: Arrow type {t} has no Avro mapping")


def _avro_field_type(field: pa.Field, name_for_nested: str, namespace: str) -> Any:
    avro_t = _avro_type(field.type, name_for_nested, namespace)
    if field.nullable and avro_t != "null":
        return ["null", avro_t]
    return avro_t


def _avro_field(field: pa.Field, namespace: str) -> dict[str, Any]:
    avro_t = _avro_field_type(field, field.name, namespace)
    out: dict[str, Any] = {"name": field.name, "type": avro_t}
    if field.name in _META_FIELDS:
        out["doc"] = ""
    if isinstance(avro_t, list) or avro_t == "null":
        out["default"] = None
    return out


def avro_schema_for(arrow_schema: pa.Schema, name: str, namespace: str) -> str:
    """An Avro record schema (JSON string) for tables of ``arrow_schema``.

    Hudi names a table's record ``<table>_record`` in namespace ``hoodie.<table>``; pass those to
    get a schema like the ones Hudi writes. Nullable fields become ``["null", T]`` with default
    ``null``. The result maps back to ``arrow_schema`` through :func:`arrow_schema_for`, except
    that narrower types widen (int8/16 -> int32, date64 -> date32, second timestamps -> ms, ...).

    Memoized: every log block a writer appends carries its schema, and a run writes thousands of
    blocks with one schema (the result depends only on names, types and nullability, which Arrow
    schema equality compares).
    """
    return _avro_schema_for(arrow_schema, name, namespace)


@lru_cache(maxsize=256)
def _avro_schema_for(arrow_schema: pa.Schema, name: str, namespace: str) -> str:
    full = f"{namespace}.{name}" if namespace else name
    schema = {
        "type": "record",
        "name": name,
        "namespace": namespace,
        "fields": [_avro_field(f, full) for f in arrow_schema],
    }
    if not namespace:
        del schema["namespace"]
    return json.dumps(schema, separators=(",", ":"))
